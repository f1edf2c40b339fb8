package main_test

// End-to-end tests of the built binary on the real parts: the private Secret Service
// (scripts/keyring-lib.sh, started by `make test`), real files and file locks under a temp
// home, and the local OAuth authorization server (internal/testworld/authserver) on 127.0.0.1, which
// the google entry of a catalog override points at. Consent is automatic: the test plays
// the user's browser by fetching the URL the CLI prints (--no-browser), or the CLI opens
// the stand-in browser (internal/cmd/browser) through $BROWSER.
//
// Every test searches everything the CLI printed and every file under its home for the
// planted secrets (client secrets, MCP API keys) and for the tokens the server issued
// (they all start with tokenPrefix); only `token`'s stdout, a pipe here, may hold an
// access token.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire"
	gwbundle "github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/internal/fixes"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/mcp"
)

// tokenPrefix starts every token (code, refresh, access) the local server issues.
const tokenPrefix = "bbtok"

const (
	gmailRead   = "https://www.googleapis.com/auth/gmail.readonly"
	gmailModify = "https://www.googleapis.com/auth/gmail.modify"
	gmailSend   = "https://www.googleapis.com/auth/gmail.send"
)

var browser = testenv.Binary{Pkg: "github.com/grantwire/grantwire/internal/cmd/browser"}

// browserBinary builds the stand-in browser (internal/cmd/browser) once.
func browserBinary(t testing.TB) string { return browser.Path(t) }

// bbWorld is a private world for the binary: its own HOME and GRANTWIRE_HOME, and an
// environment with nothing that could open a browser or reach the user's credential store
// (phase 2 adds the private Secret Service's DBUS_SESSION_BUS_ADDRESS here).
type bbWorld struct {
	t    testing.TB
	bin  string
	home string
	env  []string
}

func newBB(t testing.TB) *bbWorld {
	t.Helper()
	home := t.TempDir()
	w := &bbWorld{t: t, bin: grantwireBinary(t), home: home}
	w.env = []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"GRANTWIRE_HOME=" + filepath.Join(home, ".grantwire"),
		"LANG=C.UTF-8",
		// One cache of compiled policy code for every test of the run, as one user has.
		"XDG_CACHE_HOME=" + testenv.Dir(t, "cache"),
	}
	return w
}

type bbResult struct {
	code           int
	stdout, stderr string
}

func (w *bbWorld) run(stdin string, args ...string) bbResult {
	w.t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Env = w.env
	cmd.Dir = w.home
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(w.t, err)
	}
	fixes.Record(w.t.Name(), out.String()+"\n"+errb.String())
	return bbResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// decisionLog is the world's decision log file, under its home (the leak search reads it).
func (w *bbWorld) decisionLog() string { return filepath.Join(w.home, "decisions.jsonl") }

// useDecisionLog gives every later command the world's decision log
// (GRANTWIRE_DECISION_LOG) and returns its path.
func (w *bbWorld) useDecisionLog() string {
	w.env = append(w.env, "GRANTWIRE_DECISION_LOG="+w.decisionLog())
	return w.decisionLog()
}

// requireDecisionsOf requires a decision of each operation in the world's decision log.
func (w *bbWorld) requireDecisionsOf(ops ...string) {
	w.t.Helper()
	log, err := os.ReadFile(w.decisionLog())
	require.NoError(w.t, err)
	for _, op := range ops {
		require.Contains(w.t, string(log), `"op":"`+op+`"`, "the decision log holds %s", op)
	}
}

