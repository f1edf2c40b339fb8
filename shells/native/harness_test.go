package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/oprun"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

// childEnv names the role of a re-executed test binary (multi-process tests).
const childEnv = "GRANTWIRE_NATIVE_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	// The service locks of every test (and of the children it starts, which inherit the
	// variable) go to a directory of this run, not to the user's cache directory.
	if os.Getenv("GRANTWIRE_LOCK_DIR") == "" {
		dir, err := os.MkdirTemp("", "grantwire-locks-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Setenv("GRANTWIRE_LOCK_DIR", dir)
		code := m.Run()
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// testService returns a keyring service of its own for a test and removes its entries at
// the end.
func testService(t testing.TB) string {
	svc := "grantwire.test." + randHex(6)
	if os.Getenv(realKeyringEnv) == "1" {
		t.Cleanup(func() { _ = gokeyring.DeleteAll(svc) })
	}
	return svc
}

// testAgents is the agent registry of every test world (the home's agents.json).
const testAgents = `{"version": 1, "agents": [
  {"id": "builtin:chat", "required_connectors": [{"connector": "local", "scopes": ["mail.read"]}]},
  {"id": "builtin:mcp-user", "consumes_mcp_servers": true}
]}
`

// testCatalog is a catalog whose OAuth provider "local" is the local authorization
// server, plus the MCP connectors of the embedded catalog.
func testCatalog(srv *authserver.Server) []byte {
	base := "http://127.0.0.1:9" // unused when there is no server
	if srv != nil {
		base = srv.URL()
	}
	return testCatalogAt(base)
}

// testCatalogAt is testCatalog with the authorization server at base.
func testCatalogAt(base string) []byte {
	cat := map[string]any{"connectors": map[string]any{
		"local": map[string]any{
			"type": "oauth_pkce", "display_name": "Local", "tier": "core", "category": "test",
			"authorization_url": base + "/authorize", "token_url": base + "/token", "userinfo_url": base + "/userinfo",
			"auth_params": map[string]string{"access_type": "offline"}, "client_id_env": "GRANTWIRE_LOCAL_CLIENT_ID",
			"default_scopes": []string{"openid"}, "available_scopes": []string{"openid", "email", "mail.read", "mail.send"},
		},
		"mcp-github": map[string]any{
			"type": "mcp_server", "display_name": "GitHub (MCP)", "tier": "dev", "category": "dev-tools",
			"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-github"},
			"env": []map[string]any{{"key": "GITHUB_TOKEN", "required": true, "secret": true}},
		},
		"mcp-memory": map[string]any{
			"type": "mcp_server", "display_name": "Memory (MCP)", "tier": "core", "category": "context",
			"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-memory"}, "env": []any{},
		},
	}}
	b, err := json.Marshal(cat)
	if err != nil {
		panic(err)
	}
	return b
}

// world is a grantwire Client on the native shell over a temp home, with the local
// authorization server.
type world struct {
	t       testing.TB
	home    string
	service string
	srv     *authserver.Server
	shell   *native.Shell
	client  *grantwire.Client
	prompt  *testenv.Buffer
	checked *urlLog
}

// urlLog records every request the shell sent.
type urlLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *urlLog) add(s string) { l.mu.Lock(); l.urls = append(l.urls, s); l.mu.Unlock() }

func (l *urlLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.urls...)
}

type worldOpts struct {
	home    string
	service string
	server  *authserver.Config // nil: no server
	browser func(url string) error
	noWatch bool
	tweak   func(*native.Options)
	options []grantwire.Option
	// caps, when set, changes the shell's capabilities before the client gets them (a
	// slowed keyring, say).
	caps func(*hostabi.Capabilities)
}

func newWorld(t testing.TB, o worldOpts) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{t: t, home: o.home, service: o.service, prompt: &testenv.Buffer{}, checked: &urlLog{}}
	if w.home == "" {
		w.home = t.TempDir()
	}
	if w.service == "" {
		w.service = testService(t)
	}
	if o.server != nil {
		srv, err := authserver.Start(*o.server, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		w.srv = srv
	}
	browser := o.browser
	if browser == nil && w.srv != nil {
		browser = autoBrowser
	}
	require.NoError(t, os.MkdirAll(w.home, 0o700))
	if _, err := os.Stat(filepath.Join(w.home, "agents.json")); os.IsNotExist(err) {
		require.NoError(t, os.WriteFile(filepath.Join(w.home, "agents.json"), []byte(testAgents), 0o600))
	}
	var client *grantwire.Client
	opts := native.Options{
		Home: w.home, Service: w.service, Browser: browser, Prompt: w.prompt, NoWatch: o.noWatch,
		Getenv: func(string) string { return "" }, LockDir: os.Getenv("GRANTWIRE_LOCK_DIR"),
	}
	if !o.noWatch {
		opts.ActivationChanges = func(before, after json.RawMessage) {
			if client != nil {
				_, _ = oprun.Of(client).Run(context.Background(), "activation_changes", map[string]any{"before": before, "after": after}, nil, nil)
			}
		}
		opts.GrantChanges = func(before, after json.RawMessage) {
			if client != nil {
				_, _ = oprun.Of(client).Run(context.Background(), "grant_changes", map[string]any{"before": before, "after": after}, nil, nil)
			}
		}
	}
	if o.tweak != nil {
		o.tweak(&opts)
	}
	sh, err := native.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	w.shell = sh
	caps := sh.Capabilities()
	caps.HTTP = logTransport{w.checked, caps.HTTP}
	if o.caps != nil {
		o.caps(&caps)
	}
	client, err = grantwire.New(ctx, append([]grantwire.Option{grantwire.WithCapabilities(caps),
		grantwire.WithCatalog(catalog.Bytes(testCatalog(w.srv)))}, o.options...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close(ctx) })
	w.client = client
	return w
}

