// Package audittest runs one fixed sequence of grantwire operations on the in-memory host
// (internal/testworld/memhost) that reaches most operations and outcomes, with distinctive secrets
// planted everywhere a secret can enter. The decision-log, replay and OPA-parity tests
// share it. It is test support: only _test files import it. It imports the root package,
// catalog, hostabi, memhost, layout and memshell (which serves the catalog's endpoints).
package audittest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/mcp"
)

// Start is the simulated clock's start.
var Start = time.Unix(1_790_000_000, 0)

// Planted secrets: each is distinctive, so finding one anywhere is a leak.
const (
	ClientID       = "cid-PLANTED-7c1d0f"
	ClientSecret   = "csecret-PLANTED-91aa3e"
	ClientID2      = "cid-PLANTED-rotated-55e2"
	ClientSecret2  = "csecret-PLANTED-rotated-c0ffee"
	RefreshToken   = "rt-PLANTED-first-3b9f"
	AccessToken    = "at-PLANTED-first-d41d"
	RefreshToken2  = "rt-PLANTED-rotated-8e77"
	AccessToken2   = "at-PLANTED-rotated-5a5a"
	FwdClientID    = "cid-PLANTED-forwarded-0b0b"
	FwdSecret      = "csecret-PLANTED-forwarded-f00d"
	FwdRefresh     = "rt-PLANTED-forwarded-beef"
	GitHubToken    = "ghp_PLANTED_0123456789abcdef"
	Gmail          = "https://www.googleapis.com/auth/gmail.readonly"
	MailRead       = "https://graph.microsoft.com/Mail.Read"
	Agent          = "builtin:chat"
	ExpiryStep     = 5  // the get_access_token answered from a token with 3 minutes left
	NotConnectStep = 8  // the get_access_token on a provider that is not connected
	HostStep       = 23 // the operation a keyring failure ends before the core decides
)

// Secrets lists every planted secret.
func Secrets() []string {
	return []string{ClientID, ClientSecret, ClientID2, ClientSecret2, RefreshToken, AccessToken,
		RefreshToken2, AccessToken2, FwdClientID, FwdSecret, FwdRefresh, GitHubToken}
}

// AgentsJSON is the home's agents.json of the scenario: it replaces the built-in Agent with
// one that also declares Mail.Read on microsoft, so a forwarded microsoft connection must
// cover it.
const AgentsJSON = `{"version": 1, "agents": [{"id": "` + Agent + `", "name": "Chat",
  "required_connectors": [{"connector": "microsoft", "scopes": ["` + MailRead + `"]}],
  "consumes_mcp_servers": true}]}
`

// World returns a memhost world with the scenario's agent registry, whose authorization
// server answers at the endpoints of the embedded catalog (the client's), and its
// capabilities.
func World() (*memhost.World, hostabi.Capabilities) {
	w := memhost.New(Start, 42)
	memshell.Serve(w, catalog.Default())
	w.SetFile(layout.Agents, []byte(AgentsJSON))
	return w, w.Capabilities("")
}

// Step is one operation of the scenario and the outcome it must have ("ok" or a code).
type Step struct {
	Name string
	Want string
	Run  func(ctx context.Context, c *grantwire.Client, w *memhost.World) error
}

func code(err error) string {
	if err == nil {
		return "ok"
	}
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return "error: " + err.Error()
}

