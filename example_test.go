package grantwire_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/mcp"
	"github.com/grantwire/grantwire/shells/native"
)

// sharedEngine compiles policy.wasm once for all examples (each New would compile its own).
var sharedEngine = sync.OnceValue(func() core.Engine {
	e, err := wasmengine.New(context.Background(), wasmengine.WithData(catalog.Default().Data()))
	if err != nil {
		panic(err)
	}
	return e
})

const gmail = "https://www.googleapis.com/auth/gmail.readonly"

// agentsJSON is the home's agent registry of the examples: besides the built-in agents
// (builtin:chat consumes MCP servers), installed:mail declares that it reads Gmail.
const agentsJSON = `{"version": 1, "agents": [
  {"id": "installed:mail", "name": "Mail", "required_connectors": [
    {"connector": "google", "scopes": ["` + gmail + `"], "reason": "Read your mail"}]}]}`

// example returns a client on an in-memory world (internal/testworld/memhost): a simulated clock, an
// in-memory keyring and home (holding agentsJSON as agents.json), and an authorization
// server answering at the catalog's endpoints, where a simulated user consents. A real
// program uses the OS shell instead (grantwire.Open).
func example() (*grantwire.Client, *memhost.World) {
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	memshell.Serve(w, catalog.Default())
	w.SetFile("agents.json", []byte(agentsJSON))
	c, err := grantwire.New(context.Background(), grantwire.WithCapabilities(w.Capabilities("")),
		grantwire.WithEngine(sharedEngine()))
	if err != nil {
		panic(err)
	}
	return c, w
}

// consent makes the simulated user consent to the next Google authorization. Google names
// itself in the callback (RFC 9207), and grantwire checks that it does.
func consent(w *memhost.World) {
	iss := "https://accounts.google.com"
	w.Server.ScriptAuthorize("google", authserver.Authorization{Status: "ok", Iss: &iss})
}

// connected returns a client with google configured, connected and granted to
// installed:mail.
func connected() (*grantwire.Client, *memhost.World) {
	ctx := context.Background()
	c, w := example()
	_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-1", ClientSecret: "client-secret-1"})
	must(err)
	consent(w)
	_, err = c.Connect(ctx, "google", nil, []string{"installed:mail"})
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
	fmt.Println(c.Engine().Name(), len(c.Catalog().IDs()))
	fmt.Println(c.Revision() == bundle.EmbeddedRevision())
	// Output:
	// native 30
	// true
}

// Open runs on the OS shell: the keyring of the OS credential store, ledger files under
// the home, file locks shared with other processes, and a browser for authorizations. (It
// is not run here: it needs a Secret Service; TestOpenOnTheOSShell runs it.)
func ExampleOpen() {
	ctx := context.Background()
	c, err := grantwire.Open(ctx, native.Options{Home: filepath.Join(os.TempDir(), "grantwire-example")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	rows, err := c.Status(ctx, "google")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rows[0].ID, rows[0].Configured)
}

func ExampleWithEngine() {
	ctx := context.Background()
	// The engine decides with the client's catalog: give it the same data.
	e, err := wasmengine.New(ctx, wasmengine.WithData(catalog.Default().Data()))
	must(err)
	defer e.Close(ctx)
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	c, err := grantwire.New(ctx, grantwire.WithEngine(e), grantwire.WithCapabilities(w.Capabilities("")))
	must(err)
	defer c.Close(ctx) // the engine stays open: the caller owns it
	fmt.Println(c.Engine() == core.Engine(e), c.Revision() == "")
	// Output: true true
}

func ExampleWithCatalog() {
	ctx := context.Background()
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	mine := `{"connectors": {"mcp-mine": {"type": "mcp_server", "command": "mine",
	  "env": [{"key": "MINE_KEY", "required": true, "secret": true}]}}}`
	c, err := grantwire.New(ctx, grantwire.WithCatalog(catalog.Bytes([]byte(mine))), grantwire.WithCapabilities(w.Capabilities("")))
	must(err)
	defer c.Close(ctx)
	rows, err := c.Status(ctx)
	must(err)
	fmt.Println(len(rows), rows[0].ID, rows[0].MissingKeys)

	// What a catalog holds must be right, even when it is not a user's file.
	_, err = grantwire.New(ctx, grantwire.WithCatalog(catalog.Bytes([]byte(`{"connectors": {"x": {"type": "ftp"}}}`))),
		grantwire.WithCapabilities(w.Capabilities("")))
	fmt.Println(err)
	// Output:
	// 1 mcp-mine [MINE_KEY]
	// grantwire: configuration error: the catalog: connector "x": unknown type "ftp" (oauth_pkce, mcp_server or mcp_remote)
}

// A user's catalog file replaces the embedded catalog; the policy judges it strictly.
func ExampleWithCatalog_file() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "grantwire-example-")
	must(err)
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "catalog.json")
	must(os.WriteFile(path, []byte(`{"connectors": {"mcp-mine": {"type": "mcp_server", "display_name": "Mine",
	  "tier": "community", "command": "mine", "evn": []}}}`), 0o600))
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	_, err = grantwire.New(ctx, grantwire.WithCatalog(catalog.File(path)), grantwire.WithCapabilities(w.Capabilities("")))
	fmt.Println(errors.Is(err, grantwire.ErrConfiguration))
	fmt.Println(strings.ReplaceAll(err.Error(), dir, "$DIR"))

	must(os.WriteFile(path, []byte(`{"connectors": {"mcp-mine": {"type": "mcp_server", "display_name": "Mine",
	  "tier": "community", "command": "mine"}}}`), 0o600))
	c, err := grantwire.New(ctx, grantwire.WithCatalog(catalog.File(path)), grantwire.WithCapabilities(w.Capabilities("")))
	must(err)
	defer c.Close(ctx)
	fmt.Println(c.Catalog().IDs())
	// Output:
	// true
	// grantwire: configuration error: the catalog $DIR/catalog.json: connector "mcp-mine": unknown field(s) evn
	// [mcp-mine]
}

