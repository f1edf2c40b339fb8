package hostabi_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
)

const testCatalog = `{"catalog":{"connectors":{
 "google":{"type":"oauth_pkce","default_scopes":["openid"],
   "authorization_url":"https://accounts.example/auth","token_url":"https://accounts.example/token"},
 "mcp-github":{"type":"mcp_server","command":"npx","args":["-y","server-github"],"env":[{"key":"GITHUB_TOKEN","required":true}]}}}}`

func setup(t *testing.T) (*hostabi.Driver, *memhost.World, *host.Host) {
	t.Helper()
	ctx := context.Background()
	e, err := wasmengine.New(ctx, wasmengine.WithData([]byte(testCatalog)), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	t.Cleanup(func() { e.Close(ctx) })
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	w.Server.ServeProviders(map[string]authserver.Provider{"google": {Type: authserver.TypeOAuth,
		AuthorizationURL: "https://accounts.example/auth", TokenURL: "https://accounts.example/token"}})
	h := host.New(w.Capabilities(""))
	return &hostabi.Driver{Engine: e, Host: h}, w, h
}

func TestDriverConnectGrantToken(t *testing.T) {
	ctx := context.Background()
	d, w, h := setup(t)
	var trace []string
	h.Trace = func(l string) { trace = append(trace, l) }

	out, err := d.Run(ctx, "configure_client", map[string]any{"connector": "google"},
		map[string]string{"client_id": "cid", "client_secret": "csecret"})
	require.NoError(t, err)
	require.Nil(t, out.Error, "%v", out.Error)

	out, err = d.Run(ctx, "connect", map[string]any{"connector": "google", "scopes": []string{"gmail"}, "grant_agents": []string{}}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error, "%v", out.Error)

	tok := map[string]any{"provider": "google", "agent": "builtin:chat", "scopes": []string{"gmail"}}
	out, err = d.Run(ctx, "get_access_token", tok, nil)
	require.NoError(t, err)
	require.Equal(t, "AGENT_NOT_GRANTED", out.Error.Code)
	require.Contains(t, out.Error.Message, "grantwire grants grant google builtin:chat --scopes gmail")
	require.Equal(t, 0, out.Rounds, "an ungranted agent is refused on the first question")

	out, err = d.Run(ctx, "grant", map[string]any{"connector": "google", "agent": "builtin:chat", "scopes": []string{"gmail"}}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error)

	out, err = d.Run(ctx, "get_access_token", tok, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error, "%v", out.Error)
	require.Equal(t, 1, out.Rounds, "hot path: the grant first, then one keyring round")
	var res struct {
		AccessToken struct {
			Ref string `json:"$ref"`
		} `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal(out.Result, &res))
	v, ok := out.Secret(res.AccessToken.Ref)
	require.True(t, ok)
	require.True(t, strings.HasPrefix(v, "access-google-"), v)

	// Expire the token: the next call refreshes under the lock and rotates.
	w.Advance(2 * time.Hour)
	out, err = d.Run(ctx, "get_access_token", tok, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error, "%v", out.Error)
	require.Equal(t, 1, w.Server.Stats().RefreshRequests)
	all := strings.Join(trace, "\n")
	require.NotContains(t, all, "csecret")
	require.NotContains(t, all, v)
	for _, stored := range w.Keyring() {
		require.NotContains(t, all, stored, "a keyring value reached a transcript")
	}
}

// A caller that gives up before anything is written gets ErrCanceled, and nothing is
// written.
func TestCancellationBeforeTheEffectsWritesNothing(t *testing.T) {
	d, w, h := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	h.Yield = func(context.Context) { cancel() } // cancelled at the first host call
	_, err := d.Run(ctx, "grant", map[string]any{"connector": "google", "agent": "builtin:chat", "scopes": []string{"gmail"}}, nil)
	require.ErrorIs(t, err, hostabi.ErrCanceled)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, w.File(layout.Grants), "nothing was written")
}

// Once a refresh is on the wire, the caller's cancellation does not stop the operation:
// the rotated refresh token is saved.
func TestACommittedRefreshIsSavedDespiteCancellation(t *testing.T) {
	d, w, h := setup(t)
	ctx := context.Background()
	w.SetKeyring(hostabi.DefaultService, layout.ClientUser("google"), layout.Client{ClientID: "cid", ClientSecret: "cs"}.Encode())
	w.SetKeyring(hostabi.DefaultService, layout.ConnectionUser("google"), layout.Connection{
		AccountEmail: "a@example.org", ClientIDHash: layout.ClientIDHash("cid"), RefreshToken: "rt-1",
		Scopes: []string{"gmail"}, ConnectedAt: 1_789_000_000_000}.Encode())
	w.Server.IssueToken("google", "rt-1", nil)
	w.SetFile(layout.Grants, []byte(`{"google":{"builtin:chat":["gmail"]}}`))

	cctx, cancel := context.WithCancel(ctx)
	// The provider rotates the refresh token; Ctrl-C while the request is in flight.
	w.Server.ScriptRefresh("google", authserver.Answer{AccessToken: "access-google-0001", RefreshToken: "refresh-google-0002",
		ExpiresIn: 3600, During: cancel})
	_ = h
	out, err := d.Run(cctx, "get_access_token", map[string]any{"provider": "google", "agent": "builtin:chat", "scopes": []string{"gmail"}}, nil)
	require.NoError(t, err, "a committed operation finishes")
	require.Nil(t, out.Error, "%v", out.Error)
	c, err := layout.ParseConnection(w.Keyring()[hostabi.DefaultService+"\x00"+layout.ConnectionUser("google")])
	require.NoError(t, err)
	require.Equal(t, "refresh-google-0002", c.RefreshToken, "the rotated refresh token was saved")
}

// A capability's failure reaches the core as a host_error fact; the core reports it.
func TestAHostFailureIsThePolicysError(t *testing.T) {
	d, w, _ := setup(t)
	w.Fail(memhost.Failure{Op: "set", User: layout.ClientUser("google"), Err: &hostabi.HostError{
		Code: hostabi.HostErrInsecureStore, Detail: "no Secret Service", Fix: "apt-get install gnome-keyring"}})
	out, err := d.Run(context.Background(), "configure_client", map[string]any{"connector": "google"},
		map[string]string{"client_id": "cid", "client_secret": "csecret"})
	require.NoError(t, err)
	require.True(t, out.HostFailure)
	require.Equal(t, "INSECURE_STORE", out.Error.Code)
	require.Equal(t, "apt-get install gnome-keyring", out.Error.Fix)
	require.Contains(t, out.Error.Message, "no Secret Service")
	require.False(t, errors.Is(err, hostabi.ErrConflict))
}
