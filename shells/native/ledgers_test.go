package native_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
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
	testenv.InParallel(t, workers, each, func(int, int) error {
		return l.Update(ctx, "connectors/state.json", func(doc []byte, _ string) ([]byte, error) {
			n := 0
			if doc != nil {
				var m map[string]int
				if err := json.Unmarshal(doc, &m); err != nil {
					return nil, err
				}
				n = m["n"]
			}
			return []byte(`{"n": ` + strconv.Itoa(n+1) + `}`), nil
		})
	})
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

// Hostile ledgers (issue 10, items 14 and 18): whatever sits where a ledger should be, every
// command answers at once with CORRUPT_LEDGER naming the file, and nothing is rewritten.

// A device in place of a ledger (here a symbolic link to /dev/zero, which the ledger
// reader refuses as a link; read through a followed path it would never end) is refused.
func TestLedgerDeviceIsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /dev/zero")
	}
	l, home := newLedgers(t)
	require.NoError(t, os.MkdirAll(filepath.Join(home, "connectors"), 0o700))
	require.NoError(t, os.Symlink("/dev/zero", l.Path(layout.State)))
	inTime(t, "Read", func() {
		_, _, err := l.Read(context.Background(), layout.State)
		requireRefused(t, err, hostabi.RefusedBrokenLink)
	})
}

// MaxLedgerBytes caps what a read costs: a 200 MB ledger is refused before it is read.
func TestLedgerSizeCap(t *testing.T) {
	require.Equal(t, int64(16<<20), int64(native.MaxLedgerBytes))
	ctx := context.Background()
	l, home := newLedgers(t)
	grants := l.Path(layout.Grants)
	require.NoError(t, os.MkdirAll(filepath.Dir(grants), 0o700))
	// A file of exactly the cap is read; one byte more is refused.
	exact := []byte(`{"a": "` + strings.Repeat("x", native.MaxLedgerBytes-9) + `"}`)
	require.Equal(t, native.MaxLedgerBytes, len(exact))
	require.NoError(t, os.WriteFile(grants, exact, 0o600))
	doc, _, err := l.Read(ctx, layout.Grants)
	require.NoError(t, err)
	require.Equal(t, native.MaxLedgerBytes, len(doc))

	f, err := os.OpenFile(grants, os.O_WRONLY|os.O_TRUNC, 0o600)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(200<<20)) // sparse: costs no disk
	require.NoError(t, f.Close())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err = l.Read(ctx, layout.Grants)
	runtime.ReadMemStats(&after)
	requireRefused(t, err, hostabi.RefusedTooLarge)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "the refused read allocated")
	requireRefused(t, l.Update(ctx, layout.Grants, func([]byte, string) ([]byte, error) { return []byte(`{}`), nil }), hostabi.RefusedTooLarge)
	fi, err := os.Stat(grants)
	require.NoError(t, err)
	require.Equal(t, int64(200<<20), fi.Size(), "not rewritten")

	w := newWorld(t, worldOpts{home: home, noWatch: true})
	runtime.ReadMemStats(&before)
	_, err = w.client.ListGrants(ctx, "")
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	require.ErrorContains(t, err, grants+" is unreadable (larger than 16 MiB)")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20))
}

// requireRefused requires the host's refusal of a file for reason.
func requireRefused(t *testing.T, err error, reason string) {
	t.Helper()
	var fr *hostabi.FileRefused
	require.ErrorAs(t, err, &fr)
	require.Equal(t, reason, fr.Reason, "%v", err)
}

// homeWithGrants is a new home and the path of its grant ledger, whose folder exists.
func homeWithGrants(t *testing.T) (home, grants string) {
	home = t.TempDir()
	grants = filepath.Join(home, "connectors", "grants.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(grants), 0o700))
	return home, grants
}

// A ledger other users may read or write is used, reported once, and set to 0600.
func TestLedgerOpenModeIsWarnedAndFixed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX modes")
	}
	ctx := context.Background()
	home, grants := homeWithGrants(t)
	require.NoError(t, os.WriteFile(grants, []byte(`{"mcp-github": {"builtin:chat": ["use"]}}`), 0o600))
	require.NoError(t, os.Chmod(grants, 0o666))
	var mu sync.Mutex
	var warnings []string
	w := newWorld(t, worldOpts{home: home, noWatch: true, tweak: func(o *native.Options) {
		o.Warn = func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() }
	}})
	grants1, err := w.client.ListGrants(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []string{"use"}, grants1["mcp-github"]["builtin:chat"])
	require.Equal(t, os.FileMode(0o600), mode(t, grants))
	_, err = w.client.ListGrants(ctx, "")
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, warnings, 1, "%q", warnings)
	require.Contains(t, warnings[0], grants+" was mode 0666")
	require.Contains(t, warnings[0], "set it to 0600")
}