// A catalog loaded once (to list it, say) is handed to the client as it is; a file's is
// judged strictly by the policy, the embedded one is used as shipped.
func ExampleWithCatalog_loaded() {
	ctx := context.Background()
	cat := catalog.Default()
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	c, err := grantwire.New(ctx, grantwire.WithCatalog(cat), grantwire.WithCapabilities(w.Capabilities("")))
	must(err)
	defer c.Close(ctx)
	e, _ := c.Catalog().Entry("google")
	fmt.Println(c.Catalog() == cat, e.Name(), e.DefaultScopes)
	// Output: true Google [openid https://www.googleapis.com/auth/userinfo.email]
}

func ExampleWithObserver() {
	ctx := context.Background()
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")), grantwire.WithEngine(sharedEngine()),
		grantwire.WithObserver(func(d grantwire.Decision) {
			outcome := "ok"
			if d.Error != nil {
				outcome = d.Error.Code
			}
			fmt.Println(d.Op, string(d.Args), outcome, d.Engine)
		}))
	must(err)
	_, _ = c.Grant(ctx, "mcp-memory", "builtin:chat", []string{"use"})
	_, _ = mcp.Of(c).Credential(ctx, "mcp-memory", "builtin:email")
	// Output:
	// grant {"agent":"builtin:chat","connector":"mcp-memory","scopes":["use"]} ok wasm
	// credential {"agent":"builtin:email","connector":"mcp-memory"} AGENT_NOT_GRANTED wasm
}

func ExampleClient_Configure() {
	ctx := context.Background()
	c, w := example()
	r, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-1", ClientSecret: "client-secret-1"})
	must(err)
	fmt.Println(r.Connector, r.ClientIDHash, r.HasSecret)
	fmt.Println(w.Events()[0].Type, string(w.Events()[0].Payload))
	// Output:
	// google f08ce266 true
	// connector.client.changed {"client_id_hash":"f08ce266","connector_id":"google"}
}

func ExampleClient_Connect() {
	ctx := context.Background()
	c, w := example()
	_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-1", ClientSecret: "client-secret-1"})
	must(err)
	consent(w)
	// No scopes: what the listed agents declare, plus the catalog's defaults. The user has
	// a minute to finish in the browser.
	r, err := c.Connect(ctx, "google", nil, []string{"installed:mail"}, grantwire.ConnectOptions{Timeout: time.Minute})
	must(err)
	fmt.Println(r.Account)
	fmt.Println(r.Scopes)
	fmt.Println(r.Granted)
	// Output:
	// user@example.com
	// [https://www.googleapis.com/auth/gmail.readonly https://www.googleapis.com/auth/userinfo.email openid]
	// map[installed:mail:[https://www.googleapis.com/auth/gmail.readonly]]
}

func ExampleClient_GetAccessToken() {
	ctx := context.Background()
	c, w := connected()
	tok, err := c.GetAccessToken(ctx, "google", []string{gmail}, "installed:mail")
	must(err)
	fmt.Println(tok.AccessToken, tok.ExpiresAt.UTC().Format(time.RFC3339))

	// Two hours later the token is refreshed under the provider's lock (and rotated).
	w.Advance(2 * time.Hour)
	tok, err = c.GetAccessToken(ctx, "google", []string{gmail}, "installed:mail")
	must(err)
	fmt.Println(tok.AccessToken, tok.ExpiresAt.UTC().Format(time.RFC3339))

	// An agent without a grant learns nothing about the connection.
	_, err = c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:chat")
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		fmt.Println(ge.Code, ge.Status, ge.Exit, ge.MissingScopes)
		fmt.Println(ge.Fix)
	}
	// Output:
	// access-google-0001 2026-09-21T15:13:20Z
	// access-google-0003 2026-09-21T17:13:20Z
	// AGENT_NOT_GRANTED 403 4 [https://www.googleapis.com/auth/gmail.readonly]
	// grantwire grants grant google builtin:chat --scopes https://www.googleapis.com/auth/gmail.readonly
}

