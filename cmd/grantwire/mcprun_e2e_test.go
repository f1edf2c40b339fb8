package main_test

// End-to-end tests of `grantwire mcp run` and `mcp config` (docs/behaviour.md#local-mcp-servers)
// on the real keyring: a stdio MCP server built with the MCP Go SDK
// (internal/cmd/mcp-keyprobe) is started through the built binary by a Go SDK client over
// stdio, and reports whether it received its key (compared by SHA-256; the key is never
// echoed). The planted key must reach the server's environment and nothing else: no
// argument (/proc/<pid>/cmdline), no environment of grantwire's own, no file under the
// home, no output.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

var keyprobe = testenv.Binary{Pkg: "github.com/grantwire/grantwire/internal/cmd/mcp-keyprobe"}

// probeBinary builds the MCP test server (internal/cmd/mcp-keyprobe) once.
func probeBinary(t testing.TB) string { return keyprobe.Path(t) }

// mcpWorld is an e2e world whose catalog adds mcp-probe (the key probe, which exits 42 on
// SIGTERM) and mcp-missing (a server whose command does not exist), with a planted key.
type mcpWorld struct {
	*e2e
	key string
}

const (
	probeAgent = "builtin:chat"
	probeSlot  = "mcp-probe:PROBE_API_KEY"
)

func newMCPWorld(t *testing.T) *mcpWorld {
	t.Helper()
	w := &mcpWorld{e2e: newE2E(t, authserver.Config{}), key: "sk-probe-" + randHex(16)}
	w.plant(w.key)
	sum := sha256.Sum256([]byte(w.key))
	raw, err := os.ReadFile(w.catalog)
	require.NoError(t, err)
	var doc map[string]map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	doc["connectors"]["mcp-probe"] = map[string]any{
		"type": "mcp_server", "display_name": "Key probe", "tier": "test", "category": "test",
		"command": probeBinary(t),
		"args":    []string{"--key-env", "PROBE_API_KEY", "--want-sha256", hex.EncodeToString(sum[:]), "--term-exit", "42"},
		"env":     []map[string]any{{"key": "PROBE_API_KEY", "required": true, "secret": true, "description": "the probe's key"}},
	}
	doc["connectors"]["mcp-missing"] = map[string]any{
		"type": "mcp_server", "display_name": "Missing", "tier": "test", "category": "test",
		"command": "grantwire-test-no-such-server-" + randHex(4),
	}
	doc["connectors"]["mcp-notes"] = map[string]any{
		"type": "mcp_remote", "display_name": "Notes", "tier": "test", "category": "test",
		"url": "https://notes.example.com/mcp",
	}
	raw, err = json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(w.catalog, raw, 0o600))
	return w
}

// probeStatus is key_status's answer.
type probeStatus struct {
	Present bool     `json:"present"`
	Matches bool     `json:"matches"`
	PID     int      `json:"pid"`
	Args    []string `json:"args"`
}

// session is an MCP client session with a server started by command (argv), whose stderr
// is kept.
type session struct {
	cmd    *exec.Cmd
	cs     *mcp.ClientSession
	stderr bytes.Buffer
}

// connect starts argv[0] with argv[1:] as an MCP client would (the Go SDK's
// CommandTransport) and initializes the session.
func (w *mcpWorld) connect(t *testing.T, argv ...string) *session {
	t.Helper()
	s := &session{cmd: exec.Command(argv[0], argv[1:]...)}
	s.cmd.Env, s.cmd.Dir, s.cmd.Stderr = w.env, w.home, &s.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "grantwire-test", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: s.cmd, TerminateDuration: 10 * time.Second}, nil)
	require.NoError(t, err, "stderr: %s", s.stderr.String())
	s.cs = cs
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cs.Close()
		}
	})
	return s
}

func (w *mcpWorld) run(t *testing.T, extra ...string) *session {
	t.Helper()
	return w.connect(t, append([]string{w.bin, "mcp", "run", "mcp-probe", "--agent", probeAgent}, extra...)...)
}

func (s *session) status(t *testing.T) probeStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "key_status"})
	require.NoError(t, err, "stderr: %s", s.stderr.String())
	require.False(t, res.IsError)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var st probeStatus
	require.NoError(t, json.Unmarshal(raw, &st))
	require.NotZero(t, st.PID)
	return st
}