// Steps are the scenario. Each step is one client operation, so it makes exactly one
// decision-log entry, in this order.
func Steps() []Step {
	tok := func(provider string, scopes ...string) func(context.Context, *grantwire.Client, *memhost.World) error {
		return func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.GetAccessToken(ctx, provider, scopes, Agent)
			return err
		}
	}
	return []Step{
		{"configure google client", "ok", func(ctx context.Context, c *grantwire.Client, w *memhost.World) error {
			_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: ClientID, ClientSecret: ClientSecret})
			return err
		}},
		{"connect google", "ok", func(ctx context.Context, c *grantwire.Client, w *memhost.World) error {
			google, _ := catalog.Default().Entry("google")
			w.Server.ScriptAuthorize("google", authserver.Authorization{Status: "ok", Iss: &google.Issuer,
				AccessToken: AccessToken, RefreshToken: RefreshToken, ExpiresIn: 3600,
				Scopes: []string{Gmail}, Account: "user@example.com"})
			_, err := c.Connect(ctx, "google", []string{Gmail}, nil)
			return err
		}},
		{"token before the grant", "AGENT_NOT_GRANTED", tok("google", Gmail)},
		{"grant google", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Grant(ctx, "google", Agent, []string{Gmail})
			return err
		}},
		{"token, an hour left", "ok", tok("google", Gmail)},
		{"token, three minutes left", "ok", func(ctx context.Context, c *grantwire.Client, w *memhost.World) error {
			w.Advance(57 * time.Minute)
			return tok("google", Gmail)(ctx, c, w)
		}},
		{"token, expired: refresh with rotation", "ok", func(ctx context.Context, c *grantwire.Client, w *memhost.World) error {
			w.Advance(4 * time.Minute)
			w.Server.ScriptRefresh("google", authserver.Answer{Status: 200, AccessToken: AccessToken2, RefreshToken: RefreshToken2, ExpiresIn: 3600})
			return tok("google", Gmail)(ctx, c, w)
		}},
		{"grant microsoft", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Grant(ctx, "microsoft", Agent, []string{MailRead})
			return err
		}},
		{"token, microsoft not connected", "NOT_CONNECTED", tok("microsoft", MailRead)},
		{"import forwarded microsoft", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.ImportForwarded(ctx, grantwire.Forwarded{Provider: "microsoft", ClientID: FwdClientID, ClientSecret: FwdSecret,
				RefreshToken: FwdRefresh, Scopes: []string{MailRead, "openid"}, AccountEmail: "user@example.com", GrantAgents: []string{Agent}})
			return err
		}},
		{"configure mcp-github", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": GitHubToken}})
			return err
		}},
		{"activate mcp-github", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Activate(ctx, "mcp-github", Agent, nil)
			return err
		}},
		{"mcp credential", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			cred, err := mcp.Of(c).Credential(ctx, "mcp-github", Agent)
			if err == nil && cred.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != GitHubToken {
				return fmt.Errorf("credential returned the wrong value")
			}
			return err
		}},
		{"visible servers", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := mcp.Of(c).VisibleServers(ctx, Agent)
			return err
		}},
		{"list grants", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.ListGrants(ctx, "")
			return err
		}},
		{"status", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Status(ctx)
			return err
		}},
		{"connections", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, _, err := c.Connections(ctx)
			return err
		}},
		{"rotate client while another process holds the lock", "BUSY", func(ctx context.Context, c *grantwire.Client, w *memhost.World) error {
			w.Hold("google", "another process")
			defer w.Release("google")
			_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: ClientID2, ClientSecret: ClientSecret2})
			return err
		}},
		{"rotate client", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: ClientID2, ClientSecret: ClientSecret2})
			return err
		}},
		{"token after the rotation: tripwire", "REAUTH_REQUIRED", tok("google", Gmail)},
		{"revoke google", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Revoke(ctx, "google", Agent)
			return err
		}},
		{"deactivate mcp-github", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Deactivate(ctx, "mcp-github", Agent)
			return err
		}},
		{"disconnect mcp-github", "ok", func(ctx context.Context, c *grantwire.Client, _ *memhost.World) error {
			_, err := c.Disconnect(ctx, "mcp-github")
			return err
		}},
		{"connections, keyring failing", "INSECURE_STORE", func(ctx context.Context, c *grantwire.Client, w *memhost.World) error {
			w.Fail(memhost.Failure{Op: "get", User: layout.ConnectionUser("google"),
				Err: &hostabi.HostError{Code: hostabi.HostErrInsecureStore, Detail: "the credential store is locked",
					Fix: "start a Secret Service (gnome-keyring)"}})
			_, _, err := c.Connections(ctx)
			return err
		}},
	}
}

// Run runs every step in order and checks each outcome.
func Run(ctx context.Context, c *grantwire.Client, w *memhost.World) error {
	for i, s := range Steps() {
		if got := code(s.Run(ctx, c, w)); got != s.Want {
			return fmt.Errorf("step %d (%s): got %s, want %s", i, s.Name, got, s.Want)
		}
	}
	return nil
}