// Every error is an *Error: a stable code, a summary, the command that fixes it, and the
// REST status and exit code the policy publishes for the code.
func ExampleError() {
	ctx := context.Background()
	c, w := connected()
	_, err := c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:chat")
	var ge *grantwire.Error
	if errors.Is(err, grantwire.ErrAgentNotGranted) && errors.As(err, &ge) {
		fmt.Println(ge.Summary)
		fmt.Println(ge.Fix)
		fmt.Println(err)
	}

	w.Hold("google", "another process")
	_, err = c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-2", ClientSecret: "client-secret-2"})
	if errors.Is(err, grantwire.ErrBusy) && errors.As(err, &ge) {
		fmt.Println(ge.Code, ge.Status, ge.Exit, ge.RetryAfter, ge.Fix == "")
		fmt.Println(err)
	}
	// Output:
	// agent builtin:chat is not granted https://www.googleapis.com/auth/gmail.readonly on google
	// grantwire grants grant google builtin:chat --scopes https://www.googleapis.com/auth/gmail.readonly
	// grantwire: agent builtin:chat is not granted https://www.googleapis.com/auth/gmail.readonly on google; fix: grantwire grants grant google builtin:chat --scopes https://www.googleapis.com/auth/gmail.readonly
	// BUSY 503 75 500ms true
	// grantwire: another grantwire operation holds the google lock; nothing was changed, retry shortly
}

func ExampleClient_Grant() {
	ctx := context.Background()
	c, _ := example()
	// Scopes are stored sorted and without duplicates; scopes the catalog does not list
	// are granted with a warning.
	r, err := c.Grant(ctx, "google", "builtin:chat", []string{"b", "a", "a"})
	must(err)
	fmt.Println(r.Scopes, r.Changed)
	fmt.Println(r.Warnings)
	r, err = c.Grant(ctx, "google", "builtin:chat", []string{"openid", gmail})
	must(err)
	fmt.Println(r.Scopes, r.Changed, len(r.Warnings))
	r, err = c.Grant(ctx, "google", "builtin:chat", []string{gmail, "openid"})
	must(err)
	fmt.Println(r.Changed)
	// Output:
	// [a b] true
	// [the catalog does not list a b for google; a scope is an exact, case-sensitive string (grantwire catalog google)]
	// [https://www.googleapis.com/auth/gmail.readonly openid] true 0
	// false
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

func ExampleClient_RevokeGrant() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Grant(ctx, "google", "builtin:chat", []string{gmail})
	must(err)
	r, err := c.RevokeGrant(ctx, "google", "builtin:chat")
	fmt.Println(r.Changed, r.Warnings, err)
	// Output:
	// true [] <nil>
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

func Example_visibleServers() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"}) // granted, not active
	must(err)
	_, err = c.Activate(ctx, "mcp-memory", "builtin:chat", nil) // granted and active
	must(err)
	servers, err := mcp.Of(c).VisibleServers(ctx, "builtin:chat")
	must(err)
	fmt.Println(servers)
	// Output: [mcp-memory]
}

func ExampleClient_Configure_mcp() {
	ctx := context.Background()
	c, w := example()
	_, err := c.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}})
	must(err)
	// mcp_servers.json holds a keyring reference, never the value.
	fmt.Print(string(w.File("mcp_servers.json")))
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

func Example_credential() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}})
	must(err)
	_, err = mcp.Of(c).Credential(ctx, "mcp-github", "builtin:chat")
	fmt.Println(errors.Is(err, grantwire.ErrAgentNotGranted))
	_, err = c.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"})
	must(err)
	cred, err := mcp.Of(c).Credential(ctx, "mcp-github", "builtin:chat")
	must(err)
	fmt.Println(cred.Command, cred.Args, cred.Env["GITHUB_PERSONAL_ACCESS_TOKEN"])
	// Output:
	// true
	// npx [-y @modelcontextprotocol/server-github] ghp_example
}

func ExampleClient_Disconnect() {
	ctx := context.Background()
	c, w := connected()
	r, err := c.Disconnect(ctx, "google")
	must(err)
	fmt.Println(r.Removed, r.RevokedGrants, r.RevokedAtProvider)
	// Connecting again inherits nothing: installed:mail is no longer granted.
	consent(w)
	_, err = c.Connect(ctx, "google", []string{gmail}, nil)
	must(err)
	_, err = c.GetAccessToken(ctx, "google", []string{gmail}, "installed:mail")
	fmt.Println(errors.Is(err, grantwire.ErrAgentNotGranted))
	// Output:
	// true [installed:mail] true
	// true
}