// A symbolic link in place of a ledger is refused (a write would replace the link by a
// file and leave its target stale); the printed fix works and keeps the grants.
func TestLedgerSymlinkIsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges")
	}
	ctx := context.Background()
	home, grants := homeWithGrants(t)
	target := filepath.Join(t.TempDir(), "dotfiles", "grants.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o700))
	content := []byte(`{"mcp-github": {"builtin:chat": ["use"]}}`)
	require.NoError(t, os.WriteFile(target, content, 0o600))
	require.NoError(t, os.Symlink(target, grants))

	w := newWorld(t, worldOpts{home: home, noWatch: true})
	_, err := w.client.ListGrants(ctx, "")
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	var ge *grantwire.Error
	require.ErrorAs(t, err, &ge)
	require.Contains(t, ge.Message, grants+" is unreadable (a symbolic link)")
	_, err = w.client.Grant(ctx, "mcp-github", "builtin:code", []string{"use"})
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	fi, err := os.Lstat(grants)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is left as it was")

	// The fix is a command that works: the link becomes a copy of its target.
	require.NotEmpty(t, ge.Fix)
	out, err := exec.Command("sh", "-c", ge.Fix).CombinedOutput()
	require.NoError(t, err, "%s: %s", ge.Fix, out)
	got, err := w.client.ListGrants(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []string{"use"}, got["mcp-github"]["builtin:chat"])
	_, err = w.client.Grant(ctx, "mcp-github", "builtin:code", []string{"use"})
	require.NoError(t, err)
	kept, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, content, kept, "the link's target is not written")

	// A dangling link has a fix too.
	require.NoError(t, os.Symlink(filepath.Join(home, "nowhere.json"), filepath.Join(home, "mcp_servers.json")))
	_, err = w.client.Configure(ctx, "mcp-memory", grantwire.ConfigureInput{Env: nil})
	require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
	require.ErrorAs(t, err, &ge)
	require.Contains(t, ge.Message, "(a symbolic link to no regular file)")
	out, err = exec.Command("sh", "-c", ge.Fix).CombinedOutput()
	require.NoError(t, err, "%s: %s", ge.Fix, out)
	_, err = w.client.Configure(ctx, "mcp-memory", grantwire.ConfigureInput{Env: nil})
	require.NoError(t, err)
}

// Invalid UTF-8 or a duplicate key anywhere in a ledger — even in an entry the operation
// does not touch — is refused, and the file is not rewritten (encoding/json would replace
// the bytes with U+FFFD and keep only the last duplicate).
func TestLedgerStrictJSON(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, doc, want string }{
		{"invalid UTF-8", "{\"google\": {\"builtin:chat\": [\"caf\xe9\"]}}", "(not valid UTF-8)"},
		{"duplicate connector", `{"google": {"builtin:chat": ["a"]}, "google": {"builtin:email": ["b"]}}`, `(duplicate member "google")`},
		{"duplicate agent", `{"google": {"builtin:chat": ["a"], "builtin:chat": ["b"]}}`, `(duplicate member "builtin:chat")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{noWatch: true})
			grants := filepath.Join(w.home, "connectors", "grants.json")
			require.NoError(t, os.MkdirAll(filepath.Dir(grants), 0o700))
			require.NoError(t, os.WriteFile(grants, []byte(tc.doc), 0o600))
			_, err := w.client.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"})
			require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
			require.ErrorContains(t, err, grants)
			require.ErrorContains(t, err, tc.want)
			_, err = w.client.ListGrants(ctx, "")
			require.ErrorIs(t, err, grantwire.ErrCorruptLedger)
			got, err := os.ReadFile(grants)
			require.NoError(t, err)
			require.Equal(t, tc.doc, string(got), "not rewritten")
		})
	}
}
