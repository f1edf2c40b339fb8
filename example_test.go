package grantwire_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/hostabi/memhost"
)

// sharedEngine compiles policy.wasm once for all examples (each New would compile its own).
var sharedEngine = sync.OnceValue(func() core.Engine {
	cat, err := catalog.Load(nil)
	if err != nil {
		panic(err)
	}
	e, err := wasmengine.New(context.Background(), wasmengine.WithData(cat.Data()))
	if err != nil {
		panic(err)
	}
	return e
})

const gmail = "https://www.googleapis.com/auth/gmail.readonly"

// example returns a client on an in-memory world (hostabi/memhost): a simulated clock, an
// in-memory keyring and ledgers, and a scripted authorization server. A real program passes
// the OS shell's capabilities instead (shells/native).
func example() (*grantwire.Client, *memhost.World) {
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	w.SetAgent(hostabi.Agent{ID: "builtin:mail", RequiredConnectors: map[string][]string{"google": {gmail}}})
	w.SetAgent(hostabi.Agent{ID: "builtin:chat", ConsumesMCPServers: true})
	c, err := grantwire.New(context.Background(), grantwire.WithCapabilities(w.Capabilities("")),
		grantwire.WithEngine(sharedEngine()))
	if err != nil {
		panic(err)
	}
	return c, w
}

// connected returns a client with google configured, connected and granted to builtin:mail.
func connected() (*grantwire.Client, *memhost.World) {
	ctx := context.Background()
	c, w := example()
	must(c.ConfigureClient(ctx, "google", "client-1", "client-secret-1", ""))
	_, err := c.Connect(ctx, "google", nil, []string{"builtin:mail"})
	must(err)
	return c, w
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func ExampleNew() {
	ctx := context.Background()
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")))
	if err != nil {
		panic(err)
	}
	defer c.Close(ctx)
	fmt.Println(c.Engine().Name(), len(c.Catalog().IDs()) >= 23)
	// Output: native true
}

func ExampleClient_ConfigureClient() {
	ctx := context.Background()
	c, w := example()
	err := c.ConfigureClient(ctx, "google", "client-1", "client-secret-1", "")
	fmt.Println(err)
	fmt.Println(w.Events()[0].Type, string(w.Events()[0].Payload))
	// Output:
	// <nil>
	// connector.client.changed {"client_id_hash":"f08ce266","connector_id":"google"}
}

func ExampleClient_Connect() {
	ctx := context.Background()
	c, _ := example()
	must(c.ConfigureClient(ctx, "google", "client-1", "client-secret-1", ""))
	// No scopes: what the listed agents declare, plus the catalog's defaults.
	r, err := c.Connect(ctx, "google", nil, []string{"builtin:mail"})
	must(err)
	fmt.Println(r.Account)
	fmt.Println(r.Scopes)
	fmt.Println(r.Granted)
	// Output:
	// user@example.com
	// [https://www.googleapis.com/auth/gmail.readonly https://www.googleapis.com/auth/userinfo.email openid]
	// map[builtin:mail:[https://www.googleapis.com/auth/gmail.readonly]]
}

func ExampleClient_GetAccessToken() {
	ctx := context.Background()
	c, w := connected()
	tok, err := c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:mail")
	must(err)
	fmt.Println(tok.AccessToken, tok.ExpiresAt.UTC().Format(time.RFC3339))

	// Two hours later the token is refreshed under the provider's lock (and rotated).
	w.Advance(2 * time.Hour)
	tok, err = c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:mail")
	must(err)
	fmt.Println(tok.AccessToken, tok.ExpiresAt.UTC().Format(time.RFC3339))

	// An agent without a grant learns nothing about the connection.
	_, err = c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:other")
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		fmt.Println(ge.Code, ge.Status, ge.Exit, ge.MissingScopes)
		fmt.Println(ge.Fix)
	}
	// Output:
	// access-google-0001 2026-09-21T15:13:20Z
	// access-google-0003 2026-09-21T17:13:20Z
	// AGENT_NOT_GRANTED 403 4 [https://www.googleapis.com/auth/gmail.readonly]
	// grantwire grants grant google builtin:other --scopes https://www.googleapis.com/auth/gmail.readonly
}

