package native_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

func newLedgers(t *testing.T) (hostabi.Ledgers, string) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	sh, err := native.New(native.Options{Home: home, NoWatch: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	return sh.Capabilities().Ledgers, home
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

func TestLedgerPaths(t *testing.T) {
	l, home := newLedgers(t)
	require.Equal(t, filepath.Join(home, "connectors", "grants.json"), l.Path(hostabi.LedgerGrants))
	require.Equal(t, filepath.Join(home, "connectors", "activations.json"), l.Path(hostabi.LedgerActivations))
	require.Equal(t, filepath.Join(home, "connectors", "state.json"), l.Path(hostabi.LedgerState))
	require.Equal(t, filepath.Join(home, "mcp_servers.json"), l.Path(hostabi.LedgerMCPServers))
	_, _, err := l.Read(context.Background(), "nope")
	require.Error(t, err)
	require.Error(t, l.Write(context.Background(), "../x", []byte("{}"), ""))
}

func TestLedgerConditionalWrite(t *testing.T) {
	ctx := context.Background()
	l, home := newLedgers(t)
	doc, v, err := l.Read(ctx, hostabi.LedgerGrants)
	require.NoError(t, err)
	require.Nil(t, doc)
	require.Equal(t, "", v)

	require.NoError(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{"a": 1}`), ""))
	doc, v1, err := l.Read(ctx, hostabi.LedgerGrants)
	require.NoError(t, err)
	require.Equal(t, `{"a": 1}`, string(doc))
	require.NotEmpty(t, v1)

	require.ErrorIs(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{}`), ""), hostabi.ErrConflict, "the file exists now")
	require.ErrorIs(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{}`), "sha256:stale"), hostabi.ErrConflict)
	require.NoError(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{"a": 2}`), v1))
	_, v2, _ := l.Read(ctx, hostabi.LedgerGrants)
	require.NotEqual(t, v1, v2)
	require.ErrorIs(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{}`), v1), hostabi.ErrConflict)

	// Same content, same version: the version is the content's hash.
	require.NoError(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{"a": 1}`), v2))
	_, v3, _ := l.Read(ctx, hostabi.LedgerGrants)
	require.Equal(t, v1, v3)

	// A removed file is a conflict for a writer that expected a version.
	require.NoError(t, os.Remove(l.Path(hostabi.LedgerGrants)))
	require.ErrorIs(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{}`), v3), hostabi.ErrConflict)

	// Modes: 0700 directories and 0600 files, re-asserted on every write.
	require.NoError(t, l.Write(ctx, hostabi.LedgerMCPServers, []byte("{}\n"), ""))
	require.Equal(t, os.FileMode(0o700), mode(t, home))
	require.Equal(t, os.FileMode(0o700), mode(t, filepath.Join(home, "connectors")))
	require.NoError(t, os.Chmod(home, 0o755))
	require.NoError(t, os.Chmod(filepath.Join(home, "connectors"), 0o755))
	require.NoError(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{}`), ""))
	require.Equal(t, os.FileMode(0o700), mode(t, home))
	require.Equal(t, os.FileMode(0o700), mode(t, filepath.Join(home, "connectors")))
	require.Equal(t, os.FileMode(0o600), mode(t, l.Path(hostabi.LedgerGrants)))
	require.Equal(t, os.FileMode(0o600), mode(t, l.Path(hostabi.LedgerMCPServers)))
}

// Temporary files a killed writer left are removed by the next write; other programs'
// files are left alone.
func TestLedgerRemovesStaleTemps(t *testing.T) {
	ctx := context.Background()
	l, home := newLedgers(t)
	dir := filepath.Join(home, "connectors")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	stale := filepath.Join(dir, ".grants.json.tmp-12345")
	gaia := filepath.Join(dir, ".grants_abc.tmp")
	require.NoError(t, os.WriteFile(stale, []byte("{"), 0o600))
	require.NoError(t, os.WriteFile(gaia, []byte("{"), 0o600))
	require.NoError(t, l.Write(ctx, hostabi.LedgerGrants, []byte(`{}`), ""))
	require.NoFileExists(t, stale)
	require.FileExists(t, gaia)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{".grants.json.lock", ".grants_abc.tmp", "grants.json"}, names)
}

// Concurrent read-modify-write loops in one process lose no update.
func TestLedgerConcurrentCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	l, _ := newLedgers(t)
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					doc, v, err := l.Read(ctx, hostabi.LedgerState)
					require.NoError(t, err)
					n := 0
					if doc != nil {
						var m map[string]int
						require.NoError(t, json.Unmarshal(doc, &m))
						n = m["n"]
					}
					err = l.Write(ctx, hostabi.LedgerState, []byte(`{"n": `+strconv.Itoa(n+1)+`}`), v)
					if err == nil {
						break
					}
					require.ErrorIs(t, err, hostabi.ErrConflict)
				}
			}
		}()
	}
	wg.Wait()
	doc, _, err := l.Read(ctx, hostabi.LedgerState)
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 320}`, string(doc))
}

// A corrupt ledger is reported with its path and the fixing command, and never reset or
// rewritten; the other ledgers keep working.
func TestCorruptLedgerIsNeverRewritten(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, worldOpts{noWatch: true})
	grants := filepath.Join(w.home, "connectors", "grants.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(grants), 0o700))
	corrupt := []byte(`{"mcp-github": {"builtin:chat": ["use"]}` + "\n garbage")
	require.NoError(t, os.WriteFile(grants, corrupt, 0o600))

	_, err := w.client.Grant(ctx, "mcp-github", "builtin:other", []string{"use"})
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	var ge *grantwire.Error
	require.ErrorAs(t, err, &ge)
	require.Contains(t, ge.Message, grants)
	require.Contains(t, ge.Fix, "mv "+grants)
	_, err = w.client.ListGrants(ctx, "")
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	_, err = w.client.Revoke(ctx, "mcp-github", "builtin:chat")
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	got, err := os.ReadFile(grants)
	require.NoError(t, err)
	require.Equal(t, corrupt, got, "the corrupt file is untouched")

	// Activations are another file and keep working for pairs that need no grant read...
	_, err = w.client.Deactivate(ctx, "mcp-github", "builtin:chat")
	require.NoError(t, err)

	// ...and a wrong shape is just as corrupt.
	acts := filepath.Join(w.home, "connectors", "activations.json")
	bad := []byte(`{"version": 1, "activations": ["not", "an", "object"]}`)
	require.NoError(t, os.WriteFile(acts, bad, 0o600))
	_, err = w.client.Deactivate(ctx, "mcp-github", "builtin:chat")
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	got, err = os.ReadFile(acts)
	require.NoError(t, err)
	require.Equal(t, bad, got)
}

// An unreadable ledger (here a directory where the file should be, which even root
// cannot read as a file) is reported with its path, not treated as empty.
func TestUnreadableLedgerIsReported(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, worldOpts{noWatch: true})
	grants := filepath.Join(w.home, "connectors", "grants.json")
	require.NoError(t, os.MkdirAll(grants, 0o700))
	_, err := w.client.ListGrants(ctx, "")
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	require.Contains(t, err.Error(), grants)
	_, err = w.client.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"})
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	fi, err := os.Stat(grants)
	require.NoError(t, err)
	require.True(t, fi.IsDir(), "nothing replaced it")
}