// close ends the session as an MCP client does (stdin closed, then SIGTERM after a while)
// and returns grantwire's exit status.
func (s *session) close(w *mcpWorld) int {
	_ = s.cs.Close()
	w.record(s.stderr.String())
	require.NotNil(w.t, s.cmd.ProcessState, "the command was waited for")
	return s.cmd.ProcessState.ExitCode()
}

// fixes runs a printed fix, which must be a grantwire command.
func (w *e2e) fixes(stdin, fix string) {
	w.t.Helper()
	args, ok := strings.CutPrefix(fix, "grantwire ")
	require.True(w.t, ok, "the fix %q is a grantwire command", fix)
	require.NotContains(w.t, args, "'", "the fix needs no shell quoting here")
	r := w.gw(stdin, strings.Fields(args)...)
	require.Equal(w.t, 0, r.code, "%s: %s", fix, r.stderr)
}

// The gate refuses with the fixing command until the agent is granted, active and the
// server configured; each printed fix, run as printed, moves on; then a Go SDK client
// starts the server through grantwire and the server has its key, which is in no argv, in
// grantwire's own environment, in a file or in an output.
func TestE2EMCPRunThroughTheGate(t *testing.T) {
	w := newMCPWorld(t)
	run := []string{"mcp", "run", "mcp-probe", "--agent", probeAgent}

	e := w.fail(4, "AGENT_NOT_GRANTED", run...)
	require.Equal(t, "grantwire activations activate mcp-probe builtin:chat --scopes use", e.Error.Fix)
	w.fixes("", e.Error.Fix)

	e = w.fail(4, "NOT_CONNECTED", run...)
	require.Equal(t, "grantwire configure mcp-probe --from-stdin", e.Error.Fix)
	w.fixes("PROBE_API_KEY="+w.key+"\n", e.Error.Fix)

	s := w.run(t, "--", "extra-arg")
	st := s.status(t)
	require.True(t, st.Present, "the server received its key")
	require.True(t, st.Matches, "the server received exactly the key configured")
	require.Equal(t, []string{"extra-arg"}, st.Args, "arguments after -- are appended")

	// The key is in the server's environment, and nowhere else in either process.
	gwPID := s.cmd.Process.Pid
	require.NotEqual(t, gwPID, st.PID, "grantwire runs the server as a child process")
	requireProcHolds(t, st.PID, "environ", w.key, true)
	requireProcHolds(t, st.PID, "cmdline", w.key, false)
	requireProcHolds(t, gwPID, "cmdline", w.key, false)
	requireProcHolds(t, gwPID, "environ", w.key, false)
	ppid := procPPID(t, st.PID)
	require.Equal(t, gwPID, ppid, "the server is grantwire's child")

	require.Equal(t, 0, s.close(w), "grantwire exits with the server's status: %s", s.stderr.String())
	require.Empty(t, s.stderr.String(), "nothing on stderr when all goes well")

	// Deactivated: refused with the activation command; activating fixes it.
	require.Equal(t, 0, w.gw("", "activations", "deactivate", "mcp-probe", probeAgent).code)
	e = w.fail(4, "AGENT_NOT_ACTIVE", run...)
	require.Equal(t, "grantwire activations activate mcp-probe builtin:chat", e.Error.Fix)
	w.fixes("", e.Error.Fix)
	require.True(t, w.run(t).status(t).Matches)

	// The key removed from the credential store elsewhere: it fails closed, and
	// configuring it again fixes it.
	require.NoError(t, gokeyring.Delete(w.service, probeSlot))
	e = w.fail(4, "NOT_CONNECTED", run...)
	w.fixes("PROBE_API_KEY="+w.key+"\n", e.Error.Fix)

	// Revoked: refused again, and the server never starts.
	require.Equal(t, 0, w.gw("", "grants", "revoke", "mcp-probe", probeAgent).code)
	w.fail(4, "AGENT_NOT_GRANTED", run...)

	// A decision log of a launch holds references only (the leak check searches it, under
	// the home, like every file).
	w.fixes("", "grantwire activations activate mcp-probe builtin:chat --scopes use")
	logFile := w.decisionLog()
	s = w.connect(t, w.bin, "--decision-log", logFile, "mcp", "run", "mcp-probe", "--agent", probeAgent)
	require.True(t, s.status(t).Matches)
	require.Equal(t, 0, s.close(w))
	log, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Contains(t, string(log), `"op":"launch"`)
}