// homeFile is the file at rel (slash-separated) under the world's grantwire home, and
// whether it exists.
func (w *bbWorld) homeFile(rel string) (string, bool) {
	w.t.Helper()
	doc, err := os.ReadFile(filepath.Join(w.home, ".grantwire", filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	require.NoError(w.t, err)
	return string(doc), true
}

// e2e is a bbWorld on the real parts: its own keyring service, the local authorization
// server and a catalog whose google entry points at it.
type e2e struct {
	*bbWorld
	srv     *authserver.Server
	service string
	catalog string // the override file
	authURL string // the authorization endpoint start watches for; empty: srv's

	mu      sync.Mutex
	printed []string // everything the binary printed, but token's stdout
	planted []string // secret values that must never appear
}

func newE2E(t testing.TB, cfg authserver.Config) *e2e {
	t.Helper()
	requireKeyring(t)
	cfg.TokenPrefix = tokenPrefix
	srv, err := authserver.Start(cfg, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	w := &e2e{bbWorld: newBB(t), srv: srv, service: "grantwire.test." + randHex(6)}
	t.Cleanup(func() { _ = gokeyring.DeleteAll(w.service) })
	if cfg.ClientSecret != "" {
		w.plant(cfg.ClientSecret)
	}

	w.catalog = localGoogleCatalog(t, srv, w.home)
	w.useServiceAndCatalog()
	return w
}

// useServiceAndCatalog gives the world's processes its keyring service on the private
// Secret Service and its catalog override, and searches for leaks when the test ends.
func (w *e2e) useServiceAndCatalog() {
	w.env = append(w.env,
		"GRANTWIRE_KEYRING_SERVICE="+w.service,
		"GRANTWIRE_CATALOG="+w.catalog,
		"DBUS_SESSION_BUS_ADDRESS="+os.Getenv("DBUS_SESSION_BUS_ADDRESS"),
		"XDG_RUNTIME_DIR="+os.Getenv("XDG_RUNTIME_DIR"),
	)
	w.t.Cleanup(w.assertNoLeaks)
}

// localGoogleCatalog writes dir/catalog.json: the embedded catalog with google's
// endpoints on the local server, which names itself as Google does.
func localGoogleCatalog(t testing.TB, srv *authserver.Server, dir string) string {
	t.Helper()
	cat, err := catalog.Load(nil)
	require.NoError(t, err)
	var doc map[string]map[string]map[string]any
	require.NoError(t, json.Unmarshal(cat.JSON(), &doc))
	g := doc["connectors"]["google"]
	g["authorization_url"], g["token_url"], g["userinfo_url"] = srv.AuthorizationURL(), srv.TokenURL(), srv.UserinfoURL()
	// Google names itself in every authorization response (RFC 9207) and revokes
	// (RFC 7009); so does the local server standing in for it.
	g["issuer"], g["revocation_url"] = srv.URL(), srv.RevocationURL()
	g["device_authorization_url"] = srv.DeviceAuthorizationURL() // RFC 8628, for its limited-input scopes
	srv.Configure(func(c *authserver.Config) { c.Issuer = srv.URL() })
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	file := filepath.Join(dir, "catalog.json")
	require.NoError(t, os.WriteFile(file, raw, 0o600))
	return file
}

func (w *e2e) plant(secrets ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.planted = append(w.planted, secrets...)
}

func (w *e2e) record(s ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.printed = append(w.printed, s...)
}

// gw runs the binary with stdin and records what it printed.
func (w *e2e) gw(stdin string, args ...string) bbResult {
	w.t.Helper()
	r := w.run(stdin, args...)
	w.record(r.stdout, r.stderr)
	return r
}

// token runs `grantwire token …`: its stdout is a pipe here and may hold a token; its
// stderr is recorded like any output.
func (w *e2e) token(args ...string) bbResult {
	w.t.Helper()
	r := w.run("", append([]string{"token"}, args...)...)
	w.record(r.stderr)
	return r
}

// gwJSON runs a command with --json, requires the exit code and decodes stdout (exit 0)
// or the error object on stderr into v.
func (w *e2e) gwJSON(stdin string, exit int, v any, args ...string) bbResult {
	w.t.Helper()
	r := w.gw(stdin, append([]string{"--json"}, args...)...)
	require.Equal(w.t, exit, r.code, "%v\nstdout: %s\nstderr: %s", args, r.stdout, r.stderr)
	out := r.stdout
	if exit != 0 {
		out = r.stderr
		require.Empty(w.t, r.stdout, "%v: an error prints nothing on stdout", args)
	}
	if v != nil {
		// Decode into a zero value: a map or struct reused across calls keeps nothing.
		rv := reflect.ValueOf(v).Elem()
		rv.Set(reflect.Zero(rv.Type()))
		if err := json.Unmarshal([]byte(out), v); err != nil {
			w.t.Fatalf("%v: --json output does not parse: %v\n%s", args, err, out)
		}
	}
	return r
}

// gwTest runs `test … --json`, which prints its verdict on stdout also when it fails.
func (w *e2e) gwTest(exit int, v any, args ...string) {
	w.t.Helper()
	r := w.gw("", append([]string{"--json", "test"}, args...)...)
	require.Equal(w.t, exit, r.code, "%v\nstdout: %s\nstderr: %s", args, r.stdout, r.stderr)
	require.Empty(w.t, r.stderr)
	rv := reflect.ValueOf(v).Elem()
	rv.Set(reflect.Zero(rv.Type()))
	require.NoError(w.t, json.Unmarshal([]byte(r.stdout), v), r.stdout)
}

// cliError is the --json error object on stderr.
type cliError struct {
	Error struct {
		Code          string   `json:"code"`
		Message       string   `json:"message"`
		Fix           string   `json:"fix"`
		Exit          int      `json:"exit"`
		MissingScopes []string `json:"missing_scopes"`
		Path          string   `json:"path"`
	} `json:"error"`
}

func (w *e2e) fail(exit int, code string, args ...string) cliError {
	w.t.Helper()
	var e cliError
	w.gwJSON("", exit, &e, args...)
	require.Equal(w.t, code, e.Error.Code, "%v: %s", args, e.Error.Message)
	require.Equal(w.t, exit, e.Error.Exit)
	require.NotEmpty(w.t, e.Error.Message)
	return e
}

// assertNoLeaks searches every output and every file under the home for the planted
// secrets and the tokens the server issued.
func (w *e2e) assertNoLeaks() {
	t := w.t
	w.mu.Lock()
	needles := append([]string{tokenPrefix + "_rt_", tokenPrefix + "_at_", tokenPrefix + "_code_", tokenPrefix + "_device_"}, w.planted...)
	printed := strings.Join(w.printed, "\n")
	w.mu.Unlock()
	for _, n := range needles {
		if strings.Contains(printed, n) {
			t.Errorf("the CLI printed a secret (%.12s…)", n)
		}
	}
	files := 0
	_ = filepath.WalkDir(w.home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
			return nil
		}
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				t.Errorf("%s holds a secret (%.12s…)", p, n)
			}
		}
		return nil
	})
	if files == 0 {
		t.Errorf("no file under %s: the leak search searched nothing", w.home)
	}
}

// keyring reads an entry of the test's keyring service ("" when absent).
func (w *e2e) keyring(user string) string {
	w.t.Helper()
	v, err := gokeyring.Get(w.service, user)
	if errors.Is(err, gokeyring.ErrNotFound) {
		return ""
	}
	require.NoError(w.t, err)
	return v
}

// started is a running command whose stderr is scanned for the authorization URL.
type started struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr bytes.Buffer
	url    chan string
	done   chan struct{}
	code   int
}

func (s *started) errText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// start runs the binary in the background; the first printed authorization URL (the
// CLI prints it indented on its own line) is sent on url.
func (w *e2e) start(extraEnv []string, args ...string) *started {
	w.t.Helper()
	return w.startIn(nil, extraEnv, args...)
}

// startIn is start with the command's standard input (nil: none).
func (w *e2e) startIn(stdin io.Reader, extraEnv []string, args ...string) *started {
	w.t.Helper()
	s := &started{url: make(chan string, 1), done: make(chan struct{})}
	authURL := w.authURL
	if authURL == "" {
		authURL = w.srv.AuthorizationURL()
	}
	s.cmd = exec.Command(w.bin, args...)
	s.cmd.Stdin = stdin
	s.cmd.Env = append(append([]string(nil), w.env...), extraEnv...)
	s.cmd.Dir = w.home
	s.cmd.Stdout = &s.stdout
	pr, pw := io.Pipe()
	s.cmd.Stderr = pw
	require.NoError(w.t, s.cmd.Start())
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.stderr.WriteString(line + "\n")
			s.mu.Unlock()
			u := strings.TrimSpace(line)
			var prompt struct {
				Prompt struct{ URL string } `json:"prompt"`
			}
			if json.Unmarshal([]byte(u), &prompt) == nil && prompt.Prompt.URL != "" {
				u = prompt.Prompt.URL // --json: {"prompt": {"url": …}}
			}
			if !sent && strings.HasPrefix(u, authURL+"?") {
				s.url <- u
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		err := s.cmd.Wait()
		_ = pw.Close()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			s.code = ee.ExitCode()
		} else if err != nil {
			s.code = -1
		}
		close(s.done)
	}()
	w.t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

func (s *started) waitURL(t testing.TB) string {
	t.Helper()
	select {
	case u := <-s.url:
		return u
	case <-s.done:
		t.Fatalf("the command ended (exit %d) before printing the URL:\n%s", s.code, s.errText())
	case <-time.After(30 * time.Second):
		t.Fatalf("no authorization URL within 30 s:\n%s", s.errText())
	}
	return ""
}

func (s *started) wait(t testing.TB) bbResult {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Fatalf("the command did not finish within 60 s:\n%s", s.errText())
	}
	// Let the stderr reader drain.
	time.Sleep(20 * time.Millisecond)
	fixes.Record(t.Name(), s.stdout.String()+"\n"+s.errText())
	return bbResult{code: s.code, stdout: s.stdout.String(), stderr: s.errText()}
}

