package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// pendingFile finds a machine's store-pending.json ("" when there is none).
func pendingFile(t *testing.T, m *machine) string {
	t.Helper()
	var found string
	require.NoError(t, filepath.WalkDir(m.home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "store-pending.json" {
			found = p
		}
		return err
	}))
	return found
}

// TestE2ERotationKeptWhileStoreDown is issue 22's last store defect: PostgreSQL stops
// exactly between the provider's answer to a refresh (it has rotated the refresh token and
// retired the old one) and the write of the new token. The server stops PostgreSQL itself
// before it sends its answer, so the moment is the same on every run. Then:
//   - the machine that refreshed keeps the rotated token sealed in its home (no token in
//     plain text there), says so, and hands out the new access token;
//   - once PostgreSQL is back, another machine does not refresh with the retired token: the
//     lock is in doubt (BUSY, exit 75) while the holder has not written what it kept;
//   - the holder's next command writes it and refreshes with it; then the other machine
//     refreshes too: 0 reuse, 0 invalid_grant, nothing revoked, the grant kept.
func TestE2ERotationKeptWhileStoreDown(t *testing.T) {
	w, cl, ms := fleetWorld(t, 1)
	a, b := ms[0], ms[1]
	token := []string{"token", "google", "--agent", "builtin:email", "--scopes", gmailRead}
	r := a.gw("", token...)
	require.Equal(t, 0, r.code, r.stderr)
	refreshes := w.srv.Stats().Refreshes

	stopped := false
	w.srv.Script(authserver.Failure{Grant: "refresh_token", BeforeAnswer: func() {
		require.NoError(t, cl.Stop())
		stopped = true
	}})
	r = a.gw("", token...)
	require.True(t, stopped, "PostgreSQL was stopped before the answer was sent")
	require.Equal(t, 0, r.code, "the caller gets its token: %s", r.stderr)
	require.True(t, strings.HasPrefix(strings.TrimSpace(r.stdout), tokenPrefix+"_at_"))
	require.Contains(t, r.stderr, "is kept sealed in", "the user is told where it is kept")
	require.Equal(t, refreshes+1, w.srv.Stats().Refreshes, "the provider rotated the refresh token")
	kept := pendingFile(t, a)
	require.NotEmpty(t, kept, "the rotated token is kept on the machine")
	fi, err := os.Stat(kept)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	raw, err := os.ReadFile(kept)
	require.NoError(t, err)
	require.NotContains(t, string(raw), tokenPrefix, "sealed: no token in plain text")

	require.NoError(t, cl.Start())
	requests := w.srv.Stats().RefreshRequests
	b.fail(75, "BUSY", token...)
	require.Equal(t, requests, w.srv.Stats().RefreshRequests, "no refresh with the retired token while the lock is in doubt")

	r = a.gw("", token...)
	require.Equal(t, 0, r.code, "the holder writes what it kept, and refreshes with it: %s", r.stderr)
	require.True(t, strings.HasPrefix(strings.TrimSpace(r.stdout), tokenPrefix+"_at_"))
	require.Empty(t, pendingFile(t, a), "nothing is kept once the store took it")
	r = b.gw("", token...)
	require.Equal(t, 0, r.code, r.stderr)
	requireServerClean(t, w)
	requireGrantKept(t, w)
}
