package main_test

// Every fix grantwire prints is a command that works (issue 10, item 10). internal/fixes
// lists the kinds of fix; conformance's TestEveryCorpusFixIsKnown requires every fix the
// corpus produces to be of one of them, and TestMain every fix any test of this package saw
// printed. TestEveryFixRuns takes each kind in turn on the real parts (the built binary, the
// private Secret Service, the local authorization server, the stand-in browser): it builds
// the state that makes grantwire print such a fix, checks the fix printed is of that kind,
// runs it as printed (placeholders such as <id> and <scopes> filled in, the secrets it asks
// for on stdin), requires that it was accepted (no usage error, no unknown command or
// flag), and that the state moved on: the command that failed then succeeds, or what the
// fix was for is done.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/fixes"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/mcptest"
	"github.com/grantwire/grantwire/internal/testworld/pgtest"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// fixWorld is an e2e world for one kind of fix.
type fixWorld struct {
	*e2e
	kind     string
	clientID string
	secret   string
}

func newFixWorld(t *testing.T, kind string) *fixWorld {
	t.Helper()
	return newFixWorldSecret(t, kind, "bb-client-secret-"+randHex(8))
}

// newFixWorldSecret is a fixWorld whose server's client has that secret ("": a public
// client, which authenticates with none).
func newFixWorldSecret(t *testing.T, kind, secret string) *fixWorld {
	t.Helper()
	cfg := authserver.Config{ClientID: "bb-fix-client", ClientSecret: secret, ClientAuth: authserver.AuthDefault}
	return &fixWorld{e2e: newE2E(t, cfg), kind: kind, clientID: cfg.ClientID, secret: secret}
}

// newFixWorldCfg is a fixWorld on an authorization server configured by cfg.
func newFixWorldCfg(t *testing.T, kind string, cfg authserver.Config) *fixWorld {
	t.Helper()
	return &fixWorld{e2e: newE2E(t, cfg), kind: kind, clientID: cfg.ClientID, secret: cfg.ClientSecret}
}