func ExampleError() {
	ctx := context.Background()
	c, w := connected()
	w.Hold("google", "another process")
	err := c.ConfigureClient(ctx, "google", "client-2", "client-secret-2", "")
	var ge *grantwire.Error
	if errors.Is(err, grantwire.ErrBusy) && errors.As(err, &ge) {
		fmt.Println(ge.Code, ge.Status, ge.Exit, ge.RetryAfter)
		fmt.Println(err)
	}
	// Output:
	// BUSY 503 75 500ms
	// grantwire: another grantwire operation holds the google lock; nothing was changed, retry shortly
}

func ExampleClient_Grant() {
	ctx := context.Background()
	c, _ := example()
	r, err := c.Grant(ctx, "google", "builtin:chat", []string{"b", "a", "a"})
	must(err)
	fmt.Println(r.Scopes, r.Changed)
	r, err = c.Grant(ctx, "google", "builtin:chat", []string{"a", "b"})
	must(err)
	fmt.Println(r.Scopes, r.Changed)
	// Output:
	// [a b] true
	// [a b] false
}

func ExampleClient_Revoke() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Grant(ctx, "google", "builtin:chat", []string{gmail})
	must(err)
	changed, err := c.Revoke(ctx, "google", "builtin:chat")
	fmt.Println(changed, err)
	changed, err = c.Revoke(ctx, "google", "builtin:chat") // idempotent
	fmt.Println(changed, err)
	// Output:
	// true <nil>
	// false <nil>
}

func ExampleClient_ListGrants() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Grant(ctx, "google", "builtin:chat", []string{gmail})
	must(err)
	_, err = c.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"})
	must(err)
	one, err := c.ListGrants(ctx, "mcp-github")
	must(err)
	all, err := c.ListGrants(ctx, "")
	must(err)
	fmt.Println(one)
	fmt.Println(len(all))
	// Output:
	// map[mcp-github:map[builtin:chat:[use]]]
	// 2
}

func ExampleClient_Activate() {
	ctx := context.Background()
	c, _ := example()
	// One-click activation: builtin:chat consumes MCP servers, so it is granted ["use"].
	a, err := c.Activate(ctx, "mcp-memory", "builtin:chat", nil)
	must(err)
	fmt.Println(a.AutoGranted, a.GrantSource, a.Scopes)
	// Activations are for MCP connectors only.
	_, err = c.Activate(ctx, "google", "builtin:chat", nil)
	fmt.Println(errors.Is(err, grantwire.ErrConfiguration))
	// Output:
	// true consumes_mcp_servers [use]
	// true
}

func ExampleClient_Deactivate() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Activate(ctx, "mcp-memory", "builtin:chat", nil)
	must(err)
	changed, err := c.Deactivate(ctx, "mcp-memory", "builtin:chat")
	must(err)
	grants, err := c.ListGrants(ctx, "mcp-memory")
	must(err)
	fmt.Println(changed, grants) // the grant is kept
	// Output: true map[mcp-memory:map[builtin:chat:[use]]]
}

func ExampleClient_ListActivations() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Activate(ctx, "mcp-memory", "builtin:chat", nil)
	must(err)
	acts, err := c.ListActivations(ctx, "")
	must(err)
	fmt.Println(acts)
	// Output: map[mcp-memory:map[builtin:chat:true]]
}

func ExampleClient_VisibleServers() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"}) // granted, not active
	must(err)
	_, err = c.Activate(ctx, "mcp-memory", "builtin:chat", nil) // granted and active
	must(err)
	servers, err := c.VisibleServers(ctx, "builtin:chat")
	must(err)
	fmt.Println(servers)
	// Output: [mcp-memory]
}

func ExampleClient_ConfigureMCP() {
	ctx := context.Background()
	c, w := example()
	must(c.ConfigureMCP(ctx, "mcp-github", map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}))
	// mcp_servers.json holds a keyring reference, never the value.
	fmt.Println(string(w.Ledger(hostabi.LedgerMCPServers)))
	// Output:
	// {
	//   "mcpServers": {
	//     "mcp-github": {
	//       "args": [
	//         "-y",
	//         "@modelcontextprotocol/server-github"
	//       ],
	//       "command": "npx",
	//       "env": {
	//         "GITHUB_PERSONAL_ACCESS_TOKEN": {
	//           "$keyring": "grantwire.connections:mcp-github:GITHUB_PERSONAL_ACCESS_TOKEN"
	//         }
	//       }
	//     }
	//   }
	// }
}

