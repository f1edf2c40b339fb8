package native_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire"
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