// consent plays the user's browser: it loads the authorization URL, and the local
// server's automatic consent redirects to the CLI's loopback callback.
func consent(t testing.TB, authURL string) {
	t.Helper()
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get(authURL)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the loopback callback answers the browser")
	require.True(t, strings.HasPrefix(resp.Request.URL.String(), "http://127.0.0.1:"), "the browser ended on the loopback: %s", resp.Request.URL.Redacted())
	require.Equal(t, "/callback", resp.Request.URL.Path)
}

// connectNoBrowser runs `connect --no-browser` and consents through the printed URL.
func (w *e2e) connectNoBrowser(args ...string) bbResult {
	w.t.Helper()
	s := w.start(nil, append([]string{"connect", "--no-browser", "--timeout", "60s"}, args...)...)
	consent(w.t, s.waitURL(w.t))
	r := s.wait(w.t)
	w.record(r.stdout, r.stderr)
	return r
}

func (w *e2e) configureClient(clientID, secret string) {
	w.t.Helper()
	var out struct {
		Connector    string `json:"connector"`
		ClientIDHash string `json:"client_id_hash"`
		HasSecret    bool   `json:"has_secret"`
	}
	w.plant(secret)
	w.gwJSON(secret+"\n", 0, &out, "configure", "google", "--client-id", clientID, "--client-secret-stdin")
	require.Equal(w.t, "google", out.Connector)
	require.True(w.t, out.HasSecret)
	require.Len(w.t, out.ClientIDHash, 8)
	require.Contains(w.t, w.keyring("provider:google"), secret, "the client secret is in the keyring")
}