// requireProcHolds says whether /proc/<pid>/<file> contains needle (Linux).
func requireProcHolds(t *testing.T, pid int, file, needle string, want bool) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	require.NoError(t, err)
	require.NotEmpty(t, b)
	require.Equal(t, want, bytes.Contains(b, []byte(needle)), "/proc/%d/%s holds the key: %v", pid, file, !want)
}

func procPPID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// pid (comm) state ppid …; comm may hold spaces, so read after the last ')'.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	var ppid int
	_, err = fmt.Sscan(fields[1], &ppid)
	require.NoError(t, err)
	return ppid
}

// SIGTERM and SIGINT sent to grantwire reach the server; grantwire exits with the server's
// status (42: the probe's answer to SIGTERM), or 128 + the signal that killed it.
func TestE2EMCPRunPassesSignals(t *testing.T) {
	w := newMCPWorld(t)
	w.fixes("", "grantwire activations activate mcp-probe builtin:chat --scopes use")
	w.fixes("PROBE_API_KEY="+w.key+"\n", "grantwire configure mcp-probe --from-stdin")
	for _, tc := range []struct {
		sig  syscall.Signal
		exit int
	}{
		{syscall.SIGTERM, 42},
		{syscall.SIGINT, 128 + int(syscall.SIGINT)},
	} {
		s := w.run(t)
		st := s.status(t)
		require.NoError(t, s.cmd.Process.Signal(tc.sig))
		// The server ends of the signal alone: stdin is still open.
		require.NoError(t, waitGone(st.PID), "%v ends the server", tc.sig)
		require.Equal(t, tc.exit, s.close(w), "%v: %s", tc.sig, s.stderr.String())
	}
}

