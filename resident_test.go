package grantwire_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/stretchr/testify/require"
)

// Resident facts through a real host: the OS shell's ledger files are stamped, so the host
// names each ledger.read answer by a token and the native engine keeps the parsed fact.
// A listing asked twice reuses the resident fact; a grant or a revoke writes the ledger,
// whose new version gets a new token, and the very next listing sees the change. (The
// keyring is the memory world's: a grant needs none.)
func TestResidentFactsFollowLedgerChanges(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	sh, err := native.New(native.Options{Home: home, Service: "grantwire.test-resident", NoWatch: true,
		Getenv: func(string) string { return "" }, LockDir: filepath.Join(home, "locks")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	caps := sh.Capabilities()
	caps.Keyring = memhost.New(time.UnixMilli(1_790_000_000_000), 1).Capabilities("").Keyring
	cat, err := catalog.Load(nil)
	require.NoError(t, err)
	engine, err := nativeengine.New(ctx, nativeengine.WithData(cat.Data()))
	require.NoError(t, err)
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(caps), grantwire.WithEngine(engine), grantwire.WithCatalog(cat))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(ctx) })

	list := func() map[string][]string {
		t.Helper()
		g, err := c.ListGrants(ctx, "google")
		require.NoError(t, err)
		return g["google"]
	}
	_, err = c.Grant(ctx, "google", "builtin:chat", []string{"gmail.readonly"})
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"builtin:chat": {"gmail.readonly"}}, list())
	facts, _ := engine.ResidentStats()
	require.Positive(t, facts, "the ledger facts stayed resident")
	require.Equal(t, map[string][]string{"builtin:chat": {"gmail.readonly"}}, list())
	again, _ := engine.ResidentStats()
	require.Equal(t, facts, again, "the second listing reused the resident facts (same tokens)")

	_, err = c.Grant(ctx, "google", "builtin:claude-code", []string{"gmail.readonly"})
	require.NoError(t, err)
	require.Len(t, list(), 2, "the grant is seen by the next listing")
	changed, err := c.Revoke(ctx, "google", "builtin:chat")
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, map[string][]string{"builtin:claude-code": {"gmail.readonly"}}, list(), "the revoke is seen by the next listing")
	after, _ := engine.ResidentStats()
	require.Greater(t, after, again, "each new version of the ledger came with a new token")

	// Another writer (no grantwire process) changes the file: the stamp moves, the host
	// reads it again and names it by a new token.
	p := filepath.Join(home, "connectors", "grants.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"google": {"builtin:chat": ["gmail.send"]}}`), 0o600))
	require.Equal(t, map[string][]string{"builtin:chat": {"gmail.send"}}, list())
}
