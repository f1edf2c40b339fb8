package rest_test

// The harness of the black-box tests: the grantwire binary, built once, runs `serve` as a
// user would, in a private home, on the private Secret Service that make test starts
// (testenv.RequireKeyring), with a catalog whose google entry points at the local
// authorization server (internal/testworld/authserver). Every response body, every SSE frame, the
// server's log and every file of the home are kept and searched for the planted secrets.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

var binary = testenv.Binary{Pkg: "../../cmd/grantwire", Flags: []string{"-buildvcs=false"}}

// TestMain gives the run locks, caches and built commands of its own, so it leaves none
// behind.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// grantwireBinary builds cmd/grantwire once per test run.
func grantwireBinary(t testing.TB) string { return binary.Path(t) }

// Secrets the tests plant; tokens the local server issues start with tokenPrefix.
const tokenPrefix = "srvtok"

type world struct {
	t       *testing.T
	bin     string
	home    string
	env     []string
	auth    *authserver.Server
	secrets []string

	mu         sync.Mutex
	transcript bytes.Buffer // every body and SSE frame the tests received

	srv *served
}

type worldOpts struct {
	clientSecret string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	testenv.RequireKeyring(t, "./surfaces/rest")
	w := &world{t: t, bin: grantwireBinary(t), home: t.TempDir()}
	w.secrets = []string{
		"client-secret-" + testenv.RandHex(12),     // 0: the google OAuth client's secret
		"brave-api-key-" + testenv.RandHex(12),     // 1: an MCP server's key
		"fwd-refresh-" + testenv.RandHex(12),       // 2: a forwarded refresh token
		"fwd-client-secret-" + testenv.RandHex(12), // 3: a forwarded client secret
		tokenPrefix + "_",                          // every token the local server issued
	}
	auth, err := authserver.Start(authserver.Config{ClientID: "web-client", ClientSecret: w.secrets[0], Account: "ada@example.com", TokenPrefix: tokenPrefix}, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = auth.Close() })
	w.auth = auth
	auth.Configure(func(c *authserver.Config) { c.Issuer = auth.URL() }) // the catalog names it as google's issuer
	cat := string(catalog.Defaults())
	for from, to := range map[string]string{
		"https://accounts.google.com/o/oauth2/v2/auth":     auth.AuthorizationURL(),
		"https://oauth2.googleapis.com/token":              auth.TokenURL(),
		"https://openidconnect.googleapis.com/v1/userinfo": auth.UserinfoURL(),
		"https://oauth2.googleapis.com/revoke":             auth.RevocationURL(),
		"https://oauth2.googleapis.com/device/code":        auth.DeviceAuthorizationURL(),
		`"https://accounts.google.com"`:                    `"` + auth.URL() + `"`,
	} {
		cat = strings.ReplaceAll(cat, from, to)
	}
	catFile := filepath.Join(t.TempDir(), "catalog.json")
	require.NoError(t, os.WriteFile(catFile, []byte(cat), 0o600))
	w.env = []string{
		"HOME=" + w.home, "PATH=" + os.Getenv("PATH"),
		"GRANTWIRE_HOME=" + filepath.Join(w.home, ".grantwire"),
		"GRANTWIRE_CATALOG=" + catFile,
		"GRANTWIRE_KEYRING_SERVICE=grantwire.test.serve." + testenv.RandHex(6),
		"DBUS_SESSION_BUS_ADDRESS=" + os.Getenv("DBUS_SESSION_BUS_ADDRESS"),
		"XDG_RUNTIME_DIR=" + os.Getenv("XDG_RUNTIME_DIR"),
		"XDG_CACHE_HOME=" + testenv.Dir(t, "cache"), // the compiled policy, shared by the run's tests
	}
	t.Cleanup(w.checkNoSecrets)
	return w
}

// cli runs the grantwire command in another process, as a user would next to the page.
func (w *world) cli(stdin string, args ...string) (string, int) {
	w.t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Env = w.env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(w.t, err)
	}
	w.record(out)
	return string(out), code
}

// served is a running `grantwire serve`.
type served struct {
	cmd    *exec.Cmd
	url    string
	host   string
	stderr *testenv.Buffer
	done   chan error
}