// waitGone waits until pid no longer runs (it may have been reaped already).
func waitGone(pid int) error {
	for i := 0; i < 100; i++ {
		if err := syscall.Kill(pid, 0); err != nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("process %d still runs", pid)
}

// A server whose command is not found exits 127 with a message, as a shell would.
func TestE2EMCPRunCommandNotFound(t *testing.T) {
	w := newMCPWorld(t)
	require.Equal(t, 0, w.gw("", "activations", "activate", "mcp-missing", probeAgent, "--scopes", "use").code)
	require.Equal(t, 0, w.gw("", "configure", "mcp-missing").code)
	r := w.gw("", "mcp", "run", "mcp-missing", "--agent", probeAgent)
	require.Equal(t, 127, r.code, r.stderr)
	require.Contains(t, r.stderr, "is not on PATH")
	require.Empty(t, r.stdout, "nothing on the MCP channel")
}

// mcp config prints entries that point at this binary with this home and catalog, hold no
// secret, warn about what is not ready yet, and work as printed: a Go SDK client started
// from the printed entry reaches the server with its key.
func TestE2EMCPConfig(t *testing.T) {
	w := newMCPWorld(t)
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	r := w.gwJSON("", 0, &cfg, "mcp", "config", "mcp-probe", "--agent", probeAgent)
	bin, err := filepath.EvalSymlinks(w.bin)
	require.NoError(t, err)
	entry := cfg.MCPServers["mcp-probe"]
	require.Equal(t, bin, entry.Command, "the absolute path of the binary")
	// The world's home is the default one (~/.grantwire), its keyring service is not.
	require.Equal(t, []string{"--keyring-service", w.service, "--catalog", w.catalog,
		"mcp", "run", "mcp-probe", "--agent", probeAgent}, entry.Args)
	require.Contains(t, r.stderr, `"warning"`, "not granted yet: a warning")
	require.Contains(t, r.stderr, "grantwire activations activate mcp-probe builtin:chat --scopes use")

	w.fixes("", "grantwire activations activate mcp-probe builtin:chat --scopes use")
	w.fixes("PROBE_API_KEY="+w.key+"\n", "grantwire configure mcp-probe --from-stdin")
	r = w.gw("", "mcp", "config", "mcp-probe", "--agent", probeAgent)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr, "ready: no warning")

	// The printed entry, started as an MCP client would: with an environment that names
	// no grantwire setting.
	env := w.env
	w.env = withoutVars(env, "GRANTWIRE_HOME", "GRANTWIRE_CATALOG", "GRANTWIRE_KEYRING_SERVICE")
	sess := w.connect(t, append([]string{entry.Command}, entry.Args...)...)
	require.True(t, sess.status(t).Matches)
	require.Equal(t, 0, sess.close(w))
	w.env = env

	// Each client's own shape (--format), checked against a schema written from that
	// client's documentation (testdata/mcpconfig): the same command in each, and VS Code's
	// entry, started as VS Code starts it, reaches the server too. The schemas tell the
	// shapes apart (an mcpServers file is not a VS Code file, nor the reverse).
	printed := map[string]string{}
	for _, format := range []string{"claude", "cursor", "vscode"} {
		r := w.gw("", "mcp", "config", "mcp-probe", "--agent", probeAgent, "--format", format)
		require.Equal(t, 0, r.code, r.stderr)
		require.Empty(t, r.stderr, "ready: no warning")
		requireSchema(t, format, r.stdout, true)
		printed[format] = r.stdout
	}
	requireSchema(t, "vscode", printed["claude"], false)
	requireSchema(t, "claude", printed["vscode"], false)
	var vs struct {
		Servers map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"servers"`
	}
	require.NoError(t, json.Unmarshal([]byte(printed["vscode"]), &vs))
	require.Equal(t, "stdio", vs.Servers["mcp-probe"].Type)
	require.Equal(t, entry.Command, vs.Servers["mcp-probe"].Command)
	require.Equal(t, entry.Args, vs.Servers["mcp-probe"].Args)
	w.env = withoutVars(env, "GRANTWIRE_HOME", "GRANTWIRE_CATALOG", "GRANTWIRE_KEYRING_SERVICE")
	sess = w.connect(t, append([]string{vs.Servers["mcp-probe"].Command}, vs.Servers["mcp-probe"].Args...)...)
	require.True(t, sess.status(t).Matches)
	require.Equal(t, 0, sess.close(w))
	w.env = env
	e := w.fail(2, "USAGE", "mcp", "config", "mcp-probe", "--agent", probeAgent, "--format", "zed")
	require.Contains(t, e.Error.Message, "claude, cursor, vscode")

	// Another home is named by --home.
	other := filepath.Join(w.home, "other-home")
	r = w.gwJSON("", 0, &cfg, "--home", other, "mcp", "config", "mcp-probe", "--agent", probeAgent)
	require.Equal(t, []string{"--home", other, "--keyring-service", w.service, "--catalog", w.catalog,
		"mcp", "run", "mcp-probe", "--agent", probeAgent}, cfg.MCPServers["mcp-probe"].Args)

	// A remote server goes through mcp proxy; mcp run refuses it with that command.
	r = w.gwJSON("", 0, &cfg, "mcp", "config", "mcp-notes", "mcp-probe", "--agent", probeAgent)
	require.Equal(t, []string{"--keyring-service", w.service, "--catalog", w.catalog,
		"mcp", "proxy", "mcp-notes", "--agent", probeAgent}, cfg.MCPServers["mcp-notes"].Args)
	require.Len(t, cfg.MCPServers, 2)
	require.Contains(t, r.stderr, "grantwire activations activate mcp-notes builtin:chat --scopes use")
	e = w.fail(2, "USAGE", "mcp", "run", "mcp-notes", "--agent", probeAgent)
	require.Contains(t, e.Error.Message, "grantwire mcp proxy mcp-notes --agent builtin:chat")

	// Errors before the gate are errors.
	w.fail(1, "UNKNOWN_CONNECTOR", "mcp", "config", "mcp-nothing", "--agent", probeAgent)
	w.fail(3, "CONFIGURATION", "mcp", "config", "google", "--agent", probeAgent)
	w.fail(2, "USAGE", "mcp", "config", "mcp-probe")
}

// requireSchema checks doc against testdata/mcpconfig/<format>.schema.json: that it
// matches (want) or that it does not.
func requireSchema(t *testing.T, format, doc string, want bool) {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("testdata", "mcpconfig", format+".schema.json"))
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	require.NoError(t, err, doc)
	if err := sch.Validate(v); want {
		require.NoError(t, err, "%s's shape: %s", format, doc)
	} else {
		require.Error(t, err, "%s's schema accepted %s", format, doc)
	}
}

func withoutVars(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// Usage errors of mcp run and mcp config are found before anything is read (no keyring).
func TestBinaryMCPRunUsage(t *testing.T) {
	w := newBB(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "run"}, "mcp run needs the name of an MCP server"},
		{[]string{"mcp", "run", "mcp-github"}, `required flag(s) "agent" not set`},
		{[]string{"mcp", "run", "mcp-github", "--stdio", "--agent", "builtin:chat"}, "unknown flag: --stdio"},
		{[]string{"mcp", "run", "mcp-github", "extra", "--agent", "builtin:chat"}, "grantwire mcp run mcp-github --agent builtin:chat -- extra"},
		{[]string{"mcp", "config", "--agent", "builtin:chat"}, "mcp config needs the name of at least one MCP server"},
	} {
		r := w.run("", tc.args...)
		require.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, tc.args)
		require.Empty(t, r.stdout, "%v: nothing on stdout, the MCP channel", tc.args)
	}
}

// `mcp run` on a remote server a person added names `mcp proxy` (issue 20 §1.4; the other
// way round, mcp proxy on a local server, is TestEveryFixRuns/mcp-run).
func TestE2EMCPRunOnAnAddedRemoteServerNamesProxy(t *testing.T) {
	w := newMCPWorld(t)
	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", "https://notes.example.com/mcp").code)
	w.fixes("", "grantwire activations activate notes builtin:chat --scopes use")
	e := w.fail(2, "USAGE", "mcp", "run", "notes", "--agent", probeAgent)
	require.Contains(t, e.Error.Message, "grantwire mcp proxy notes --agent builtin:chat")
}

// `mcp config` names the binary as the user runs it, found on PATH through a symlink, not
// the versioned path the symlink points at (issue 20 §1.15).
func TestE2EMCPConfigNamesTheBinaryOnPath(t *testing.T) {
	w := newMCPWorld(t)
	versioned := filepath.Join(w.home, "opt", "grantwire-9.9.9")
	bin := filepath.Join(w.home, "bin")
	require.NoError(t, os.MkdirAll(versioned, 0o755))
	require.NoError(t, os.MkdirAll(bin, 0o755))
	raw, err := os.ReadFile(w.bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(versioned, "grantwire"), raw, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(versioned, "grantwire"), filepath.Join(bin, "grantwire")))
	cmd := exec.Command(filepath.Join(bin, "grantwire"), "--json", "mcp", "config", "mcp-probe", "--agent", probeAgent)
	cmd.Env = append(withoutVars(w.env, "PATH"), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = w.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Args[0] = "grantwire" // as a shell runs it, found on PATH
	require.NoError(t, cmd.Run(), errb.String())
	w.record(out.String(), errb.String())
	var cfg struct {
		MCPServers map[string]struct {
			Command string `json:"command"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &cfg), out.String())
	require.Equal(t, filepath.Join(bin, "grantwire"), cfg.MCPServers["mcp-probe"].Command)
}