// mcpServer starts a remote MCP server (go-sdk) whose tokens the world's authorization
// server issues.
func (w *fixWorld) mcpServer(t *testing.T) *mcptest.Server {
	t.Helper()
	srv, err := mcptest.Start(mcptest.Options{
		Issuer: w.srv.URL(),
		Verify: func(token string) (mcptest.Token, error) {
			info, err := w.srv.Verify(token)
			return mcptest.Token{Scopes: info.Scopes, Expires: info.Expires, Resource: info.Resource}, err
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// withBrowser makes connect open the stand-in browser, which consents.
func (w *fixWorld) withBrowser() { w.env = append(w.env, "BROWSER="+browserBinary(w.t)) }

// connected configures the client and connects google with scopes, granting agents.
func (w *fixWorld) connected(scopes string, agents ...string) {
	w.t.Helper()
	w.configureClient(w.clientID, w.secret)
	args := []string{"google", "--scopes", scopes}
	for _, a := range agents {
		args = append(args, "--grant-agent", a)
	}
	r := w.connectNoBrowser(args...)
	require.Equal(w.t, 0, r.code, r.stderr)
}

// failing runs a command that fails (--json) and returns its fix, which must be of the
// world's kind.
func (w *fixWorld) failing(exit int, stdin string, args ...string) string {
	w.t.Helper()
	var e cliError
	w.gwJSON(stdin, exit, &e, args...)
	return w.ofKind(e.Error.Fix)
}

// ofKind requires a fix to be of the world's kind and returns it.
func (w *fixWorld) ofKind(fix string) string {
	w.t.Helper()
	k, ok := fixes.Match(fix)
	require.True(w.t, ok, "a fix of no known kind: %q", fix)
	require.Equal(w.t, w.kind, k.Name, "the fix %q", fix)
	return fix
}

// run runs a fix as printed, with placeholders replaced, and requires that it was
// accepted: not a usage error, no unknown command or flag.
func (w *fixWorld) run(fix, stdin string, fill map[string]string) bbResult {
	w.t.Helper()
	words := fixes.Words(fix)
	for i, word := range words {
		if v, ok := fill[word]; ok {
			words[i] = v
		}
	}
	for _, word := range words {
		require.False(w.t, strings.HasPrefix(word, "<") && strings.HasSuffix(word, ">"), "%q: placeholder %s left unfilled", fix, word)
	}
	var r bbResult
	switch words[0] {
	case "grantwire":
		args := words[1:]
		if len(args) > 0 && (args[0] == "connect" || (args[0] == "mcp" && len(args) > 1 && args[1] == "auth")) && contains(args, "--no-browser") {
			s := w.start(nil, append(args, "--timeout", "60s")...)
			consent(w.t, s.waitURL(w.t))
			r = s.wait(w.t)
			w.record(r.stdout, r.stderr)
		} else {
			r = w.gw(stdin, args...)
		}
	default:
		cmd := exec.Command(words[0], words[1:]...)
		cmd.Dir = w.home
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		r = bbResult{code: exitCode(cmd.Run()), stdout: out.String(), stderr: errb.String()}
		w.record(r.stdout, r.stderr)
	}
	require.NotEqual(w.t, 2, r.code, "the fix %q is a usage error:\n%s", fix, r.stderr)
	for _, bad := range []string{"unknown command", "unknown flag", "unknown shorthand"} {
		require.NotContains(w.t, r.stderr, bad, "the fix %q", fix)
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ok requires a command to succeed.
func (w *fixWorld) ok(stdin string, args ...string) bbResult {
	w.t.Helper()
	var r bbResult
	if args[0] == "token" {
		r = w.token(args[1:]...) // its stdout holds the token
	} else {
		r = w.gw(stdin, args...)
	}
	require.Equal(w.t, 0, r.code, "%v after the fix:\n%s", args, r.stderr)
	return r
}

func (w *fixWorld) ledger(name string) string {
	return filepath.Join(w.home, ".grantwire", filepath.FromSlash(name))
}

// onPath puts a do-nothing executable of that name on the binary's PATH.
func (w *fixWorld) onPath(name string) {
	w.t.Helper()
	dir := filepath.Join(w.home, "bin")
	require.NoError(w.t, os.MkdirAll(dir, 0o700))
	require.NoError(w.t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 0\n"), 0o700))
	for i, e := range w.env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			w.env[i] = "PATH=" + dir + string(os.PathListSeparator) + p
		}
	}
}

// writeAgents writes the home's agents.json.
func (w *fixWorld) writeAgents(doc string) {
	w.t.Helper()
	require.NoError(w.t, os.MkdirAll(filepath.Join(w.home, ".grantwire"), 0o700))
	require.NoError(w.t, os.WriteFile(w.ledger("agents.json"), []byte(doc), 0o600))
}

// fixRuns runs each kind of fix; see TestEveryFixRuns.
var fixRuns = map[string]func(t *testing.T){
	"grants-grant": func(t *testing.T) {
		w := newFixWorld(t, "grants-grant")
		w.connected(gmailRead)
		fix := w.failing(4, "", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
		require.Equal(t, "grantwire grants grant google builtin:email --scopes "+gmailRead, fix)
		require.Equal(t, 0, w.run(fix, "", nil).code)
		w.ok("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
		// No scope asked: no fix grants the empty list of scopes (a token carries every
		// scope of its connection, so a request of no scope gets none; issue 20 §2.5): the
		// usage error points at the command's help only.
		e := w.fail(2, "USAGE", "token", "google", "--agent", "builtin:chat")
		require.Equal(t, "grantwire token --help", e.Error.Fix)
	},
	"connect": func(t *testing.T) {
		w := newFixWorld(t, "connect")
		w.withBrowser()
		w.configureClient(w.clientID, w.secret)
		w.ok("", "grants", "grant", "google", "builtin:email", "--scopes", gmailRead)
		// Not connected yet.
		fix := w.failing(4, "", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
		require.Equal(t, "grantwire connect google --scopes "+gmailRead, fix)
		w.run(fix, "", nil)
		w.ok("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
		// The connection lacks a scope the agent was granted.
		w.ok("", "grants", "grant", "google", "builtin:email", "--scopes", gmailRead+","+gmailSend)
		fix = w.failing(4, "", "token", "google", "--agent", "builtin:email", "--scopes", gmailSend)
		require.Equal(t, "grantwire connect google --scopes "+gmailRead+","+gmailSend, fix)
		w.run(fix, "", nil)
		w.ok("", "token", "google", "--agent", "builtin:email", "--scopes", gmailSend)
		// The client was rotated: the stale connection is cleared, and the fix reconnects.
		id, secret := w.clientID+"-2", w.secret+"-2"
		w.srv.Configure(func(c *authserver.Config) { c.ClientID, c.ClientSecret = id, secret })
		w.configureClient(id, secret)
		fix = w.failing(4, "", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
		require.Equal(t, "grantwire connect google --scopes "+gmailRead+","+gmailSend, fix)
		w.run(fix, "", nil)
		w.ok("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	},
	"connect-no-browser": func(t *testing.T) {
		w := newFixWorld(t, "connect-no-browser")
		w.configureClient(w.clientID, w.secret)
		// No browser, no terminal: nobody can complete an authorization here.
		fix := w.failing(4, "", "connect", "google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
		require.Equal(t, "grantwire connect google --scopes "+gmailRead+" --grant-agent builtin:email --no-browser", fix)
		r := w.run(fix, "", nil)
		require.Equal(t, 0, r.code, r.stderr)
		w.ok("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	},
	"connect-device": func(t *testing.T) {
		// The local server's device codes ask for a poll a second.
		cfg := authserver.Config{ClientID: "bb-fix-client", ClientSecret: "bb-client-secret-" + randHex(8),
			ClientAuth: authserver.AuthDefault, DeviceInterval: 1, DeviceExpiresIn: 60}
		w := &fixWorld{e2e: newE2E(t, cfg), kind: "connect-device", clientID: cfg.ClientID, secret: cfg.ClientSecret}
		w.configureClient(w.clientID, w.secret)
		// No browser, no terminal, scopes the provider's device authorization allows.
		fix := w.failing(4, "", "connect", "google", "--scopes", "openid", "--grant-agent", "builtin:email")
		require.Equal(t, "grantwire connect google --scopes openid --grant-agent builtin:email --device", fix)
		w.srv.ScriptDevice("", authserver.DeviceUser{Polls: []string{"authorization_pending"}, Decision: authserver.DeviceApprove})
		r := w.run(fix, "", nil)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, 1, w.srv.Stats().DeviceExchanges)
		w.ok("", "token", "google", "--agent", "builtin:email", "--scopes", "openid")
	},
	"connect-with-scopes-for-agents": func(t *testing.T) {
		w := newFixWorld(t, "connect-with-scopes-for-agents")
		w.withBrowser()
		w.writeAgents(`{"version": 1, "agents": [{"id": "installed:helper", "name": "Helper"}]}`)
		w.configureClient(w.clientID, w.secret)
		fix := w.failing(3, "", "connect", "google", "--grant-agent", "installed:helper")
		require.Equal(t, "grantwire connect google --scopes <scopes> --grant-agent installed:helper", fix)
		r := w.run(fix, "", map[string]string{"<scopes>": gmailRead})
		require.Equal(t, 0, r.code, r.stderr)
		w.ok("", "token", "google", "--agent", "installed:helper", "--scopes", gmailRead)
	},
	"configure-client": func(t *testing.T) {
		// A provider whose catalog entry takes a client without a secret.
		w := newFixWorldSecret(t, "configure-client", "")
		w.patchGoogle(map[string]any{"client_secret_required": false})
		w.withBrowser()
		fix := w.failing(3, "", "connect", "google", "--scopes", gmailRead)
		require.Equal(t, "grantwire configure google --client-id <id>", fix)
		w.run(fix, "", map[string]string{"<id>": w.clientID})
		w.ok("", "connect", "google", "--scopes", gmailRead)
		require.Equal(t, []string{authserver.AuthNone}, w.srv.ClientAuthSeen(), "a client without a secret sends none")
	},
	"configure-client-with-secret": func(t *testing.T) {
		w := newFixWorld(t, "configure-client-with-secret")
		w.withBrowser()
		w.plant(w.secret)
		// No client at all; google requires a secret.
		fix := w.failing(3, "", "connect", "google", "--scopes", gmailRead)
		require.Equal(t, "grantwire configure google --client-id <id> --client-secret-stdin", fix)
		w.run(fix, w.secret+"\n", map[string]string{"<id>": w.clientID})
		w.ok("", "connect", "google", "--scopes", gmailRead)

		// A client id from the environment and no secret: the provider answers
		// invalid_client, which names the missing secret; the same fix stores it.
		v := newFixWorld(t, "configure-client-with-secret")
		v.withBrowser()
		v.plant(v.secret)
		v.env = append(v.env, "GRANTWIRE_GOOGLE_CLIENT_ID="+v.clientID)
		r := v.gw("", "--json", "connect", "google", "--scopes", gmailRead) // the browser consents, then the exchange fails
		require.Equal(t, 3, r.code, r.stderr)
		var e cliError
		require.NoError(t, json.Unmarshal([]byte(r.stderr[strings.Index(r.stderr, "\n{")+1:]), &e), r.stderr)
		require.Equal(t, "CONFIGURATION", e.Error.Code)
		require.Contains(t, e.Error.Message, "invalid_client")
		require.Contains(t, e.Error.Message, "no client secret is configured (neither stored with the client nor in GRANTWIRE_GOOGLE_CLIENT_SECRET)")
		v.run(v.ofKind(e.Error.Fix), v.secret+"\n", map[string]string{"<id>": v.clientID})
		v.ok("", "connect", "google", "--scopes", gmailRead)
	},
	"configure-mcp": func(t *testing.T) {
		w := newFixWorld(t, "configure-mcp")
		w.onPath("uvx") // mcp-fetch's command: test checks it is there
		fix := w.failing(3, "", "connect", "mcp-fetch")
		require.Equal(t, "grantwire configure mcp-fetch", fix)
		var tres struct {
			OK  bool   `json:"ok"`
			Fix string `json:"fix"`
		}
		w.gwTest(4, &tres, "mcp-fetch")
		require.Equal(t, fix, tres.Fix, "test says the same")
		w.run(fix, "", nil)
		w.gwTest(0, &tres, "mcp-fetch")
		require.True(t, tres.OK)
	},
	"configure-mcp-from-stdin": func(t *testing.T) {
		w := newFixWorld(t, "configure-mcp-from-stdin")
		key := "bb-brave-key-" + randHex(8)
		w.plant(key)
		var tres struct {
			OK  bool   `json:"ok"`
			Fix string `json:"fix"`
		}
		w.gwTest(4, &tres, "mcp-brave-search")
		fix := w.ofKind(tres.Fix)
		require.Equal(t, "grantwire configure mcp-brave-search --from-stdin", fix)
		w.run(fix, "BRAVE_API_KEY="+key+"\n", nil)
		w.gwTest(0, &tres, "mcp-brave-search")
		require.True(t, tres.OK)
		// connect names it too, for a server that takes keys
		require.Equal(t, fix, w.failing(3, "", "connect", "mcp-brave-search"))
	},
	"configure-mcp-set-from-stdin": func(t *testing.T) {
		// Issue 20 §2.2: a configuration missing its secret keeps what was given with --set,
		// so that the fix, run with the missing key on stdin, completes it.
		w := newFixWorld(t, "configure-mcp-set-from-stdin")
		token := "xoxb-bb-" + randHex(8)
		w.plant(token)
		var e cliError
		w.gwJSON("", 3, &e, "configure", "mcp-slack", "--set", "SLACK_TEAM_ID=T123", "--set", "SLACK_CHANNEL_IDS=C1,C2 C3")
		require.Equal(t, "CONFIGURATION", e.Error.Code)
		require.Equal(t, "configuration error: mcp-slack needs SLACK_BOT_TOKEN", e.Error.Message)
		fix := w.ofKind(e.Error.Fix)
		require.Equal(t, "grantwire configure mcp-slack --set 'SLACK_CHANNEL_IDS=C1,C2 C3' --set SLACK_TEAM_ID=T123 --from-stdin", fix)
		r := w.run(fix, "SLACK_BOT_TOKEN="+token+"\n", nil)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Configured mcp-slack: SLACK_BOT_TOKEN, SLACK_CHANNEL_IDS, SLACK_TEAM_ID stored in the credential store.")
		// An optional key given alone: kept too.
		w.gwJSON("", 3, &e, "configure", "mcp-gitlab", "--set", "GITLAB_API_URL=https://gitlab.example.com/api/v4")
		require.Equal(t, "grantwire configure mcp-gitlab --set GITLAB_API_URL=https://gitlab.example.com/api/v4 --from-stdin", w.ofKind(e.Error.Fix))
		require.Contains(t, e.Error.Message, "GITLAB_PERSONAL_ACCESS_TOKEN")
	},
	"mcp-auth": func(t *testing.T) {
		// No browser, no terminal: mcp auth names itself with --no-browser, which prints the
		// URL for a browser anywhere on this machine (the test consents through it).
		w := newFixWorldCfg(t, "mcp-auth", authserver.Config{})
		srv := w.mcpServer(t)
		w.ok("", "mcp", "add", "notes", "--url", srv.URL)
		fix := w.failing(4, "", "mcp", "auth", "notes")
		require.Equal(t, "grantwire mcp auth notes --no-browser", fix)
		r := w.run(fix, "", nil)
		require.Equal(t, 0, r.code, r.stderr)
		var list struct {
			Remote []struct {
				ID         string `json:"id"`
				Authorized bool   `json:"authorized"`
			} `json:"remote"`
		}
		w.gwJSON("", 0, &list, "mcp", "list")
		found := false
		for _, s := range list.Remote {
			found = found || (s.ID == "notes" && s.Authorized)
		}
		require.True(t, found, "notes is authorized: %+v", list.Remote)
	},
	"mcp-add": func(t *testing.T) {
		// A remote server nobody added: the fix adds it (the URL filled in), and mcp auth
		// then knows it.
		w := newFixWorldCfg(t, "mcp-add", authserver.Config{})
		srv := w.mcpServer(t)
		fix := w.failing(1, "", "mcp", "logout", "notes")
		require.Equal(t, "grantwire mcp add notes --url <url>", fix)
		w.run(fix, "", map[string]string{"<url>": srv.URL})
		r := w.mcpAuthNoBrowser("notes")
		require.Equal(t, 0, r.code, r.stderr)
	},
	"mcp-add-url": func(t *testing.T) {
		// The metadata announces the server as localhost, it was added as 127.0.0.1: both
		// are named, and the printed mcp add under the announced address authorizes
		// (issue 20 §1.6).
		w := newFixWorldCfg(t, "mcp-add-url", authserver.Config{})
		srv, err := mcptest.Start(mcptest.Options{
			Issuer: w.srv.URL(),
			Verify: func(token string) (mcptest.Token, error) {
				info, err := w.srv.Verify(token)
				return mcptest.Token{Scopes: info.Scopes, Expires: info.Expires, Resource: info.Resource}, err
			},
			Resource: func(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) },
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		announced := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
		w.ok("", "mcp", "add", "notes", "--url", srv.URL)
		var e cliError
		w.gwJSON("", 5, &e, "mcp", "auth", "notes", "--no-browser")
		require.Contains(t, e.Error.Message, "announces the resource "+announced+", not "+srv.URL)
		fix := w.ofKind(e.Error.Fix)
		require.Equal(t, "grantwire mcp add notes --url "+announced, fix)
		w.run(fix, "", nil)
		require.Equal(t, 0, w.mcpAuthNoBrowser("notes").code)
	},
	"mcp-logout": func(t *testing.T) {
		// A catalog remote server cannot be removed: the fix logs out of it (issue 20 §1.5).
		w := newMCPWorld(t)
		e := w.fail(3, "CONFIGURATION", "mcp", "remove", "mcp-notes")
		require.Equal(t, "grantwire mcp logout mcp-notes", e.Error.Fix)
		w.fixes("", e.Error.Fix)
	},
	"mcp-run": func(t *testing.T) {
		// mcp proxy on a local server: the fix is mcp run, which serves it (issue 20 §1.4).
		w := newMCPWorld(t)
		w.fixes("", "grantwire activations activate mcp-probe builtin:chat --scopes use")
		w.fixes("PROBE_API_KEY="+w.key+"\n", "grantwire configure mcp-probe --from-stdin")
		e := w.fail(3, "CONFIGURATION", "mcp", "proxy", "mcp-probe", "--agent", probeAgent)
		require.Equal(t, "grantwire mcp run mcp-probe --agent builtin:chat", e.Error.Fix)
		require.NotContains(t, e.Error.Message, "mcp add")
		sess := w.connect(t, append([]string{w.bin}, strings.Fields(e.Error.Fix)[1:]...)...)
		require.True(t, sess.status(t).Matches, "the printed fix serves the local server")
		require.Equal(t, 0, sess.close(w))
	},
	"mcp-add-client": func(t *testing.T) {
		// An authorization server without registration: mcp auth asks for a client
		// registered there; the printed mcp add (the id filled in, the secret on stdin)
		// gives one, and mcp auth then succeeds with it.
		w := newFixWorldCfg(t, "mcp-add-client", authserver.Config{ClientID: "bb-mcp-client", ClientSecret: "bb-mcp-secret-" + randHex(8), NoRegistration: true})
		srv := w.mcpServer(t)
		w.ok("", "mcp", "add", "corp", "--url", srv.URL)
		fix := w.failing(3, "", "mcp", "auth", "corp", "--no-browser")
		w.run(fix, w.secret+"\n", map[string]string{"<id>": w.clientID})
		r := w.mcpAuthNoBrowser("corp")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "(preregistered client)")
	},
	"mcp-add-machine-client": func(t *testing.T) {
		// A client-credentials server whose pre-registered client the credential store
		// lost: mcp auth prints the mcp add that gives it again (the id filled in, the
		// secret on stdin), and mcp auth then succeeds with no browser.
		w := newFixWorldCfg(t, "mcp-add-machine-client", authserver.Config{ClientID: "bb-machine", ClientSecret: "bb-machine-secret-" + randHex(8),
			NoRegistration: true, ClientCredentials: true})
		srv := w.mcpServer(t)
		w.ok(w.secret+"\n", "mcp", "add", "ci", "--url", srv.URL, "--grant", "client-credentials", "--client-id", w.clientID,
			"--issuer", w.srv.URL(), "--client-secret-stdin")
		w.deletePrereg("ci")
		fix := w.failing(3, "", "mcp", "auth", "ci")
		w.run(fix, w.secret+"\n", map[string]string{"<id>": w.clientID})
		r := w.ok("", "mcp", "auth", "ci")
		require.Contains(t, r.stdout, "the client-credentials grant runs again")
		require.Equal(t, 1, w.srv.Stats().MachineGrants)
	},
	"activate": func(t *testing.T) {
		// mcp run refuses a granted agent the user has not activated (the gate refuses
		// before anything is launched, so the server's command need not exist here).
		w := newFixWorld(t, "activate")
		w.ok("", "configure", "mcp-fetch")
		w.ok("", "grants", "grant", "mcp-fetch", "builtin:coder", "--scopes", "use")
		fix := w.failing(4, "", "mcp", "run", "mcp-fetch", "--agent", "builtin:coder")
		require.Equal(t, "grantwire activations activate mcp-fetch builtin:coder", fix)
		w.run(fix, "", nil)
		var doc activationsDoc
		w.gwJSON("", 0, &doc, "activations", "list", "mcp-fetch")
		require.Equal(t, []activationRow{{Connector: "mcp-fetch", Agent: "builtin:coder"}}, doc.Activations)
	},
	"activate-with-scopes": func(t *testing.T) {
		w := newFixWorld(t, "activate-with-scopes")
		w.ok("", "configure", "mcp-fetch")
		fix := w.failing(3, "", "activations", "activate", "mcp-fetch", "installed:stranger")
		require.Equal(t, "grantwire activations activate mcp-fetch installed:stranger --scopes use", fix)
		w.run(fix, "", nil)
		var doc activationsDoc
		w.gwJSON("", 0, &doc, "activations", "list", "mcp-fetch")
		require.Equal(t, []activationRow{{Connector: "mcp-fetch", Agent: "installed:stranger"}}, doc.Activations)
	},
	// A tool rule that does not list the tool: the check (what mcp run and mcp proxy ask
	// before a tools/call) refuses it; the fix adds it to the rule.
	"activate-tools": toolRuleFix("activate-tools", "fetch_page", "fetch",
		"grantwire activations activate mcp-fetch builtin:coder --tools fetch,fetch_page", "fetch_page"),
	// A tool whose name no rule can hold (a server's own odd name) is allowed by removing
	// the rule.
	"activate-all-tools": toolRuleFix("activate-all-tools", "", "fetch page",
		"grantwire activations activate mcp-fetch builtin:coder --all-tools"),
	"catalog": func(t *testing.T) {
		w := newFixWorld(t, "catalog")
		fix := w.failing(1, "", "status", "gogle")
		r := w.run(fix, "", nil)
		require.Equal(t, 0, r.code)
		require.Contains(t, r.stdout, "google", "the catalog shows the ids there are")
		w.ok("", "status", "google")
	},
	"catalog-set": func(t *testing.T) {
		// A catalog file that points google at another server but keeps Google's issuer
		// (issue 20 §2.1): the fix writes the issuer that server names into the file.
		w := newFixWorld(t, "catalog-set")
		raw, err := os.ReadFile(w.catalog)
		require.NoError(t, err)
		var doc map[string]map[string]map[string]any
		require.NoError(t, json.Unmarshal(raw, &doc))
		doc["connectors"]["google"]["issuer"] = "https://accounts.google.com"
		raw, _ = json.Marshal(doc)
		require.NoError(t, os.WriteFile(w.catalog, raw, 0o600))
		require.NoError(t, os.Chmod(w.catalog, 0o640))
		w.configureClient(w.clientID, w.secret)
		r := w.connectNoBrowser("google", "--scopes", gmailRead)
		require.NotEqual(t, 0, r.code)
		require.Contains(t, r.stderr, "names the issuer "+w.srv.URL()+" where google's catalog entry expects https://accounts.google.com")
		var fix string
		for _, f := range fixes.Printed(r.stderr) {
			fix = w.ofKind(f)
		}
		require.Equal(t, "grantwire --catalog "+w.catalog+" catalog set google issuer="+w.srv.URL(), fix, r.stderr)
		r = w.run(fix, "", nil)
		require.Equal(t, 0, r.code, r.stderr)
		info, err := os.Stat(w.catalog)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the file keeps its mode")
		r = w.ok("", "catalog", "google")
		require.Contains(t, r.stdout, w.srv.URL()+" (every authorization response must name it)")
		require.Equal(t, 0, w.connectNoBrowser("google", "--scopes", gmailRead).code)
		// A value the policy refuses writes nothing.
		before, _ := os.ReadFile(w.catalog)
		var e cliError
		w.gwJSON("", 3, &e, "catalog", "set", "google", "isuer=https://login.example.com") // a typo: an unknown field
		after, _ := os.ReadFile(w.catalog)
		require.Equal(t, string(before), string(after), "a refused change writes nothing: %s", e.Error.Message)
		require.Contains(t, e.Error.Message, "the catalog "+w.catalog+": ")
		require.Contains(t, e.Error.Message, "isuer")
		require.True(t, strings.HasSuffix(e.Error.Message, "; nothing was written"), e.Error.Message)
		entries, _ := os.ReadDir(filepath.Dir(w.catalog))
		for _, de := range entries {
			require.False(t, strings.HasPrefix(de.Name(), ".catalog.json."), "no temporary file is left: %s", de.Name())
		}
	},
	"catalog-entry": func(t *testing.T) {
		w := newFixWorld(t, "catalog-entry")
		r := w.ok("", "grants", "grant", "google", "builtin:email", "--scopes", "gmail.readonly")
		var fix string
		for _, f := range fixes.Printed(r.stderr) {
			if k, _ := fixes.Match(f); k.Name == "catalog-entry" {
				fix = f
			}
		}
		require.Equal(t, "grantwire catalog google", fix, "the warning names the command: %s", r.stderr)
		r = w.run(fix, "", nil)
		require.Equal(t, 0, r.code)
		require.Contains(t, r.stdout, gmailRead, "the catalog shows the exact scope")
		r = w.ok("", "grants", "grant", "google", "builtin:email", "--scopes", gmailRead)
		require.NotContains(t, r.stderr, "warning")
	},
	"agents-list": func(t *testing.T) {
		w := newFixWorld(t, "agents-list")
		w.configureClient(w.clientID, w.secret)
		fix := w.failing(1, "", "connect", "google", "--scopes", gmailRead, "--grant-agent", "builtin:emial")
		r := w.run(fix, "", nil)
		require.Equal(t, 0, r.code)
		require.Contains(t, r.stdout, "builtin:email", "the list shows the ids there are")
	},
	"import-from-stdin": func(t *testing.T) {
		w := newFixWorld(t, "import-from-stdin")
		rt := w.srv.Issue([]string{gmailModify, gmailSend})
		w.plant(w.secret, rt)
		forwarded := map[string]any{"client_id": w.clientID, "refresh_token": rt, "scopes": []string{gmailModify, gmailSend},
			"account_email": "host@example.com", "grant_agents": []string{"builtin:email"}}
		body, _ := json.Marshal(forwarded)
		fix := w.failing(3, string(body), "import", "google", "--from-stdin")
		require.Equal(t, "grantwire import google --from-stdin", fix)
		forwarded["client_secret"] = w.secret
		body, _ = json.Marshal(forwarded)
		require.Equal(t, 0, w.run(fix, string(body), nil).code)
		w.ok("", "token", "google", "--agent", "builtin:email", "--scopes", gmailSend)
	},
	"mcp-list": func(t *testing.T) {
		w := newFixWorld(t, "mcp-list")
		raw, err := os.ReadFile(w.catalog)
		require.NoError(t, err)
		var doc map[string]map[string]any
		require.NoError(t, json.Unmarshal(raw, &doc))
		doc["connectors"]["remote-docs"] = map[string]any{"type": "mcp_remote", "display_name": "Docs", "tier": "community",
			"category": "docs", "url": "https://mcp.example.com/mcp"}
		raw, _ = json.Marshal(doc)
		require.NoError(t, os.WriteFile(w.catalog, raw, 0o600))
		var tres struct {
			Fix string `json:"fix"`
		}
		w.gwTest(3, &tres, "remote-docs")
		r := w.run(w.ofKind(tres.Fix), "", nil)
		require.Equal(t, 0, r.code, r.stderr)
	},
	"move-aside": func(t *testing.T) {
		w := newFixWorld(t, "move-aside")
		w.withBrowser()
		w.configureClient(w.clientID, w.secret)
		for _, c := range []struct {
			ledger string
			cmd    []string
		}{
			{"connectors/grants.json", []string{"grants", "list"}},
			{"connectors/activations.json", []string{"activations", "list"}},
			{"mcp_servers.json", []string{"mcp", "list"}},
			{"agents.json", []string{"agents", "list"}},
		} {
			p := w.ledger(c.ledger)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
			require.NoError(t, os.WriteFile(p, []byte(`{"torn": `), 0o600))
			fix := w.failing(5, "", c.cmd...)
			require.Equal(t, "mv "+p+" "+p+".corrupt", fix)
			w.run(fix, "", nil)
			w.ok("", c.cmd...)
			require.FileExists(t, p+".corrupt", "moved aside, not deleted")
		}
		// state.json is only a mirror: connect goes through and its warning names the fix.
		p := w.ledger("connectors/state.json")
		require.NoError(t, os.WriteFile(p, []byte(`{"google": 3`), 0o600))
		r := w.ok("", "connect", "google", "--scopes", gmailRead)
		var fix string
		for _, f := range fixes.Printed(r.stderr) {
			fix = w.ofKind(f)
		}
		require.Equal(t, "mv "+p+" "+p+".corrupt", fix)
		w.run(fix, "", nil)
		r = w.ok("", "connect", "google", "--scopes", gmailRead)
		require.NotContains(t, r.stderr, "warning")
		// disconnect and revoke go through an unreadable ledger and name the fix.
		w.ok("", "grants", "grant", "google", "builtin:email", "--scopes", gmailRead)
		p = w.ledger("connectors/activations.json")
		require.NoError(t, os.WriteFile(p, []byte(`[]`), 0o600))
		for _, cmd := range [][]string{{"grants", "revoke", "google", "builtin:email"}, {"disconnect", "google"}} {
			r = w.ok("", cmd...)
			fix = ""
			for _, f := range fixes.Printed(r.stderr) {
				fix = w.ofKind(f)
			}
			require.Equal(t, "mv "+p+" "+p+".corrupt", fix, "%v", cmd)
		}
		require.Empty(t, w.keyring("google:default"), "disconnect deleted the secret")
		w.run(fix, "", nil)
		w.ok("", "activations", "list")

		// A directory where a ledger belongs is moved aside the same way.
		w2 := newFixWorld(t, "move-aside")
		d := w2.ledger("connectors/grants.json")
		require.NoError(t, os.MkdirAll(d, 0o700))
		fix = w2.failing(5, "", "grants", "list")
		require.Equal(t, "mv "+d+" "+d+".corrupt", fix)
		w2.run(fix, "", nil)
		w2.ok("", "grants", "list")
	},
	"help": func(t *testing.T) {
		w := newFixWorld(t, "help")
		var e cliError
		w.gwJSON("", 2, &e, "grants", "grant", "google")
		require.Equal(t, "grantwire grants grant --help", w.ofKind(e.Error.Fix))
		r := w.gw("", "grants", "grant", "google")
		require.Contains(t, r.stderr, "see: grantwire grants grant --help")
		// Every command's --help works, as every usage error of the command names it.
		paths := [][]string{{}}
		for len(paths) > 0 {
			path := paths[0]
			paths = paths[1:]
			fix := strings.Join(append(append([]string{"grantwire"}, path...), "--help"), " ")
			r := w.run(w.ofKind(fix), "", nil)
			require.Equal(t, 0, r.code, fix)
			for _, sub := range subcommands(r.stdout) {
				if sub != "help" && sub != "completion" {
					paths = append(paths, append(append([]string(nil), path...), sub))
				}
			}
		}
	},
	"opa-build": func(t *testing.T) {
		w := newFixWorld(t, "opa-build")
		var e cliError
		w.gwJSON("", 2, &e, "--engine", "rego", "catalog")
		fix := w.ofKind(e.Error.Fix)
		// The build writes ./grantwire where it is run: here into a directory of the test.
		out := filepath.Join(t.TempDir(), "grantwire")
		words := fixes.Words(fix)
		require.Equal(t, "grantwire", words[5])
		words[5] = out
		cmd := exec.Command(words[0], words[1:]...)
		cmd.Dir = testenv.Root(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", fix, b)
		w.bin = out
		w.ok("", "--engine", "rego", "catalog")
	},
	"store-move-aside": func(t *testing.T) {
		// A ledger row of the store that is not JSON: every call that needs it fails with
		// the store's move-aside as its fix; run in the same environment (GRANTWIRE_STORE),
		// it moves the row aside, and the ledger starts empty.
		for _, home := range []string{"default", "team-2"} {
			w := newFixWorld(t, "store-move-aside")
			db := pgtest.Database(t, "./cmd/grantwire")
			w.plant(pgtest.Password(db))
			key := filepath.Join(w.home, "store.key")
			require.Equal(t, 0, w.gw("", "store", "new-key", key).code)
			w.env = append(w.env, "GRANTWIRE_STORE="+db, "GRANTWIRE_STORE_KEY_FILE="+key, "GRANTWIRE_STORE_HOME="+home)
			w.gwJSON("", 0, nil, "grants", "grant", "mcp-github", "builtin:chat", "--scopes", "")
			conn, err := pgx.Connect(t.Context(), db)
			require.NoError(t, err)
			defer conn.Close(context.Background())
			_, err = conn.Exec(t.Context(), "update grantwire.ledgers set doc = $1 where home = $2 and name = $3", []byte("{not json"), home, "connectors/grants.json")
			require.NoError(t, err)
			fix := w.failing(5, "", "grants", "list")
			r := w.run(fix, "", nil)
			require.Equal(t, 0, r.code, r.stderr)
			var grants grantsDoc
			w.gwJSON("", 0, &grants, "grants", "list")
			require.Empty(t, grants.Grants, "the ledger starts empty")
			var moved []byte
			require.NoError(t, conn.QueryRow(t.Context(), "select doc from grantwire.ledgers where home = $1 and name = $2", home, "connectors/grants.json.corrupt").Scan(&moved))
			require.Equal(t, "{not json", string(moved), "the unreadable row is kept aside")
		}
	},
	"store-check": func(t *testing.T) {
		// A PostgreSQL store that is stopped: every call fails with the check as its fix;
		// the check says the server is down, and once the server is started again (what the
		// message asks) it says so and the same call succeeds, with nothing else done.
		w := newFixWorld(t, "store-check")
		cl := pgtest.NewCluster(t, "./cmd/grantwire")
		w.plant(pgtest.Password(cl.URL))
		key := filepath.Join(w.home, "store.key")
		require.Equal(t, 0, w.gw("", "store", "new-key", key).code)
		w.env = append(w.env, "GRANTWIRE_STORE="+cl.URL, "GRANTWIRE_STORE_KEY_FILE="+key)
		w.gwJSON("", 0, nil, "grants", "grant", "mcp-github", "builtin:chat", "--scopes", "")
		require.NoError(t, cl.Stop())
		var e cliError
		w.gwJSON("", 5, &e, "grants", "list")
		require.Equal(t, "STORE_UNAVAILABLE", e.Error.Code)
		require.Contains(t, e.Error.Message, "store unavailable")
		fix := w.ofKind(e.Error.Fix)
		words := fixes.Words(fix)
		out, err := exec.Command(words[0], words[1:]...).CombinedOutput()
		require.Equal(t, 2, exitCode(err), "pg_isready: no response while the server is stopped: %s", out)
		require.NoError(t, cl.Start())
		r := w.run(fix, "", nil)
		require.Equal(t, 0, r.code, "pg_isready: accepting connections: %s", r.stdout)
		var grants grantsDoc
		w.gwJSON("", 0, &grants, "grants", "list")
		require.Equal(t, []grantRow{{Connector: "mcp-github", Agent: "builtin:chat", Scopes: []string{}}}, grants.Grants, "nothing was lost")
	},
	"keyring-session": func(t *testing.T) {
		// No Secret Service answers (issue 20 §2.3): the fix starts the project's private one
		// for the shell it is run in, from the checkout; the same command then succeeds there.
		w := newFixWorld(t, "keyring-session")
		w.env = append(w.env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(w.home, "no-bus"))
		mem := "MEMORY_FILE_PATH=" + filepath.Join(w.home, "memory.jsonl")
		var e cliError
		w.gwJSON("", 5, &e, "configure", "mcp-memory", "--set", mem)
		require.Equal(t, "INSECURE_STORE", e.Error.Code)
		require.Contains(t, e.Error.Message, "gnome-keyring", "the message still says what to install for a desktop")
		fix := w.ofKind(e.Error.Fix)
		shell := exec.Command("bash", "-c", fix+` || exit 90
grantwire configure mcp-memory --set "$MEM"; rc=$?
grantwire --json status mcp-memory || rc=91
eval "$(scripts/keyring-session.sh stop)"
exit $rc`)
		shell.Dir = testenv.Root(t)
		shell.Env = append(slices.Clone(w.env), "MEM="+mem, "PATH="+filepath.Dir(w.bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := shell.CombinedOutput()
		w.record(string(out))
		require.NoError(t, err, "%s, then configure, in one shell:\n%s", fix, out)
		require.Contains(t, string(out), "Configured mcp-memory: MEMORY_FILE_PATH stored in the credential store.")
		require.Contains(t, string(out), "Secret Service stopped")
	},
	"keyring-unlock": func(t *testing.T) {
		// A locked keyring with its daemon running (issue 20 §2.3): the fix unlocks that
		// daemon's collection (gnome-keyring-daemon --unlock started a second daemon and left
		// it locked); a wrong password leaves it locked and says so.
		w := newFixWorld(t, "keyring-unlock")
		password := "kr-" + randHex(8)
		pwFile := filepath.Join(w.home, "keyring-password")
		require.NoError(t, os.WriteFile(pwFile, []byte(password+"\n"), 0o600))
		start := exec.Command("bash", "scripts/keyring-session.sh", "start", "--keep", filepath.Join(w.home, "keyring"))
		start.Dir = testenv.Root(t)
		start.Env = append(os.Environ(), "GRANTWIRE_KEYRING_PASSWORD_FILE="+pwFile)
		out, err := start.Output()
		require.NoError(t, err)
		session := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
			require.True(t, ok, line)
			session[k] = strings.Trim(v, "'")
		}
		t.Cleanup(func() {
			stop := exec.Command("bash", "scripts/keyring-session.sh", "stop")
			stop.Dir = testenv.Root(t)
			stop.Env = append(os.Environ(), "GRANTWIRE_KEYRING_SESSION="+session["GRANTWIRE_KEYRING_SESSION"])
			_ = stop.Run()
		})
		bus := session["DBUS_SESSION_BUS_ADDRESS"]
		w.env = append(w.env, "DBUS_SESSION_BUS_ADDRESS="+bus)
		mem := "MEMORY_FILE_PATH=" + filepath.Join(w.home, "memory.jsonl")
		w.ok("", "configure", "mcp-memory", "--set", mem)
		// Lock the collection as a screen locker does: the Secret Service's Lock method.
		lock := exec.Command("gdbus", "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
			"--method", "org.freedesktop.Secret.Service.Lock", "['/org/freedesktop/secrets/collection/login']")
		lock.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS="+bus)
		b, err := lock.CombinedOutput()
		require.NoError(t, err, "%s", b)
		var e cliError
		w.gwJSON("", 5, &e, "configure", "mcp-memory", "--set", mem)
		require.Equal(t, "INSECURE_STORE", e.Error.Code)
		require.Contains(t, e.Error.Message, "locked")
		fix := w.ofKind(e.Error.Fix)
		r := w.run(fix, "not-"+password+"\n", nil)
		require.Equal(t, 5, r.code, "a wrong password: %s", r.stderr)
		require.Contains(t, r.stderr, "is still locked")
		require.Contains(t, r.stderr, "fix: "+fix)
		r = w.run(fix, password+"\n", nil)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Unlocked /org/freedesktop/secrets/collection/login.")
		require.NotContains(t, r.stdout+r.stderr, password)
		w.ok("", "configure", "mcp-memory", "--set", mem)
		w.ok("", "status", "mcp-memory")
	},
	"bundle": func(t *testing.T) {
		w := newFixWorld(t, "bundle")
		w.env = slices.DeleteFunc(w.env, func(e string) bool { return strings.HasPrefix(e, "GRANTWIRE_CATALOG=") }) // a bundle carries its catalog
		good := filepath.Join(w.home, "good.tar.gz")
		opa := &fixWorld{e2e: &e2e{bbWorld: &bbWorld{t: t, bin: opaBinary(t), home: w.home, env: w.env}}, kind: "bundle"}
		require.Equal(t, 0, opa.bbWorld.run("", "policy", "build", "-o", good).code)
		bad := filepath.Join(w.home, "tampered.tar.gz")
		require.NoError(t, os.WriteFile(bad, tamperBundle(t, good), 0o600))
		var e cliError
		w.gwJSON("", 5, &e, "--bundle", bad, "catalog")
		fix := w.ofKind(e.Error.Fix)
		// The fix is prose around a command of the OPA build: run that command.
		cmd, _, ok := strings.Cut(strings.TrimPrefix(fix, "build the bundle with "), ", or run without --bundle")
		require.True(t, ok, fix)
		rebuilt := filepath.Join(w.home, "rebuilt.tar.gz")
		r := opa.run(cmd, "", map[string]string{"FILE": rebuilt})
		require.Equal(t, 0, r.code, r.stderr)
		w.ok("", "--bundle", rebuilt, "catalog")
		w.ok("", "catalog") // or without --bundle
	},
}

// subcommands lists the "Available Commands" of a help text.
func subcommands(help string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "Available Commands:") || strings.HasSuffix(line, "Commands:"):
			in = true
		case in && strings.HasPrefix(line, "  "):
			if f := strings.Fields(line); len(f) > 0 {
				out = append(out, f[0])
			}
		case in && strings.TrimSpace(line) == "":
		default:
			in = false
		}
	}
	return out
}

// TestEveryFixRuns runs every kind of fix internal/fixes lists (see the file's comment).
func TestEveryFixRuns(t *testing.T) {
	requireKeyring(t)
	start := time.Now()
	for _, k := range fixes.Kinds {
		run, ok := fixRuns[k.Name]
		switch {
		case k.Unrunnable != "" && ok:
			t.Errorf("%s is listed as unrunnable and has a run", k.Name)
		case k.Unrunnable != "":
			t.Logf("not run: %s: %s", k.Name, k.Unrunnable)
		case !ok:
			t.Errorf("no run for the fixes of kind %s (%s)", k.Name, k.Pattern)
		default:
			t.Run(k.Name, run)
		}
	}
	for name := range fixRuns {
		found := false
		for _, k := range fixes.Kinds {
			found = found || k.Name == name
		}
		if !found {
			t.Errorf("a run for %s, a kind internal/fixes does not list", name)
		}
	}
	t.Logf("%d kinds of fix run in %s", len(fixRuns), time.Since(start).Round(time.Millisecond))
}

// toolRuleFix is the case of a fix that lets builtin:coder call a tool of mcp-fetch its tool
// rule does not allow: the check refuses the tool with the fix want; after the fix the tool
// and the others still allowed pass the check.
func toolRuleFix(name, rule, tool, want string, stillAllowed ...string) func(*testing.T) {
	return func(t *testing.T) {
		w := newFixWorld(t, name)
		w.ok("", "configure", "mcp-fetch")
		w.ok("", "activations", "activate", "mcp-fetch", "builtin:coder", "--scopes", "use", "--tools", rule)
		fix := w.failing(4, "", "activations", "check", "mcp-fetch", "builtin:coder", tool)
		require.Equal(t, want, fix)
		w.run(fix, "", nil)
		for _, allowed := range append([]string{tool}, stillAllowed...) {
			w.ok("", "activations", "check", "mcp-fetch", "builtin:coder", allowed)
		}
	}
}