// serve starts `grantwire serve` with extra arguments and waits for its JSON line.
func (w *world) serve(args ...string) *served {
	w.t.Helper()
	cmd := exec.Command(w.bin, append([]string{"serve"}, args...)...)
	cmd.Env = w.env
	out, err := cmd.StdoutPipe()
	require.NoError(w.t, err)
	s := &served{cmd: cmd, stderr: &testenv.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	require.NoError(w.t, cmd.Start())
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() { s.done <- cmd.Wait() }()
	select {
	case line := <-lines:
		var info struct {
			URL string `json:"url"`
		}
		require.NoError(w.t, json.Unmarshal([]byte(line), &info), "serve printed %q", line)
		s.url = info.URL
		s.host = strings.TrimPrefix(info.URL, "http://")
	case err := <-s.done:
		w.t.Fatalf("serve exited before listening (%v): %s", err, s.stderr.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		w.t.Fatalf("serve printed no URL within 60 s: %s", s.stderr.String())
	}
	w.srv = s
	w.t.Cleanup(func() {
		w.stop(s)
		w.record([]byte(s.stderr.String()))
	})
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func (w *world) stop(s *served) error {
	if s.cmd.ProcessState != nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		return fmt.Errorf("serve did not stop within 15 s of SIGTERM")
	}
}

func (w *world) record(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.transcript.Write(b)
	w.transcript.WriteByte('\n')
}

// checkNoSecrets searches everything the tests saw (bodies, SSE frames, CLI output, the
// server's log) and every file of the home for the planted secrets.
func (w *world) checkNoSecrets() {
	w.mu.Lock()
	text := w.transcript.String()
	w.mu.Unlock()
	require.NotEmpty(w.t, text)
	for i, s := range w.secrets {
		require.NotContains(w.t, text, s, "planted secret %d appeared in a response, an event, CLI output or the log", i)
	}
	for p, b := range w.files("") {
		for i, s := range w.secrets {
			require.NotContains(w.t, b, s, "planted secret %d is in %s", i, p)
		}
	}
}

// files is every file of the world's home by path, but those whose name ends in except
// (when it is not empty).
func (w *world) files(except string) map[string]string {
	out := map[string]string{}
	_ = filepath.Walk(w.home, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (except == "" || !strings.HasSuffix(p, except)) {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

// ledger is the path of one of the world's ledgers (grants.json, activations.json).
func (w *world) ledger(name string) string {
	return filepath.Join(w.home, ".grantwire", "connectors", name)
}

// browse plays the user's browser: it follows the authorization URL (the local server
// consents and redirects) to the loopback callback.
func browse(t *testing.T, authURL string) {
	t.Helper()
	resp, err := http.Get(authURL)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "%s", b)
	require.Contains(t, string(b), "Authorization complete")
}

// response is one answer of the server.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body %s", r.body)
	return m
}

func (r response) code(t testing.TB) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// req is a request to the server; ui adds the X-Grantwire-UI header.
type req struct {
	method, path string
	body         any // string: sent as is
	ui           bool
	header       map[string]string
}

func (w *world) do(r req) response {
	w.t.Helper()
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(w.t, err)
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequestWithContext(context.Background(), r.method, w.srv.url+r.path, body)
	require.NoError(w.t, err)
	if r.ui {
		hr.Header.Set("X-Grantwire-UI", "1")
	}
	for k, v := range r.header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(w.t, err)
	w.record(b)
	out := response{status: resp.StatusCode, header: resp.Header, body: b}
	checkAgainstOpenAPI(w.t, r.method, r.path, out)
	for k := range resp.Header {
		require.False(w.t, strings.HasPrefix(strings.ToLower(k), "access-control-"), "%s %s sent %s: no CORS", r.method, r.path, k)
	}
	return out
}

// sse is an open event stream.
type sse struct {
	frames chan map[string]any
	cancel context.CancelFunc
	closed chan struct{}
}

func (w *world) subscribe() *sse {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hr, err := http.NewRequestWithContext(ctx, "GET", w.srv.url+"/api/connectors/events", nil)
	require.NoError(w.t, err)
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(w.t, err)
	require.Equal(w.t, 200, resp.StatusCode)
	require.Equal(w.t, "text/event-stream", resp.Header.Get("Content-Type"))
	checkAgainstOpenAPI(w.t, "GET", "/api/connectors/events", response{status: resp.StatusCode, header: resp.Header})
	s := &sse{frames: make(chan map[string]any, 256), cancel: cancel, closed: make(chan struct{})}
	go func() {
		defer close(s.closed)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			w.record([]byte(line))
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					s.frames <- m
				}
			}
		}
	}()
	w.t.Cleanup(cancel)
	return s
}

// next waits for the first event of type typ (others are skipped) whose payload has the
// given members.
func (s *sse) next(t testing.TB, typ string, within time.Duration, match map[string]any) map[string]any {
	t.Helper()
	deadline := time.After(within)
	var skipped []map[string]any
	for {
		select {
		case f := <-s.frames:
			if f["type"] != typ {
				skipped = append(skipped, f)
				continue
			}
			p, _ := f["payload"].(map[string]any)
			ok := true
			for k, v := range match {
				if fmt.Sprint(p[k]) != fmt.Sprint(v) {
					ok = false
				}
			}
			if ok {
				return p
			}
		case <-deadline:
			t.Fatalf("no %s event %v within %s; saw %v", typ, match, within, skipped)
			return nil
		}
	}
}