// Everything missing is said at once: mcp config and mcp run name both the activation and
// the configuration a fresh server needs (issue 20 §1.13).
func TestE2EMCPSaysEverythingMissingAtOnce(t *testing.T) {
	w := newMCPWorld(t)
	r := w.gw("", "mcp", "config", "mcp-probe", "--agent", probeAgent)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "grantwire activations activate mcp-probe builtin:chat --scopes use")
	require.Contains(t, r.stderr, "grantwire configure mcp-probe --from-stdin")
	e := w.fail(4, "AGENT_NOT_GRANTED", "mcp", "run", "mcp-probe", "--agent", probeAgent)
	require.Contains(t, e.Error.Message, "then ")
	require.Contains(t, e.Error.Message, "(fix: grantwire configure mcp-probe --from-stdin)")
}

// With a tool rule, mcp run relays the JSON-RPC stream (docs/behaviour.md#tools): the list
// holds the tools of the rule, a call of another is refused with the fix, the key still
// reaches the server and nothing else (the planted key is searched in every output), and
// signals still pass: the server's exit ends grantwire though the client's stdin is open.
func TestE2EMCPRunRelaysWithAToolRule(t *testing.T) {
	w := newMCPWorld(t)
	w.fixes("", "grantwire activations activate mcp-probe builtin:chat --scopes use --tools key_status")
	w.fixes("PROBE_API_KEY="+w.key+"\n", "grantwire configure mcp-probe --from-stdin")
	s := w.run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := s.cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	st := s.status(t)
	require.True(t, st.Present && st.Matches, "the key reached the server through the relay")
	_, err = s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "other_tool"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "TOOL_NOT_ALLOWED")
	require.Contains(t, err.Error(), "grantwire activations activate mcp-probe builtin:chat --tools key_status,other_tool")
	w.record(err.Error())
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, waitGone(st.PID))
	require.Equal(t, 42, s.close(w), s.stderr.String())

	// A rule of no tool: the list is empty and the one tool refused.
	r := w.gw("", "activations", "activate", "mcp-probe", "builtin:chat", "--tools", "")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Tools of mcp-probe for builtin:chat: none.")
	s = w.run(t)
	tools, err = s.cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, tools.Tools)
	_, err = s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "key_status"})
	require.ErrorContains(t, err, "grantwire activations activate mcp-probe builtin:chat --tools key_status")
}