func (w *e2e) userinfo(access string) int {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.srv.UserinfoURL(), nil)
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(w.t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// statusRow is a row of `status --json`: the Go API's connector status, which the command
// prints.
type statusRow = grantwire.ConnectorStatus

// The --json listings: an object with a named array.
type (
	statusDoc struct {
		Home       string      `json:"home"`
		Service    string      `json:"keyring_service"`
		Connectors []statusRow `json:"connectors"`
	}
	grantRow struct {
		Connector string   `json:"connector"`
		Agent     string   `json:"agent"`
		Scopes    []string `json:"scopes"`
	}
	grantsDoc struct {
		Grants []grantRow `json:"grants"`
	}
	activationRow struct {
		Connector string `json:"connector"`
		Agent     string `json:"agent"`
	}
	activationsDoc struct {
		Activations []activationRow `json:"activations"`
	}
	mcpDoc struct {
		Servers []mcpRow `json:"servers"`
	}
)

func (w *e2e) status(id string) statusRow {
	w.t.Helper()
	var doc statusDoc
	w.gwJSON("", 0, &doc, "status", id)
	rows := doc.Connectors
	require.Len(w.t, rows, 1)
	require.Equal(w.t, id, rows[0].ID)
	return rows[0]
}

// mcpRow is a row of `mcp list --json`: the MCP surface's server, which the command prints.
type mcpRow = mcp.Server

// The main journey on the real parts, every step's --json output checked.
func TestE2EConnectGrantTokenMCPRotateDisconnect(t *testing.T) {
	const clientID = "bb-desktop-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, Account: "ada@example.com"})

	// Before anything: not connected, no client.
	row := w.status("google")
	require.False(t, row.Configured)
	require.False(t, row.ClientConfigured)
	w.fail(3, "CONFIGURATION", "connect", "google", "--scopes", gmailRead, "--no-browser")

	w.configureClient(clientID, secret)
	require.True(t, w.status("google").ClientConfigured)

	// Connect headless: the URL is printed, the test consents through it.
	r := w.connectNoBrowser("google", "--scopes", "openid,"+gmailRead, "--grant-agent", "builtin:email", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var conn struct {
		Connector string              `json:"connector"`
		Account   string              `json:"account"`
		Scopes    []string            `json:"scopes"`
		Granted   map[string][]string `json:"granted"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &conn), r.stdout)
	require.Equal(t, "google", conn.Connector)
	require.Equal(t, "ada@example.com", conn.Account)
	require.ElementsMatch(t, []string{"openid", gmailRead}, conn.Scopes)
	require.ElementsMatch(t, []string{"openid", gmailRead}, conn.Granted["builtin:email"])
	require.Contains(t, r.stderr, "open this URL in a browser")
	st := w.srv.Stats()
	require.Equal(t, 1, st.Authorizations)
	require.Equal(t, 1, st.CodeExchanges)
	require.Contains(t, w.keyring("google:default"), tokenPrefix+"_rt_", "the refresh token is in the keyring")

	row = w.status("google")
	require.True(t, row.Configured)
	require.Equal(t, "ada@example.com", row.Account)
	require.Equal(t, "ok", row.Tripwire)
	require.ElementsMatch(t, []string{"openid", gmailRead}, row.Scopes)
	require.Equal(t, map[string][]string{"builtin:email": {gmailRead, "openid"}}, row.Grants)
	require.NotEmpty(t, w.gw("", "status").stdout)

	// Grants: narrow the email agent to read-only, list them.
	var g struct {
		Connector string   `json:"connector"`
		Agent     string   `json:"agent"`
		Scopes    []string `json:"scopes"`
		Changed   bool     `json:"changed"`
	}
	w.gwJSON("", 0, &g, "grants", "grant", "google", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, []string{gmailRead}, g.Scopes)
	require.True(t, g.Changed)
	var grants grantsDoc
	w.gwJSON("", 0, &grants, "grants", "list")
	require.Equal(t, []grantRow{{"google", "builtin:email", []string{gmailRead}}}, grants.Grants)

	// Token to a pipe: the one connect received (kept in the credential store), accepted
	// by the server.
	tr := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, tr.code, tr.stderr)
	require.Empty(t, tr.stderr)
	access := strings.TrimSpace(tr.stdout)
	require.True(t, strings.HasPrefix(access, tokenPrefix+"_at_"), "token prints the access token alone")
	require.Equal(t, http.StatusOK, w.userinfo(access))
	require.Equal(t, 0, w.srv.Stats().Refreshes, "the token connect received is in the credential store for every process")
	tr = w.token("google", "--agent", "builtin:email", "--scopes", gmailRead, "--json")
	require.Equal(t, 0, tr.code, tr.stderr)
	var tok struct {
		Provider    string   `json:"provider"`
		AccessToken string   `json:"access_token"`
		ExpiresAt   string   `json:"expires_at"`
		Scopes      []string `json:"scopes"`
	}
	require.NoError(t, json.Unmarshal([]byte(tr.stdout), &tok))
	require.Equal(t, "google", tok.Provider)
	require.Equal(t, http.StatusOK, w.userinfo(tok.AccessToken))
	exp, err := time.Parse(time.RFC3339, tok.ExpiresAt)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), exp, 2*time.Minute)
	require.Zero(t, w.srv.Stats().ReuseDetected, "every process refreshed with the current (rotated) refresh token")

	// The gate: an ungranted agent, and scopes beyond the grant, exit 4 with the fix.
	e := w.fail(4, "AGENT_NOT_GRANTED", "token", "google", "--agent", "builtin:calendar", "--scopes", gmailRead)
	require.Equal(t, "grantwire grants grant google builtin:calendar --scopes "+gmailRead, e.Error.Fix)
	e = w.fail(4, "AGENT_NOT_GRANTED", "token", "google", "--agent", "builtin:email", "--scopes", gmailSend)
	require.Equal(t, []string{gmailSend}, e.Error.MissingScopes)
	r = w.gw("", "token", "google", "--agent", "builtin:calendar", "--scopes", gmailRead)
	require.Equal(t, 4, r.code)
	require.Contains(t, r.stderr, "fix: grantwire grants grant google builtin:calendar")
	// Beyond the connection's scopes: CONNECTION_MISSING_SCOPES, with the reconnect command.
	w.gwJSON("", 0, nil, "grants", "grant", "google", "builtin:email", "--scopes", gmailRead+","+gmailModify)
	e = w.fail(4, "CONNECTION_MISSING_SCOPES", "token", "google", "--agent", "builtin:email", "--scopes", gmailModify)
	require.Contains(t, e.Error.Fix, "grantwire connect google --scopes")
	require.Contains(t, e.Error.Fix, gmailModify)

	// `test` fetches a token as the agent and prints none.
	var tres struct {
		Connector string `json:"connector"`
		OK        bool   `json:"ok"`
		Detail    string `json:"detail"`
		Code      string `json:"code"`
	}
	w.gwTest(0, &tres, "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.True(t, tres.OK)
	require.Contains(t, tres.Detail, "builtin:email obtained a token valid until")
	w.gwTest(4, &tres, "google", "--agent", "builtin:chat", "--scopes", gmailRead)
	require.False(t, tres.OK)
	require.Equal(t, "AGENT_NOT_GRANTED", tres.Code)

	// An MCP server: the key from stdin into the keyring, a reference in mcp_servers.json.
	apiKey := "bb-brave-key-" + randHex(8)
	w.plant(apiKey)
	var mc struct {
		Connector string   `json:"connector"`
		EnvKeys   []string `json:"env_keys"`
	}
	w.gwJSON("BRAVE_API_KEY="+apiKey+"\n", 0, &mc, "configure", "mcp-brave-search", "--from-stdin")
	require.Equal(t, []string{"BRAVE_API_KEY"}, mc.EnvKeys)
	require.Equal(t, apiKey, w.keyring("mcp-brave-search:BRAVE_API_KEY"))
	servers, ok := w.homeFile("mcp_servers.json")
	require.True(t, ok)
	require.Contains(t, servers, `"$keyring": "`+w.service+`:mcp-brave-search:BRAVE_API_KEY"`)
	// A second server from a file, with a key the catalog does not require.
	keyFile := filepath.Join(w.home, "github.env")
	ghToken := "bb-github-pat-" + randHex(8)
	w.plant(ghToken)
	require.NoError(t, os.WriteFile(keyFile, []byte("# the PAT\nGITHUB_PERSONAL_ACCESS_TOKEN="+ghToken+"\n"), 0o600))
	w.gwJSON("", 0, &mc, "configure", "mcp-github", "--from-file", keyFile)
	require.Equal(t, []string{"GITHUB_PERSONAL_ACCESS_TOKEN"}, mc.EnvKeys)
	require.NoError(t, os.Remove(keyFile))

	// Activate: one click grants what the agent declares.
	var act struct {
		Connector   string   `json:"connector"`
		Agent       string   `json:"agent"`
		Scopes      []string `json:"scopes"`
		AutoGranted bool     `json:"auto_granted"`
		GrantSource string   `json:"grant_source"`
		Changed     bool     `json:"changed"`
	}
	w.gwJSON("", 0, &act, "activations", "activate", "mcp-brave-search", "builtin:research")
	require.True(t, act.AutoGranted)
	require.Equal(t, "declared", act.GrantSource)
	require.Equal(t, []string{"use"}, act.Scopes)
	w.gwJSON("", 0, &act, "activations", "activate", "mcp-github", "builtin:chat")
	require.Equal(t, "consumes_mcp_servers", act.GrantSource)
	var acts activationsDoc
	w.gwJSON("", 0, &acts, "activations", "list")
	require.Equal(t, []activationRow{{"mcp-brave-search", "builtin:research"}, {"mcp-github", "builtin:chat"}}, acts.Activations)

	// mcp list: names only; --agent: granted AND active.
	var list mcpDoc
	w.gwJSON("", 0, &list, "mcp", "list")
	rows := list.Servers
	require.Len(t, rows, 2)
	require.Equal(t, "mcp-brave-search", rows[0].ID)
	require.True(t, rows[0].InCatalog)
	require.Equal(t, []string{"BRAVE_API_KEY"}, rows[0].EnvKeys)
	require.Equal(t, "npx", rows[0].Command)
	require.Equal(t, []string{"builtin:research"}, rows[0].ActiveFor)
	require.Equal(t, map[string][]string{"builtin:research": {"use"}}, rows[0].Grants)
	require.Equal(t, "mcp-github", rows[1].ID)
	w.gwJSON("", 0, &list, "mcp", "list", "--agent", "builtin:research")
	require.Len(t, list.Servers, 1)
	require.Equal(t, "mcp-brave-search", list.Servers[0].ID)
	var deact struct {
		Active  bool `json:"active"`
		Changed bool `json:"changed"`
	}
	w.gwJSON("", 0, &deact, "activations", "deactivate", "mcp-brave-search", "builtin:research")
	require.True(t, deact.Changed)
	w.gwJSON("", 0, &list, "mcp", "list", "--agent", "builtin:research")
	require.Empty(t, list.Servers, "deactivated: the grant is kept, the tools are hidden")
	r = w.gw("", "mcp", "list", "--agent", "builtin:research")
	require.Contains(t, r.stdout, "No MCP server is visible to builtin:research")
	r = w.gw("", "mcp", "list")
	require.Regexp(t, `(?m)^mcp-brave-search\s+npx -y @brave/brave-search-mcp-server\s+BRAVE_API_KEY\s+builtin:research\s+-$`, r.stdout)
	// The agent reads its key through the gate (test --agent); the value is never printed.
	w.gwTest(0, &tres, "mcp-github", "--agent", "builtin:chat")
	require.Contains(t, tres.Detail, "builtin:chat can read its 1 value(s)")

	// Revoke: idempotent, and the activation goes with the grant.
	var rev struct {
		Changed bool `json:"changed"`
	}
	w.gwJSON("", 0, &rev, "grants", "revoke", "mcp-github", "builtin:chat")
	require.True(t, rev.Changed)
	w.gwJSON("", 0, &rev, "grants", "revoke", "mcp-github", "builtin:chat")
	require.False(t, rev.Changed)
	w.gwJSON("", 0, &acts, "activations", "list", "mcp-github")
	require.Empty(t, acts.Activations)

	// Rotate the client: status reports (read-only), the next use clears and asks again.
	w.configureClient(clientID+"-2", "bb-client-secret-2-"+randHex(8))
	row = w.status("google")
	require.True(t, row.Configured)
	require.Equal(t, "client_rotated", row.Tripwire)
	require.Contains(t, w.keyring("google:default"), tokenPrefix+"_rt_", "status clears nothing")
	e = w.fail(4, "REAUTH_REQUIRED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Contains(t, e.Error.Fix, "grantwire connect google --scopes")
	require.Empty(t, w.keyring("google:default"), "the tripwire cleared the stale connection")
	require.False(t, w.status("google").Configured)
	w.fail(4, "NOT_CONNECTED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)

	// Disconnect wipes grants and activations; idempotent.
	var disc struct {
		Connector     string   `json:"connector"`
		Removed       bool     `json:"removed"`
		RevokedGrants []string `json:"revoked_grants"`
		Deactivated   []string `json:"deactivated"`
	}
	w.gwJSON("", 0, &disc, "disconnect", "google")
	require.Equal(t, []string{"builtin:email"}, disc.RevokedGrants)
	w.gwJSON("", 0, &disc, "disconnect", "mcp-brave-search")
	require.True(t, disc.Removed)
	require.Equal(t, []string{"builtin:research"}, disc.RevokedGrants)
	require.Empty(t, w.keyring("mcp-brave-search:BRAVE_API_KEY"))
	w.gwJSON("", 0, &disc, "disconnect", "mcp-brave-search")
	require.False(t, disc.Removed)
	w.gwJSON("", 0, &disc, "disconnect", "mcp-github")
	w.gwJSON("", 0, &grants, "grants", "list")
	require.Empty(t, grants.Grants)
	w.gwJSON("", 0, &acts, "activations", "list")
	require.Empty(t, acts.Activations)
	w.gwJSON("", 0, &list, "mcp", "list")
	require.Empty(t, list.Servers)
	require.Empty(t, w.keyring("mcp-github:GITHUB_PERSONAL_ACCESS_TOKEN"))
}

// The browser path: the CLI opens $BROWSER (the stand-in browser, which consents); a
// browser that cannot open, in a session nobody can complete, is INTERACTIVE_AUTH_REQUIRED.
func TestE2EConnectThroughTheBrowser(t *testing.T) {
	const clientID = "bb-browser-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, Account: "bob@example.com"})
	w.configureClient(clientID, secret)

	// No browser, no terminal: nobody can complete it. The fix names the device flow where
	// the provider offers it for the scopes (Google for openid), else pasting back.
	e := w.fail(4, "INTERACTIVE_AUTH_REQUIRED", "connect", "google", "--scopes", "openid")
	require.Equal(t, "grantwire connect google --scopes openid --device", e.Error.Fix)
	e = w.fail(4, "INTERACTIVE_AUTH_REQUIRED", "connect", "google", "--scopes", gmailRead)
	require.Equal(t, "grantwire connect google --scopes "+gmailRead+" --no-browser", e.Error.Fix)
	w.env = append(w.env, "BROWSER="+filepath.Join(w.home, "no-such-browser"))
	w.fail(4, "INTERACTIVE_AUTH_REQUIRED", "connect", "google", "--scopes", "openid")
	require.Zero(t, w.srv.Stats().Authorizations)

	w.env = append(w.env, "BROWSER="+browserBinary(t))
	r := w.gw("", "connect", "google", "--scopes", "openid,email", "--grant-agent", "builtin:chat", "--timeout", "60s")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Connected google as bob@example.com with email openid\nGranted google → builtin:chat: email openid\n", r.stdout)
	require.Contains(t, r.stderr, "grantwire: waiting for the google authorization in the browser")
	require.Contains(t, r.stderr, "The browser shows the google authorization")
	require.Equal(t, 1, w.srv.Stats().CodeExchanges)

	// Reconnecting with no scopes over existing grants is refused with the command that
	// keeps them (nothing is opened).
	e = w.fail(3, "CONFIGURATION", "connect", "google")
	require.Contains(t, e.Error.Fix, "grantwire connect google --scopes")
	require.Equal(t, 1, w.srv.Stats().Authorizations)
	tr := w.token("google", "--agent", "builtin:chat", "--scopes", "email")
	require.Equal(t, 0, tr.code, tr.stderr)
}

// Ctrl-C while waiting for the browser: exit 130, nothing stored.
func TestE2ECtrlCDuringTheWaitCancelsCleanly(t *testing.T) {
	const clientID = "bb-cancel-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret})
	w.configureClient(clientID, secret)

	s := w.start(nil, "connect", "google", "--scopes", "openid", "--grant-agent", "builtin:chat", "--no-browser")
	authURL := s.waitURL(t)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	w.requireCancelledNothingStored(t, s.wait(t))
	require.Zero(t, w.srv.Stats().Authorizations)
	// The listener is gone: the URL's redirect leads nowhere.
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(authURL)
	if err == nil {
		_ = resp.Body.Close()
		require.NotEqual(t, http.StatusOK, resp.StatusCode)
	}
}

// Exit codes 1, 3, 4, 5 and 75 on the real parts (2 and 130: above and in blackbox_test).
func TestE2EExitCodes(t *testing.T) {
	const clientID = "bb-codes-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret})

	// 1: unknown connector, unknown agent.
	w.fail(1, "UNKNOWN_CONNECTOR", "status", "nope")
	w.fail(1, "UNKNOWN_CONNECTOR", "grants", "grant", "nope", "builtin:chat", "--scopes", "x")
	w.fail(1, "UNKNOWN_CONNECTOR", "disconnect", "nope")
	w.fail(1, "UNKNOWN_CONNECTOR", "configure", "nope", "--from-stdin")

	// 3: configuration.
	w.fail(3, "CONFIGURATION", "activations", "activate", "google", "builtin:chat")
	w.fail(3, "CONFIGURATION", "configure", "google", "--client-id", "x") // google requires a secret
	w.fail(3, "CONFIGURATION", "activations", "activate", "mcp-brave-search", "builtin:email")

	// 4: not connected, not granted.
	w.gwJSON("", 0, nil, "grants", "grant", "google", "builtin:email", "--scopes", gmailRead)
	e := w.fail(4, "NOT_CONNECTED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Contains(t, e.Error.Fix, "grantwire connect google")
	w.fail(4, "AGENT_NOT_GRANTED", "token", "google", "--agent", "builtin:chat", "--scopes", gmailRead)
	var tres struct {
		OK   bool   `json:"ok"`
		Code string `json:"code"`
		Fix  string `json:"fix"`
	}
	w.gwTest(4, &tres, "mcp-brave-search")
	require.Equal(t, "NOT_CONNECTED", tres.Code)
	require.Equal(t, "grantwire configure mcp-brave-search --from-stdin", tres.Fix)

	// 5: a corrupt ledger is reported with its path and the fix, and left as it was.
	ledger := filepath.Join(w.home, ".grantwire", "connectors", "grants.json")
	before, err := os.ReadFile(ledger)
	require.NoError(t, err)
	broken := append(append([]byte(nil), before...), []byte("}\n")...)
	require.NoError(t, os.WriteFile(ledger, broken, 0o600))
	for _, args := range [][]string{{"grants", "list"}, {"grants", "grant", "google", "builtin:chat", "--scopes", "openid"}, {"token", "google", "--agent", "builtin:email"}} {
		e = w.fail(5, "CORRUPT_LEDGER", args...)
		require.Equal(t, ledger, e.Error.Path, "%v", args)
		require.Contains(t, e.Error.Fix, "mv "+ledger+" "+ledger+".corrupt")
		after, err := os.ReadFile(ledger)
		require.NoError(t, err)
		require.Equal(t, broken, after, "%v: a corrupt ledger is never rewritten", args)
	}
	r := w.gw("", "grants", "list")
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, ledger)
	require.Contains(t, r.stderr, "fix: mv "+ledger+" "+ledger+".corrupt")
	// Revoking access is always possible: disconnect wipes the secrets, says which ledger
	// it could not clean, and leaves that ledger as it was.
	r = w.gw("", "disconnect", "google")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, ledger)
	require.Empty(t, w.keyring("google:default"), "the connection is gone")
	after, err := os.ReadFile(ledger)
	require.NoError(t, err)
	require.Equal(t, broken, after, "disconnect never rewrites a corrupt ledger")
	require.NoError(t, os.WriteFile(ledger, before, 0o600))

	// 75: another process holds the provider's lock while the tripwire must clear a stale
	// connection: BUSY, and nothing is cleared; released, the same call clears it.
	w.configureClient(clientID, secret)
	r = w.connectNoBrowser("google", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	w.configureClient(clientID+"-rotated", "bb-client-secret-3-"+randHex(8))
	lock := flock.New(filepath.Join(w.home, ".grantwire", "connectors", "google.lock"))
	held, err := lock.TryLock()
	require.NoError(t, err)
	require.True(t, held)
	e = w.fail(75, "BUSY", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.NotEmpty(t, e.Error.Message)
	require.NotEmpty(t, w.keyring("google:default"), "busy: nothing was cleared")
	r = w.gw("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 75, r.code)
	require.Contains(t, r.stderr, "grantwire: ")
	require.NoError(t, lock.Unlock())
	w.fail(4, "REAUTH_REQUIRED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Empty(t, w.keyring("google:default"))
}

// Without a reachable Secret Service every secret operation fails with INSECURE_STORE
// (exit 5) naming what to install, and nothing falls back to a file. No store is needed.
func TestBinaryWithoutASecretServiceRefusesToStoreSecrets(t *testing.T) {
	w := newBB(t)
	w.env = append(w.env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(w.home, "no-bus"), "GRANTWIRE_KEYRING_SERVICE=grantwire.nobus."+randHex(4))
	const secret = "bb-secret-without-store"
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{secret + "\n", []string{"configure", "google", "--client-id", "cid", "--client-secret-stdin"}},
		{"BRAVE_API_KEY=" + secret + "\n", []string{"configure", "mcp-brave-search", "--from-stdin"}},
		{"", []string{"status"}},
		{"", []string{"disconnect", "google"}},
	} {
		r := w.run(tc.stdin, append([]string{"--json"}, tc.args...)...)
		require.Equal(t, 5, r.code, "%v: %s", tc.args, r.stderr)
		var e cliError
		require.NoError(t, json.Unmarshal([]byte(r.stderr), &e))
		require.Equal(t, "INSECURE_STORE", e.Error.Code)
		require.Equal(t, `eval "$(scripts/keyring-session.sh start)"`, e.Error.Fix, "the project's own Secret Service for a shell")
		require.Contains(t, e.Error.Message, "gnome-keyring")
		require.NotContains(t, r.stdout+r.stderr, secret)
	}
	// The grant is checked before anything else is read: an ungranted agent is refused
	// without the store being touched; grants hold no secret, so granting works without a
	// store, and only then does the token need it.
	r := w.run("", "--json", "token", "google", "--agent", "builtin:email", "--scopes", "openid")
	require.Equal(t, 4, r.code, r.stderr)
	require.Contains(t, r.stderr, "AGENT_NOT_GRANTED")
	r = w.run("", "grants", "grant", "google", "builtin:email", "--scopes", "openid")
	require.Equal(t, 0, r.code, r.stderr)
	r = w.run("", "--json", "token", "google", "--agent", "builtin:email", "--scopes", "openid")
	require.Equal(t, 5, r.code, r.stderr)
	require.Contains(t, r.stderr, "INSECURE_STORE")
	_ = filepath.WalkDir(w.home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			require.NotContains(t, string(b), secret, "%s: no file fallback", p)
		}
		return nil
	})
}

// A forwarded connection: secrets on stdin, the agents granted, the refresh token usable.
func TestE2EImportForwarded(t *testing.T) {
	const clientID = "bb-forward-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, Account: "host@example.com"})
	rt := w.srv.Issue([]string{gmailModify, gmailSend})
	w.plant(rt)
	body, err := json.Marshal(map[string]any{
		"client_id": clientID, "client_secret": secret, "refresh_token": rt,
		"scopes": []string{gmailModify, gmailSend}, "account_email": "host@example.com",
		"grant_agents": []string{"builtin:email"},
	})
	require.NoError(t, err)

	// Scope union: the calendar agent declares calendar.events, which was not forwarded.
	var e cliError
	in := strings.Replace(string(body), `["builtin:email"]`, `["builtin:email","builtin:calendar"]`, 1)
	w.gwJSON(in, 4, &e, "import", "google", "--from-stdin")
	require.Equal(t, "SCOPE_MISMATCH", e.Error.Code)
	require.Equal(t, []string{"https://www.googleapis.com/auth/calendar.events"}, e.Error.MissingScopes)
	require.Empty(t, w.keyring("google:default"), "nothing written")
	w.gwJSON(strings.Replace(string(body), `["builtin:email"]`, `["builtin:nobody"]`, 1), 1, &e, "import", "google", "--from-stdin")
	require.Equal(t, "UNKNOWN_AGENT", e.Error.Code)

	var sum grantwire.ForwardedSummary // what import --json prints
	w.gwJSON(string(body), 0, &sum, "import", "google", "--from-stdin")
	require.Equal(t, "host@example.com", sum.AccountEmail)
	require.Equal(t, []string{"builtin:email"}, sum.GrantAgents)
	require.True(t, sum.Forwarded)
	tr := w.token("google", "--agent", "builtin:email", "--scopes", gmailSend)
	require.Equal(t, 0, tr.code, tr.stderr)
	require.Equal(t, http.StatusOK, w.userinfo(strings.TrimSpace(tr.stdout)))
	require.False(t, w.srv.Live(rt), "the forwarded refresh token was rotated")
}

// --bundle runs on an OPA bundle (its policy.wasm and catalog); a bundle that does not
// match its manifest is refused with exit 5 and the reason. --decision-log writes OPA's
// format, with no secret, and `policy replay` finds no change against the same policy.
func TestE2EBundleAndDecisionLog(t *testing.T) {
	const clientID = "bb-bundle-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret})
	w.bin = opaBinary(t) // policy build, policy replay
	bundle := filepath.Join(w.home, "bundle.tar.gz")
	r := w.gw("", "policy", "build", "-o", bundle, "--catalog", w.catalog)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "revision "+gwbundle.EmbeddedRevision())

	log := w.decisionLog()
	// The bundle carries the catalog: --catalog (here from the environment) is refused.
	r = w.gw("", "--bundle", bundle, "status")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--bundle carries its own catalog")
	var env []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "GRANTWIRE_CATALOG=") {
			env = append(env, kv)
		}
	}
	w.env = append(env, "GRANTWIRE_BUNDLE="+bundle)
	r = w.gw("", "--engine", "rego", "status")
	require.Equal(t, 2, r.code)

	w.configureClient(clientID, secret)
	r = w.connectNoBrowser("google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	var st statusDoc
	w.gwJSON("", 0, &st, "--decision-log", log, "status", "google")
	require.True(t, st.Connectors[0].Configured)
	tr := w.token("--decision-log", log, "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, tr.code, tr.stderr)
	w.fail(4, "AGENT_NOT_GRANTED", "--decision-log", log, "token", "google", "--agent", "builtin:chat", "--scopes", gmailRead)
	w.gwJSON("MEMORY_FILE_PATH=/tmp/memory.jsonl\n", 0, nil, "--decision-log", log, "configure", "mcp-memory", "--from-stdin")

	f, err := os.Open(log)
	require.NoError(t, err)
	events, err := decisionlog.ReadAll(f)
	_ = f.Close()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(events), 4)
	ops := map[string]bool{}
	for _, ev := range events {
		require.Equal(t, decisionlog.Path, ev.Path)
		require.Equal(t, gwbundle.EmbeddedRevision(), ev.Revision, "the bundle's revision")
		require.Equal(t, gwbundle.EmbeddedRevision(), ev.Bundles["grantwire"].Revision)
		ops[ev.Custom["op"].(string)] = true
	}
	require.True(t, ops["status"] && ops["get_access_token"] && ops["configure"], "%v", ops)
	fi, err := os.Stat(log)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	r = w.gw("", "policy", "replay", log)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no decision would change")
	r = w.gw("", "policy", "replay", log, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Against  string `json:"against"`
		Entries  int    `json:"entries"`
		Replayed int    `json:"replayed"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, len(events), rep.Entries)
	require.Positive(t, rep.Replayed)

	// Without a bundle, a decision log names the embedded policy's revision.
	w.env = env
	log2 := filepath.Join(w.home, "embedded.jsonl")
	w.gwJSON("", 0, nil, "--decision-log", log2, "grants", "list")
	b, err := os.ReadFile(log2)
	require.NoError(t, err)
	require.Contains(t, string(b), `"revision":"`+gwbundle.EmbeddedRevision()+`"`)
	r = w.gw("", "--decision-log", filepath.Join(w.home, "no", "such", "dir.jsonl"), "grants", "list")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "cannot open it")

}

// A bundle whose policy.wasm does not match the sha256 its manifest records is refused
// with exit 5 and the reason, before anything runs; a good one runs. No store is needed.
func TestBinaryRefusesAMismatchedBundle(t *testing.T) {
	w := newBB(t)
	w.bin = opaBinary(t) // policy build
	bundle := filepath.Join(w.home, "bundle.tar.gz")
	r := w.run("", "policy", "build", "-o", bundle)
	require.Equal(t, 0, r.code, r.stderr)
	w.bin = grantwireBinary(t) // the default build runs bundles
	r = w.run("", "--bundle", bundle, "catalog", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, w.run("", "catalog", "--json").stdout, r.stdout, "the bundle carries the embedded catalog")

	bad := filepath.Join(w.home, "tampered.tar.gz")
	require.NoError(t, os.WriteFile(bad, tamperBundle(t, bundle), 0o600))
	for _, args := range [][]string{{"--bundle", bad, "status"}, {"--bundle", bad, "catalog"}, {"--bundle", bad, "grants", "list"}} {
		r := w.run("", append([]string{"--json"}, args...)...)
		require.Equal(t, 5, r.code, "%v: %s", args, r.stderr)
		var e cliError
		require.NoError(t, json.Unmarshal([]byte(r.stderr), &e))
		require.Equal(t, "BUNDLE_REFUSED", e.Error.Code)
		require.Contains(t, e.Error.Message, "bundle refused: policy.wasm has sha256")
		require.Contains(t, e.Error.Message, "but the manifest records")
		require.Contains(t, e.Error.Fix, "grantwire policy build")
	}
	w.env = append(w.env, "GRANTWIRE_BUNDLE="+filepath.Join(w.home, "missing.tar.gz"))
	r = w.run("", "status")
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, "no such file")
	_, err := os.Stat(filepath.Join(w.home, ".grantwire"))
	require.True(t, errors.Is(err, os.ErrNotExist), "a refused bundle creates nothing")
}

