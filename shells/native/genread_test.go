package native_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/shells/native"
)

// A token hand-out with nothing changed stats each file it depends on (the grants ledger,
// the keyring generation files) at most once: the host's look at the keyring generation
// serves its memory of slots, the one keyring cache, for fresh reads and others alike.
func TestOneStatPerFilePerOperation(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	w := connected(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 3600}, worldOpts{noWatch: true})
	get := func() {
		_, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
		require.NoError(t, err)
	}
	get()
	_, ok := w.shell.Capabilities().Keyring.(host.KeyringGenerations)
	require.True(t, ok, "the shell's keyring tells a generation")
	store := native.CountKeyringReads(w.shell)
	stop := native.CountStats(w.shell)
	get()
	counts := stop()
	require.Zero(t, store.Load(), "the hand-out was served from the caches")
	t.Logf("stats: %v", counts)
	require.Contains(t, counts, filepath.Join(w.home, "connectors", "grants.json"))
	require.Contains(t, counts, filepath.Join(w.home, ".keyring-generation"))
	for p, n := range counts {
		require.Equal(t, 1, n, "%s was stat'ed %d times in one operation", p, n)
	}
}