func ExampleClient_Credential() {
	ctx := context.Background()
	c, _ := example()
	must(c.ConfigureMCP(ctx, "mcp-github", map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}))
	_, err := c.Credential(ctx, "mcp-github", "builtin:chat")
	fmt.Println(errors.Is(err, grantwire.ErrAgentNotGranted))
	_, err = c.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"})
	must(err)
	cred, err := c.Credential(ctx, "mcp-github", "builtin:chat")
	must(err)
	fmt.Println(cred.Command, cred.Args, cred.Env["GITHUB_PERSONAL_ACCESS_TOKEN"])
	// Output:
	// true
	// npx [-y @modelcontextprotocol/server-github] ghp_example
}

func ExampleClient_Disconnect() {
	ctx := context.Background()
	c, _ := connected()
	r, err := c.Disconnect(ctx, "google")
	must(err)
	fmt.Println(r.Removed, r.RevokedGrants)
	// Connecting again inherits nothing: builtin:mail is no longer granted.
	_, err = c.Connect(ctx, "google", []string{gmail}, nil)
	must(err)
	_, err = c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:mail")
	fmt.Println(errors.Is(err, grantwire.ErrAgentNotGranted))
	// Output:
	// true [builtin:mail]
	// true
}

func ExampleClient_ImportForwarded() {
	ctx := context.Background()
	c, w := example()
	w.Server.Issue("google", "forwarded-refresh-token")
	s, err := c.ImportForwarded(ctx, grantwire.Forwarded{
		Provider: "google", ClientID: "host-app-client", ClientSecret: "host-app-secret",
		RefreshToken: "forwarded-refresh-token", Scopes: []string{gmail},
		AccountEmail: "person@example.org", GrantAgents: []string{"builtin:mail"},
	})
	must(err)
	fmt.Println(s.AccountEmail, s.Scopes, s.GrantAgents, s.Forwarded)
	// The forwarded scopes must cover what every listed agent declares.
	_, err = c.ImportForwarded(ctx, grantwire.Forwarded{
		Provider: "google", ClientID: "host-app-client", RefreshToken: "forwarded-refresh-token",
		Scopes: []string{"openid"}, AccountEmail: "person@example.org", GrantAgents: []string{"builtin:mail"},
	})
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		fmt.Println(ge.Code, ge.MissingScopes)
	}
	// Output:
	// person@example.org [https://www.googleapis.com/auth/gmail.readonly] [builtin:mail] true
	// SCOPE_MISMATCH [https://www.googleapis.com/auth/gmail.readonly]
}

func ExampleClient_Status() {
	ctx := context.Background()
	c, _ := connected()
	// Rotating the client makes the stored connection stale; status reports it, read-only.
	must(c.ConfigureClient(ctx, "google", "client-2", "client-secret-2", ""))
	rows, err := c.Status(ctx)
	must(err)
	for _, r := range rows {
		if r.Configured {
			fmt.Printf("%s configured=%v tripwire=%q\n", r.ID, r.Configured, r.Tripwire)
		}
	}
	// Output:
	// google configured=true tripwire="client_rotated"
}

func ExampleClient_Connections() {
	ctx := context.Background()
	c, _ := connected()
	must(c.ConfigureClient(ctx, "google", "client-2", "client-secret-2", ""))
	// The listing enforces the tripwire: the stale connection is cleared under the lock.
	rows, cleared, err := c.Connections(ctx)
	must(err)
	fmt.Println(len(rows), cleared)
	// Output: 0 [{google client_rotated}]
}

func ExampleClient_Do() {
	ctx := context.Background()
	c, _ := example()
	out, err := c.Do(ctx, "grant", map[string]any{"connector": "mcp-memory", "agent": "builtin:chat", "scopes": []string{"use"}}, nil)
	must(err)
	fmt.Println(string(out.Result))
	// Output: {"agent":"builtin:chat","changed":true,"connector":"mcp-memory","scopes":["use"]}
}

func ExampleCheckURL() {
	ctx := context.Background()
	c, _ := example()
	for _, raw := range []string{"https://oauth2.googleapis.com/token", "http://oauth2.googleapis.com/token", "http://127.0.0.1:8080/token"} {
		u, _ := url.Parse(raw)
		err := grantwire.CheckURL(ctx, c.Engine(), u, "token", 0, nil)
		fmt.Println(raw, errors.Is(err, grantwire.ErrInsecureTransport))
	}
	// Output:
	// https://oauth2.googleapis.com/token false
	// http://oauth2.googleapis.com/token true
	// http://127.0.0.1:8080/token false
}
