package native_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/mcp"
	"github.com/grantwire/grantwire/shells/native"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *testClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func storedConnection(t *testing.T, service, provider string) (map[string]any, bool) {
	t.Helper()
	raw, err := gokeyring.Get(service, provider+":default")
	if errors.Is(err, gokeyring.ErrNotFound) {
		return nil, false
	}
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m))
	return m, true
}

func userinfoStatus(t *testing.T, srv *authserver.Server, access string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.UserinfoURL(), nil)
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func readJSONFile(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// TestClientEndToEnd runs the whole grantwire Client on the native shell: the real Secret
// Service, real files, real locks and the real local authorization server.
func TestClientEndToEnd(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	clock := &testClock{now: time.Now()}
	w := newWorld(t, worldOpts{
		server: &authserver.Config{ClientID: "client-e2e", ClientSecret: "secret-e2e", Account: "ada@example.com"},
		tweak:  func(o *native.Options) { o.Clock = clock },
	})
	const scope = "mail.read"

	_, err := w.client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "client-e2e", ClientSecret: "secret-e2e"})
	require.NoError(t, err)
	conn, err := w.client.Connect(ctx, "local", []string{scope}, nil)
	require.NoError(t, err)
	require.Equal(t, "ada@example.com", conn.Account)
	require.Equal(t, []string{scope}, conn.Scopes)
	st := w.srv.Stats()
	require.Equal(t, 1, st.Authorizations)
	require.Equal(t, 1, st.CodeExchanges)
	require.Equal(t, 1, st.Userinfo)
	blob, ok := storedConnection(t, w.service, "local")
	require.True(t, ok)
	firstRT := blob["refresh_token"].(string)
	require.True(t, w.srv.Live(firstRT))
	state := readJSONFile(t, filepath.Join(w.home, "connectors", "state.json"))
	require.Contains(t, state, "local")

	_, err = w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
	require.ErrorIs(t, err, grantwire.ErrAgentNotGranted)

	_, err = w.client.Grant(ctx, "local", "builtin:chat", []string{scope})
	require.NoError(t, err)
	tok, err := w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, userinfoStatus(t, w.srv, tok.AccessToken))
	require.Equal(t, 0, w.srv.Stats().Refreshes, "a fresh token from connect is served from the cache")

	// Expiry: refresh with rotation, twice.
	prevRT := firstRT
	for i := 1; i <= 2; i++ {
		clock.Advance(2 * time.Hour)
		tok2, err := w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
		require.NoError(t, err)
		require.NotEqual(t, tok.AccessToken, tok2.AccessToken)
		require.Equal(t, i, w.srv.Stats().Refreshes)
		blob, _ = storedConnection(t, w.service, "local")
		rt := blob["refresh_token"].(string)
		require.NotEqual(t, prevRT, rt, "the rotated refresh token replaced the stored one")
		require.True(t, w.srv.Live(rt))
		require.False(t, w.srv.Live(prevRT))
		prevRT, tok = rt, tok2
	}
	require.Equal(t, 0, w.srv.Stats().ReuseDetected)

	// 401 from the token endpoint: REAUTH_REQUIRED, nothing deleted.
	w.srv.Script(authserver.Failure{Grant: "refresh_token", Status: http.StatusUnauthorized, Error: "unauthorized_client"})
	clock.Advance(2 * time.Hour)
	_, err = w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
	require.ErrorIs(t, err, grantwire.ErrReauthRequired)
	_, ok = storedConnection(t, w.service, "local")
	require.True(t, ok, "a 401 never deletes the connection")

	// 500: a provider error, nothing deleted; the next call refreshes normally.
	w.srv.Script(authserver.Failure{Grant: "refresh_token", Status: http.StatusInternalServerError})
	_, err = w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
	require.ErrorIs(t, err, grantwire.ErrProviderError)
	_, ok = storedConnection(t, w.service, "local")
	require.True(t, ok)
	_, err = w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
	require.NoError(t, err)

	// invalid_grant: the connection is revoked and deleted (keyring and state.json).
	w.srv.Script(authserver.Failure{Grant: "refresh_token", Error: "invalid_grant"})
	clock.Advance(2 * time.Hour)
	_, err = w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
	require.ErrorIs(t, err, grantwire.ErrConnectionRevoked)
	_, ok = storedConnection(t, w.service, "local")
	require.False(t, ok)
	require.NotContains(t, readJSONFile(t, filepath.Join(w.home, "connectors", "state.json")), "local")
	_, err = w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
	require.ErrorIs(t, err, grantwire.ErrNotConnected)

	// Reconnect, MCP configuration, activation, then disconnect wipes everything.
	_, err = w.client.Connect(ctx, "local", []string{scope}, []string{"builtin:chat"})
	require.NoError(t, err)
	_, err = w.client.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_TOKEN": "ghp_e2e_value"}})
	require.NoError(t, err)
	act, err := w.client.Activate(ctx, "mcp-github", "builtin:mcp-user", nil)
	require.NoError(t, err)
	require.True(t, act.AutoGranted)
	cred, err := mcp.Of(w.client).Credential(ctx, "mcp-github", "builtin:mcp-user")
	require.NoError(t, err)
	require.Equal(t, "ghp_e2e_value", cred.Env["GITHUB_TOKEN"])
	mcp := readJSONFile(t, filepath.Join(w.home, "mcp_servers.json"))
	require.NotContains(t, mustMarshal(mcp), "ghp_e2e_value")

	res, err := w.client.Disconnect(ctx, "local")
	require.NoError(t, err)
	require.Equal(t, []string{"builtin:chat"}, res.RevokedGrants)
	_, ok = storedConnection(t, w.service, "local")
	require.False(t, ok)
	res, err = w.client.Disconnect(ctx, "mcp-github")
	require.NoError(t, err)
	require.Equal(t, []string{"builtin:mcp-user"}, res.RevokedGrants)
	_, err = gokeyring.Get(w.service, "mcp-github:GITHUB_TOKEN")
	require.ErrorIs(t, err, gokeyring.ErrNotFound)
	grants, err := w.client.ListGrants(ctx, "")
	require.NoError(t, err)
	require.Empty(t, grants)

	// Modes: 0700 directories, 0600 files.
	for _, p := range []string{w.home, filepath.Join(w.home, "connectors")} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), p)
	}
	for _, p := range []string{"connectors/grants.json", "connectors/activations.json", "connectors/state.json", "mcp_servers.json"} {
		fi, err := os.Stat(filepath.Join(w.home, p))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
}

func mustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Distinctive secrets are planted everywhere a secret enters (client secret, tokens the
// server issues, a forwarded refresh token, an MCP API key); after a full run none of them
// is in any file under the home, any log line, any error, any event or any decision.
func TestSecretHygiene(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	const (
		clientSecret = "PLANTEDsecret-client-0d9f"
		mcpKey       = "PLANTEDsecret-mcp-key-77ab"
		tokenPrefix  = "PLANTEDtok"
	)
	planted := []string{clientSecret, mcpKey, tokenPrefix, "PLANTED"}

	var mu sync.Mutex
	var logs, errs, decisions []string
	record := func(dst *[]string, s string) { mu.Lock(); *dst = append(*dst, s); mu.Unlock() }
	clock := &testClock{now: time.Now()}
	w := newWorld(t, worldOpts{
		server: &authserver.Config{ClientID: "cid", ClientSecret: clientSecret, TokenPrefix: tokenPrefix},
		tweak:  func(o *native.Options) { o.Clock = clock },
		options: []grantwire.Option{grantwire.WithObserver(func(d grantwire.Decision) {
			b, _ := json.Marshal(d)
			record(&decisions, string(b))
		}), grantwire.WithTrace(func(line string) { record(&logs, line) })},
	})
	events, stop := w.shell.Events().Subscribe(1024)
	defer stop()
	try := func(err error) {
		if err != nil {
			record(&errs, err.Error())
			var ge *grantwire.Error
			if errors.As(err, &ge) {
				b, _ := json.Marshal(ge)
				record(&errs, string(b))
			}
		}
	}

	var handed []string // what the caller legitimately receives
	_, cerr := w.client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "cid", ClientSecret: clientSecret})
	try(cerr)
	_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, []string{"builtin:chat"})
	require.NoError(t, err)
	for range 3 {
		tok, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
		require.NoError(t, err)
		handed = append(handed, tok.AccessToken)
		clock.Advance(2 * time.Hour)
	}
	for _, f := range []authserver.Failure{{Status: http.StatusUnauthorized, Error: "invalid_client"}, {Status: 500}, {Error: "invalid_grant"}} {
		w.srv.Script(f)
		_, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
		require.Error(t, err)
		try(err)
	}
	_, err = w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:other")
	try(err)

	// A forwarded connection with a planted refresh token, then a refresh with it.
	fwdRT := w.srv.Issue([]string{"mail.read"})
	require.True(t, strings.HasPrefix(fwdRT, tokenPrefix))
	_, err = w.client.ImportForwarded(ctx, grantwire.Forwarded{Provider: "local", ClientID: "cid", ClientSecret: clientSecret,
		RefreshToken: fwdRT, Scopes: []string{"mail.read"}, AccountEmail: "ada@example.com", GrantAgents: []string{"builtin:chat"}})
	require.NoError(t, err)
	clock.Advance(2 * time.Hour)
	tok, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
	require.NoError(t, err)
	handed = append(handed, tok.AccessToken)

	_, err = w.client.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_TOKEN": mcpKey}})
	try(err)
	_, err = w.client.Activate(ctx, "mcp-github", "builtin:mcp-user", nil)
	require.NoError(t, err)
	cred, err := mcp.Of(w.client).Credential(ctx, "mcp-github", "builtin:mcp-user")
	require.NoError(t, err)
	require.Equal(t, mcpKey, cred.Env["GITHUB_TOKEN"])
	_, err = mcp.Of(w.client).Credential(ctx, "mcp-github", "builtin:chat")
	try(err)
	st, err := w.client.Status(ctx)
	require.NoError(t, err)
	conns, _, err := w.client.Connections(ctx)
	require.NoError(t, err)
	listing, _ := json.Marshal([]any{st, conns})
	record(&logs, string(listing))

	// Positive controls: the secrets really went through (and are in the keyring).
	for _, h := range handed {
		require.True(t, strings.HasPrefix(h, tokenPrefix))
	}
	raw, err := gokeyring.Get(w.service, "provider:local")
	require.NoError(t, err)
	require.Contains(t, raw, clientSecret)
	raw, err = gokeyring.Get(w.service, "local:default")
	require.NoError(t, err)
	require.Contains(t, raw, tokenPrefix)
	raw, err = gokeyring.Get(w.service, "mcp-github:GITHUB_TOKEN")
	require.NoError(t, err)
	require.Equal(t, mcpKey, raw)

	_, err = w.client.Disconnect(ctx, "local")
	require.NoError(t, err)
	_, err = w.client.Disconnect(ctx, "mcp-github")
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // let the watcher settle
	stop()
	var evs []string
	for e := range events {
		evs = append(evs, e.Type+" "+string(e.Payload))
	}
	require.NotEmpty(t, evs)
	require.NotEmpty(t, logs)
	require.NotEmpty(t, errs)
	require.NotEmpty(t, decisions)
	logs = append(logs, w.prompt.String())

	for _, s := range planted {
		for _, ch := range []struct {
			name  string
			lines []string
		}{{"log", logs}, {"error", errs}, {"event", evs}, {"decision", decisions}} {
			for _, l := range ch.lines {
				require.NotContains(t, l, s, "a planted secret in a %s", ch.name)
			}
		}
		assertNoSecretUnder(t, w.home, s)
	}
	var files int
	require.NoError(t, filepath.Walk(w.home, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files++
		}
		return err
	}))
	t.Logf("searched %d files, %d log lines, %d errors, %d events, %d decisions", files, len(logs), len(errs), len(evs), len(decisions))
}

var _ hostabi.Events = (*native.Bus)(nil)