func ExampleClient_ImportForwarded() {
	ctx := context.Background()
	c, w := example()
	w.Server.IssueToken("google", "forwarded-refresh-token", nil)
	s, err := c.ImportForwarded(ctx, grantwire.Forwarded{
		Provider: "google", ClientID: "host-app-client", ClientSecret: "host-app-secret",
		RefreshToken: "forwarded-refresh-token", Scopes: []string{gmail},
		AccountEmail: "person@example.org", GrantAgents: []string{"installed:mail"},
	})
	must(err)
	fmt.Println(s.AccountEmail, s.Scopes, s.GrantAgents, s.Forwarded)
	// The forwarded scopes must cover what every listed agent declares.
	_, err = c.ImportForwarded(ctx, grantwire.Forwarded{
		Provider: "google", ClientID: "host-app-client", ClientSecret: "host-app-secret",
		RefreshToken: "forwarded-refresh-token", Scopes: []string{"openid"},
		AccountEmail: "person@example.org", GrantAgents: []string{"installed:mail"},
	})
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		fmt.Println(ge.Code, ge.MissingScopes)
	}
	// Output:
	// person@example.org [https://www.googleapis.com/auth/gmail.readonly] [installed:mail] true
	// SCOPE_MISMATCH [https://www.googleapis.com/auth/gmail.readonly]
}

func ExampleClient_Status() {
	ctx := context.Background()
	c, _ := connected()
	// Rotating the client makes the stored connection stale; status reports it, read-only.
	_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-2", ClientSecret: "client-secret-2"})
	must(err)
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
	_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-2", ClientSecret: "client-secret-2"})
	must(err)
	// The listing enforces the tripwire: the stale connection is cleared under the lock.
	rows, cleared, err := c.Connections(ctx)
	must(err)
	fmt.Println(len(rows), cleared)
	// Output: 0 [{google client_rotated}]
}

func ExampleClient_Test() {
	ctx := context.Background()
	c, _ := connected()
	r, err := c.Test(ctx, "google")
	must(err)
	fmt.Println(r.OK, r.Type, r.Account, r.Scopes)

	// A connector that is not usable is an error saying why, with the fix.
	_, err = c.Test(ctx, "mcp-github")
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		fmt.Println(ge.Code)
		fmt.Println(ge.Fix)
	}
	// Output:
	// true oauth_pkce user@example.com [https://www.googleapis.com/auth/gmail.readonly https://www.googleapis.com/auth/userinfo.email openid]
	// NOT_CONNECTED
	// grantwire configure mcp-github --from-stdin
}

func Example_mcpServers() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}})
	must(err)
	_, err = c.Activate(ctx, "mcp-github", "builtin:chat", nil)
	must(err)
	all, err := mcp.Of(c).Servers(ctx, "")
	must(err)
	for _, s := range all {
		fmt.Println(s.ID, s.Command, s.Configured, s.EnvKeys, s.Grants, s.ActiveFor)
	}
	// With an agent: the servers it sees.
	seen, err := mcp.Of(c).Servers(ctx, "builtin:email")
	must(err)
	fmt.Println(len(seen))
	// Output:
	// mcp-github npx true [GITHUB_PERSONAL_ACCESS_TOKEN] map[builtin:chat:[use]] [builtin:chat]
	// 0
}

func ExampleClient_Agents() {
	ctx := context.Background()
	c, _ := example()
	agents, problems, err := c.Agents(ctx)
	must(err)
	for _, a := range agents {
		if a.ID == "installed:mail" || a.ID == "builtin:chat" {
			fmt.Println(a.ID, a.Origin, a.ConsumesMCPServers, a.RequiredConnectors)
		}
	}
	fmt.Println(len(problems))
	// Output:
	// builtin:chat builtin true []
	// installed:mail file false [{google [https://www.googleapis.com/auth/gmail.readonly] Read your mail}]
	// 0
}

// A custom agent is named after the digest of its source: when its code changes, it is
// another agent and inherits no grant.
func ExampleClient_AgentID() {
	ctx := context.Background()
	c, w := example()
	w.SetSource("/home/user/agents/reviewer.py", []byte("print('review')\n"))
	id, err := c.AgentID(ctx, "/home/user/agents/reviewer.py", "")
	must(err)
	fmt.Println(id)
	w.SetSource("/home/user/agents/reviewer.py", []byte("print('review, better')\n"))
	id2, err := c.AgentID(ctx, "/home/user/agents/reviewer.py", "rev")
	must(err)
	fmt.Println(id2)
	// Output:
	// custom:57ec40d4c02706e6:reviewer
	// custom:9848e4b763c14a3b:rev
}
