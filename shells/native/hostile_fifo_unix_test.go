//go:build unix

package native_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
)

// A FIFO in place of a ledger is refused at once: reads, writes and native.New (whose
// activation watcher reads activations.json) do not wait for a writer that never comes.
func TestLedgerFIFOIsRefused(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "connectors"), 0o700))
	for _, name := range []string{"grants.json", "activations.json"} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(home, "connectors", name), 0o600))
	}
	var w *world
	inTime(t, "native.New with a FIFO activations.json", func() { w = newWorld(t, worldOpts{home: home}) })
	grants := filepath.Join(home, "connectors", "grants.json")
	inTime(t, "ListGrants", func() {
		_, err := w.client.ListGrants(ctx, "")
		require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
		require.Contains(t, err.Error(), grants+" is unreadable (not a regular file)")
		var ge *grantwire.Error
		require.ErrorAs(t, err, &ge)
		require.Equal(t, "mv "+grants+" "+grants+".corrupt", ge.Fix)
	})
	inTime(t, "Grant", func() {
		_, err := w.client.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"})
		require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	})
	fi, err := os.Lstat(grants)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeNamedPipe, "the FIFO is left as it was")
}