// tamperBundle flips a byte of policy.wasm inside a bundle (the manifest keeps its sha256).
func tamperBundle(t *testing.T, path string) []byte {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("tar", "-xzf", path, "-C", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	wasm := filepath.Join(dir, "policy.wasm")
	b, err := os.ReadFile(wasm)
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff
	require.NoError(t, os.WriteFile(wasm, b, 0o644))
	tarred := filepath.Join(t.TempDir(), "b.tar.gz")
	out, err = exec.Command("tar", "-czf", tarred, "-C", dir, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	raw, err := os.ReadFile(tarred)
	require.NoError(t, err)
	return raw
}

// `policy audit` on the embedded policy passes; on a broken copy it exits 1 and says what
// to fix. (The checks themselves are tested in package audit.)
func TestBinaryPolicyAudit(t *testing.T) {
	w := newBB(t)
	w.bin = opaBinary(t)
	var rep struct {
		Checks []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
		Coverage float64 `json:"coverage"`
	}
	w.runJSON(&rep, "policy", "audit")
	require.Len(t, rep.Checks, 6)
	require.GreaterOrEqual(t, rep.Coverage, 95.0)

	dir := filepath.Join(w.home, "p")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.rego"), []byte("package p\n\nx := time.now_ns()\n"), 0o644))
	r := w.run("", "policy", "audit", "--policy", dir)
	require.Equal(t, 1, r.code, r.stderr)
	for _, want := range []string{"FAIL  compile", "undefined function time.now_ns", "FAIL  tests", "no Rego tests", "FAIL  metadata", "FAIL  entrypoints"} {
		require.Contains(t, r.stdout, want)
	}
	require.Contains(t, r.stderr, "grantwire: policy audit failed: compile, tests, coverage, metadata, entrypoints")
	r = w.run("", "--json", "policy", "audit", "--threshold", "101")
	require.Equal(t, 2, r.code)
	var e cliError
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &e))
	require.Equal(t, "USAGE", e.Error.Code)

	r = w.run("", "policy", "test")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `PASS: \d+/\d+`, r.stdout)
	r = w.run("", "policy", "docs", "-o", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "# grantwire policy reference"))
	r = w.run("", "policy", "docs", "--check", "-o", filepath.Join(w.home, "stale.md"))
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "stale.md does not exist: run `grantwire policy docs -o ")
	r = w.run("", "policy")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "grantwire policy needs a command: audit, build, docs, replay, test")
	r = w.run("", "help", "mcp")
	require.Contains(t, r.stdout, "grantwire mcp add notes --url https://mcp.example.com/mcp && grantwire mcp auth notes")
}

