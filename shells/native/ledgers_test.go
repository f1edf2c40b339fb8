package native_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

func newLedgers(t *testing.T) (hostabi.Files, string) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	sh, err := native.New(native.Options{Home: home, NoWatch: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	return sh.Capabilities().Files, home
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

func write(doc string) func([]byte, string) ([]byte, error) {
	return func([]byte, string) ([]byte, error) { return []byte(doc), nil }
}

func TestFilePaths(t *testing.T) {
	ctx := context.Background()
	l, home := newLedgers(t)
	require.Equal(t, filepath.Join(home, "connectors", "grants.json"), l.Path("connectors/grants.json"))
	require.Equal(t, filepath.Join(home, "mcp_servers.json"), l.Path("mcp_servers.json"))
	for _, bad := range []string{"../x", "/etc/passwd", "", ".", "connectors/../../x"} {
		_, _, err := l.Read(ctx, bad)
		require.Error(t, err, bad)
		require.Error(t, l.Update(ctx, bad, write("{}")), bad)
	}
}

func TestFileUpdate(t *testing.T) {
	ctx := context.Background()
	l, home := newLedgers(t)
	const g = "connectors/grants.json"
	doc, v, err := l.Read(ctx, g)
	require.NoError(t, err)
	require.Nil(t, doc)
	require.Equal(t, "", v)

	var seen []string
	require.NoError(t, l.Update(ctx, g, func(cur []byte, v string) ([]byte, error) {
		seen = append(seen, string(cur)+"@"+v)
		return []byte(`{"a": 1}`), nil
	}))
	doc, v1, err := l.Read(ctx, g)
	require.NoError(t, err)
	require.Equal(t, `{"a": 1}`, string(doc))
	require.NotEmpty(t, v1)
	require.NoError(t, l.Update(ctx, g, func(cur []byte, v string) ([]byte, error) {
		seen = append(seen, string(cur)+"@"+v)
		return []byte(`{"a": 2}`), nil
	}))
	require.Equal(t, []string{"@", `{"a": 1}@` + v1}, seen, "the change is made to what the file holds, with its version")
	_, v2, _ := l.Read(ctx, g)
	require.NotEqual(t, v1, v2)

	// A change that fails writes nothing.
	require.ErrorIs(t, l.Update(ctx, g, func([]byte, string) ([]byte, error) { return nil, hostabi.ErrConflict }), hostabi.ErrConflict)
	_, v3, _ := l.Read(ctx, g)
	require.Equal(t, v2, v3)

	// Same content, same version: the version is the content's hash.
	require.NoError(t, l.Update(ctx, g, write(`{"a": 1}`)))
	_, v4, _ := l.Read(ctx, g)
	require.Equal(t, v1, v4)

	// Modes: 0700 directories and 0600 files, re-asserted on every write.
	require.NoError(t, l.Update(ctx, "mcp_servers.json", write("{}\n")))
	require.Equal(t, os.FileMode(0o700), mode(t, home))
	require.Equal(t, os.FileMode(0o700), mode(t, filepath.Join(home, "connectors")))
	require.NoError(t, os.Chmod(home, 0o755))
	require.NoError(t, os.Chmod(filepath.Join(home, "connectors"), 0o755))
	require.NoError(t, l.Update(ctx, g, write(`{}`)))
	require.Equal(t, os.FileMode(0o700), mode(t, home))
	require.Equal(t, os.FileMode(0o700), mode(t, filepath.Join(home, "connectors")))
	require.Equal(t, os.FileMode(0o600), mode(t, l.Path(g)))
	require.Equal(t, os.FileMode(0o600), mode(t, l.Path("mcp_servers.json")))
}

// Temporary files a killed writer left are removed by the next write; other programs'
// files are left alone.
func TestFileRemovesStaleTemps(t *testing.T) {
	ctx := context.Background()
	l, home := newLedgers(t)
	dir := filepath.Join(home, "connectors")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	stale := filepath.Join(dir, ".grants.json.tmp-12345")
	gaia := filepath.Join(dir, ".grants_abc.tmp")
	require.NoError(t, os.WriteFile(stale, []byte("{"), 0o600))
	require.NoError(t, os.WriteFile(gaia, []byte("{"), 0o600))
	require.NoError(t, l.Update(ctx, "connectors/grants.json", write(`{}`)))
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

// Concurrent read-modify-writes in one process lose no update.
func TestFileConcurrentUpdates(t *testing.T) {
	ctx := context.Background()
	l, _ := newLedgers(t)
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				require.NoError(t, l.Update(ctx, "connectors/state.json", func(doc []byte, _ string) ([]byte, error) {
					n := 0
					if doc != nil {
						var m map[string]int
						if err := json.Unmarshal(doc, &m); err != nil {
							return nil, err
						}
						n = m["n"]
					}
					return []byte(`{"n": ` + strconv.Itoa(n+1) + `}`), nil
				}))
			}
		}()
	}
	wg.Wait()
	doc, _, err := l.Read(ctx, "connectors/state.json")
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
	// Revoking is always possible: the grant cannot be removed from the unreadable file,
	// the rest is cleaned and a warning names the file (docs/behaviour.md#grants).
	rv, err := w.client.RevokeGrant(ctx, "mcp-github", "builtin:chat")
	require.NoError(t, err)
	require.NotEmpty(t, rv.Warnings)
	require.Contains(t, strings.Join(rv.Warnings, "\n"), grants)
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

// A directory where a ledger should be (which even root cannot read as a file) is refused
// with its path and the fix, not treated as empty.
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
