package native_test

import (
	"context"
	"errors"
	"github.com/grantwire/grantwire"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// slowKeyring delays every write, widening the window between the authorization server
// rotating a refresh token and grantwire saving the new one.
type slowKeyring struct {
	hostabi.Keyring
	rnd *rand.Rand
}

func (k slowKeyring) Set(ctx context.Context, service, user, value string) error {
	time.Sleep(time.Duration(k.rnd.IntN(15)) * time.Millisecond)
	return k.Keyring.Set(ctx, service, user, value)
}

// TestCancelledRefreshesLoseNoRotation cancels the caller at random moments of 200
// refreshes against a server that rotates refresh tokens and revokes a family on reuse,
// with a keyring slowed on every write. Once the refresh request is on the wire its
// result is saved whatever the caller does, so no rotation is lost: the stored refresh
// token is the live one after every call, the server never sees a reused token, and the
// connection still works at the end.
func TestCancelledRefreshesLoseNoRotation(t *testing.T) {
	requireKeyring(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 9207))
	w := newWorld(t, worldOpts{
		// Tokens live 30 s, under the 60 s margin: every call refreshes.
		server:  &authserver.Config{ClientID: "client-cancel", ExpiresIn: 30},
		noWatch: true,
		caps:    func(c *hostabi.Capabilities) { c.Keyring = slowKeyring{c.Keyring, rnd} },
	})
	ctx := context.Background()
	const scope = "mail.read"
	_, err := w.client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "client-cancel"})
	require.NoError(t, err)
	_, err = w.client.Connect(ctx, "local", []string{scope}, nil)
	require.NoError(t, err)
	_, err = w.client.Grant(ctx, "local", "builtin:chat", []string{scope})
	require.NoError(t, err)

	// A call takes a few tens of milliseconds; the first ones, uncancelled, say how long.
	start := time.Now()
	for i := 0; i < 5; i++ {
		_, err = w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
		require.NoError(t, err)
	}
	typical := time.Since(start) / 5

	var cancelled, finished, savedAfterCancel int
	for i := 0; i < 200; i++ {
		callCtx, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(time.Duration(rnd.Int64N(int64(typical))), cancel)
		_, err := w.client.GetAccessToken(callCtx, "local", []string{scope}, "builtin:chat")
		timer.Stop()
		late := callCtx.Err() != nil
		cancel()
		switch {
		case err == nil:
			finished++
			if late {
				// Cancelled once the refresh was on the wire: finished and saved.
				savedAfterCancel++
			}
		case errors.Is(err, context.Canceled):
			cancelled++
		default:
			t.Fatalf("call %d: %v", i, err)
		}
		blob, ok := storedConnection(t, w.service, "local")
		require.True(t, ok, "call %d: the connection is still stored", i)
		require.True(t, w.srv.Live(blob["refresh_token"].(string)), "call %d: the stored refresh token is the live one", i)
	}
	t.Logf("typical call %s; %d calls finished (%d of them cancelled after the request was sent), %d cancelled before, %d refreshes at the server",
		typical, finished, savedAfterCancel, cancelled, w.srv.Stats().Refreshes)
	require.Positive(t, cancelled, "some calls were cancelled before the refresh request")
	require.Positive(t, savedAfterCancel, "some calls were cancelled after the refresh request was sent")

	_, err = w.client.GetAccessToken(ctx, "local", []string{scope}, "builtin:chat")
	require.NoError(t, err)
	st := w.srv.Stats()
	require.Zero(t, st.ReuseDetected, "no refresh token was used twice")
	require.Zero(t, st.InvalidGrants)
}