// The demo runs end to end: every step behaves as it announces (the script checks each
// and exits 1 otherwise), and the transcript shows the refusals.
func TestDemo(t *testing.T) {
	if os.Getenv(realKeyringEnv) != "1" {
		t.Skipf("the demo starts its own Secret Service (gnome-keyring): run it with make test, or scripts/with-keyring.sh go test -run TestDemo ./cmd/grantwire (sets %s=1), or make demo", realKeyringEnv)
	}
	if testing.Short() {
		t.Skip("the demo builds three binaries and starts its own Secret Service")
	}
	s := runDemo(t, "scripts/demo.sh",
		"$ grantwire connect google --scopes openid,"+gmailRead,
		"Connected google as ada@example.com",
		"fix: grantwire grants grant google builtin:calendar --scopes "+gmailRead,
		"(exit code 4)",
		"No MCP server is visible to builtin:chat",
		"stale (client_rotated)",
		"fix: grantwire connect google --scopes",
		"Revoked the grants of builtin:research.",
		"demo: ok",
		// It says what it does while it builds, and builds only what it uses.
		"# Building grantwire, the local OAuth server and the stand-in browser.",
		"built in ",
		`"$keyring": "grantwire.connections.`,
	)
	require.Regexp(t, `(?m)^  (\d+ package\(s\) compiled|up to date \(Go's build cache had everything\))$`, s)
	for _, unused := range []string{"go tool opa", "npm "} {
		require.NotContains(t, s, unused)
	}
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^demo: ##`, string(mk), "make demo has no prerequisite (make deps builds OPA's tool and installs npm packages)")
	require.NotContains(t, s, "_rt_")
}

