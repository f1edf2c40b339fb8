package native_test

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/shells/native"
)

// Locks follow the secret, not the home (issue 10, item 3): two homes that share one
// keyring service share the refresh token, so they must share the provider's lock. Two
// processes, one per home, refresh 50 times each at once against the rotating server with
// reuse detection: no refresh token is presented twice.
func TestTwoHomesOneServiceShareTheProviderLock(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process stress test; runs without -short")
	}
	requireKeyring(t)
	lockDir := t.TempDir()
	w := connected(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 30},
		worldOpts{noWatch: true, tweak: func(o *native.Options) { o.LockDir = lockDir }})

	// The second home: the same ledgers, the same keyring service.
	other := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(other, "connectors"), 0o700))
	for _, name := range []string{"grants.json", "state.json"} {
		b, err := os.ReadFile(filepath.Join(w.home, "connectors", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(other, "connectors", name), b, 0o600))
	}

	const each = 50
	var wg sync.WaitGroup
	reports := make([]refreshReport, 2)
	errs := make([]error, 2)
	for p, home := range []string{w.home, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := child(t, "refresher", "GW_HOME="+home, "GW_SERVICE="+w.service, "GW_LOCK_DIR="+lockDir,
				"GW_SERVER="+w.srv.URL(), "GW_ROUNDS="+strconv.Itoa(each)).Output()
			if err == nil {
				err = jsonUnmarshal(out, &reports[p])
			}
			errs[p] = err
		}()
	}
	wg.Wait()
	for p := range 2 {
		require.NoError(t, errs[p])
		require.Empty(t, reports[p].Errors, "home %d: %s", p, reports[p].First)
		require.Equal(t, each, reports[p].OK)
	}
	st := w.srv.Stats()
	require.Zero(t, st.ReuseDetected, "a refresh token was presented twice: %+v", st)
	require.Zero(t, st.InvalidGrants)
	require.Equal(t, 2*each, st.Refreshes)
	require.Equal(t, 1, w.srv.LiveRefreshTokens())
}