// BenchmarkBinaryMCPRun is what going through `grantwire mcp run` costs an MCP client per
// server start: one op is a Go SDK client starting the server over stdio, the initialize
// handshake, one tool call and the shutdown (stdin closed, the server exits).
//
//	direct: the test server (internal/cmd/mcp-keyprobe) started with its key in the
//	        environment, as a client configuration holding the secret would
//	mcp-run: `grantwire mcp run mcp-probe --agent builtin:chat` on the real Secret Service:
//	        the launch gate, the keyring read, then the same server
//
// rss-MB is grantwire's resident memory while the server runs (mcp-run only), read from
// /proc after the tool call.
//
//	scripts/with-keyring.sh go test ./cmd/grantwire -run '^$' -bench BinaryMCPRun -benchtime 20x -count 3
func BenchmarkBinaryMCPRun(b *testing.B) {
	testenv.RequireKeyring(b, "./cmd/grantwire")
	bin, probe := grantwireBinary(b), probeBinary(b)
	home := b.TempDir()
	service := "grantwire.bench." + testenv.RandHex(4)
	defer func() { _ = gokeyring.DeleteAll(service) }()
	key := "sk-bench-" + testenv.RandHex(16)
	sum := sha256.Sum256([]byte(key))
	probeArgs := []string{"--key-env", "PROBE_API_KEY", "--want-sha256", hex.EncodeToString(sum[:])}

	var doc map[string]map[string]any
	if err := json.Unmarshal(catalog.Default().JSON(), &doc); err != nil {
		b.Fatal(err)
	}
	doc["connectors"]["mcp-probe"] = map[string]any{
		"type": "mcp_server", "display_name": "Key probe", "tier": "test", "command": probe, "args": probeArgs,
		"env": []map[string]any{{"key": "PROBE_API_KEY", "required": true, "secret": true, "description": "the key"}},
	}
	raw, _ := json.Marshal(doc)
	catFile := filepath.Join(home, "catalog.json")
	if err := os.WriteFile(catFile, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GRANTWIRE_HOME=" + filepath.Join(home, ".grantwire"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "GRANTWIRE_KEYRING_SERVICE=" + service, "GRANTWIRE_CATALOG=" + catFile,
		"DBUS_SESSION_BUS_ADDRESS=" + os.Getenv("DBUS_SESSION_BUS_ADDRESS"), "XDG_RUNTIME_DIR=" + os.Getenv("XDG_RUNTIME_DIR")}
	for _, c := range []struct{ stdin, args string }{
		{"", "activations activate mcp-probe builtin:chat --scopes use"},
		{"PROBE_API_KEY=" + key + "\n", "configure mcp-probe --from-stdin"},
	} {
		cmd := exec.Command(bin, strings.Fields(c.args)...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(c.stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v: %s", c.args, err, out)
		}
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
	session := func(b *testing.B, cmd *exec.Cmd, rss *float64) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "key_status"})
		if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), "matches:true") {
			b.Fatalf("key_status: %v %v", err, res)
		}
		if rss != nil {
			*rss += vmRSSMB(cmd.Process.Pid)
		}
		if err := cs.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command(probe, probeArgs...)
			cmd.Env = append(append([]string{}, env...), "PROBE_API_KEY="+key)
			session(b, cmd, nil)
		}
	})
	b.Run("mcp-run", func(b *testing.B) {
		var rss float64
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command(bin, "mcp", "run", "mcp-probe", "--agent", "builtin:chat")
			cmd.Env = env
			session(b, cmd, &rss)
		}
		b.ReportMetric(rss/float64(b.N), "rss-MB")
	})
}

// vmRSSMB is a process's resident set size in MB (Linux), 0 when unknown.
func vmRSSMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			_, _ = fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}