// runDemo runs a demo script of the repository (make demo, make fleet-demo) from its root,
// for at most four minutes; it must succeed and print each of wants. It returns what the
// script printed.
func runDemo(t *testing.T, script string, wants ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", script, out)
	s := string(out)
	for _, want := range wants {
		require.Contains(t, s, want)
	}
	return s
}

// mcp list shows key names only, also for a server another tool wrote into
// mcp_servers.json with a plaintext value, which grantwire lists but does not manage.
func TestE2EMCPListShowsKeyNamesOnly(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	pat := "bb-github-pat-" + randHex(8)
	w.plant(pat)
	w.gwJSON("GITHUB_PERSONAL_ACCESS_TOKEN="+pat+"\n", 0, nil, "configure", "mcp-github", "--from-stdin")

	file := filepath.Join(w.home, ".grantwire", "mcp_servers.json")
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var doc map[string]map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	const foreign = "plaintext-value-of-another-tool"
	doc["mcpServers"]["notes"] = map[string]any{"command": "notes-mcp", "args": []string{"--stdio"}, "env": map[string]string{"NOTES_TOKEN": foreign}}
	raw, err = json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, raw, 0o600))

	var list mcpDoc
	r := w.gwJSON("", 0, &list, "mcp", "list")
	rows := list.Servers
	require.NotContains(t, r.stdout, foreign)
	require.Len(t, rows, 2)
	require.Equal(t, "mcp-github", rows[0].ID)
	require.True(t, rows[0].InCatalog)
	require.Equal(t, []string{"GITHUB_PERSONAL_ACCESS_TOKEN"}, rows[0].EnvKeys)
	require.Empty(t, rows[0].MissingKeys)
	require.Equal(t, mcpRow{ID: "notes", Name: "notes", Command: "notes-mcp", Args: []string{"--stdio"}, Configured: true,
		EnvKeys: []string{"NOTES_TOKEN"}, Grants: map[string][]string{}, ActiveFor: []string{}}, rows[1])
	r = w.gw("", "mcp", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^notes \(not in the catalog\)\s+notes-mcp --stdio\s+NOTES_TOKEN\s+-\s+-$`, r.stdout)
	require.NotContains(t, r.stdout+r.stderr, foreign)

	// grantwire's own writes keep the other tool's entry.
	w.gwJSON("", 0, nil, "disconnect", "mcp-github")
	w.gwJSON("", 0, &list, "mcp", "list")
	require.Len(t, list.Servers, 1)
	require.Equal(t, "notes", list.Servers[0].ID)

	// An unreadable file: exit 5 with its path, and it stays as it is.
	require.NoError(t, os.WriteFile(file, []byte(`{"mcpServers": [`), 0o600))
	e := w.fail(5, "CORRUPT_LEDGER", "mcp", "list")
	require.Equal(t, file, e.Error.Path)
	raw, err = os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, `{"mcpServers": [`, string(raw))
}

func requireKeyring(t testing.TB) { t.Helper(); testenv.RequireKeyring(t, "./cmd/grantwire") }

func randHex(n int) string { return testenv.RandHex(n) }

const realKeyringEnv = testenv.RealKeyringEnv