func configure(t *testing.T, w *world, id, secret string) {
	t.Helper()
	_, err := w.client.Configure(context.Background(), "local", grantwire.ConfigureInput{ClientID: id, ClientSecret: secret})
	require.NoError(t, err)
}

// connected is a world whose "local" connection exists (through a real connect).
func connected(t *testing.T, cfg authserver.Config, opts worldOpts) *world {
	t.Helper()
	opts.server = &cfg
	w := newWorld(t, opts)
	configure(t, w, cfg.ClientID, cfg.ClientSecret)
	_, err := w.client.Connect(context.Background(), "local", []string{"mail.read"}, []string{"builtin:chat"})
	require.NoError(t, err)
	return w
}

// logTransport records every request before sending it.
type logTransport struct {
	log   *urlLog
	inner http.RoundTripper
}

func (l logTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	l.log.add(r.Method + " " + r.URL.Redacted())
	return l.inner.RoundTrip(r)
}

// autoBrowser plays a browser whose user consents: it follows the authorization
// endpoint's redirect to the loopback callback.
func autoBrowser(authURL string) error {
	go func() {
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get(authURL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}()
	return nil
}

// childOptions are the shell options of a child on the parent's home (GW_HOME) that needs
// none of the parent's secrets (a keyring service of the children's own).
func childOptions() native.Options {
	return native.Options{Home: os.Getenv("GW_HOME"), Service: "grantwire.test.children"}
}

// childClient opens a client in a child process: a shell with opts (not watching, no
// environment) and a client on its capabilities, changed by caps when set, with the test
// catalog whose authorization server is at GW_SERVER (none when unset). With
// GW_NO_LOCKS=1 its locks are noLocks.
func childClient(ctx context.Context, opts native.Options, caps func(*hostabi.Capabilities)) (*grantwire.Client, *native.Shell, error) {
	opts.NoWatch, opts.Getenv = true, func(string) string { return "" }
	sh, err := native.New(opts)
	if err != nil {
		return nil, nil, err
	}
	c := sh.Capabilities()
	if os.Getenv("GW_NO_LOCKS") == "1" {
		c.Locks = noLocks{}
	}
	if caps != nil {
		caps(&c)
	}
	cat := testCatalog(nil)
	if base := os.Getenv("GW_SERVER"); base != "" {
		cat = testCatalogAt(base)
	}
	client, err := grantwire.New(ctx, grantwire.WithCapabilities(c), grantwire.WithCatalog(catalog.Bytes(cat)))
	return client, sh, err
}

// noLocks grants every lock at once (a broken shell, for the negative control).
type noLocks struct{}

func (noLocks) TryLock(context.Context, string, time.Duration) (func(), error) { return func() {}, nil }

// children are the roles a re-executed test binary can play (see child): each runs in
// its own process, and its error is printed and exits 1.
var children = map[string]func() error{
	"ledger-writer":   childLedgerWriter,
	"refresher":       childRefresher,
	"ledger-ops":      childLedgerOps,
	"ops":             childOps,
	"lock-holder":     childLockHolder,
	"changer":         childChanger,
	"keyring-nostore": childKeyringNoStore,
}

// runChild runs the role of a re-executed test binary and returns its exit code.
func runChild(role string) int {
	run, ok := children[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		return 2
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child runs this test binary again as a separate process in role, with extra env.
func child(t testing.TB, role string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	return cmd
}

func requireKeyring(t testing.TB) { t.Helper(); testenv.RequireKeyring(t, "./shells/native") }

func randHex(n int) string { return testenv.RandHex(n) }

// inTime fails the test when f does not return within 10 s (a read blocked on a FIFO).
func inTime(t *testing.T, what string, f func()) {
	t.Helper()
	testenv.Within(t, 10*time.Second, what, f)
}

const realKeyringEnv = testenv.RealKeyringEnv
