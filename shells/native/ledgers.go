package native

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/safefile"
)

// ledgerFiles maps the logical ledgers to files under the home.
var ledgerFiles = map[string]string{
	hostabi.LedgerGrants:      filepath.Join("connectors", "grants.json"),
	hostabi.LedgerActivations: filepath.Join("connectors", "activations.json"),
	hostabi.LedgerState:       filepath.Join("connectors", "state.json"),
	hostabi.LedgerMCPServers:  "mcp_servers.json",
}

// MaxLedgerBytes is the largest ledger file the shell reads: 16 MiB, a thousand times
// what a heavy user's ledgers hold. A larger file is refused before it is read, so a
// runaway or hostile file costs no memory.
const MaxLedgerBytes = 16 << 20

// ledgerLockWait bounds how long a write waits for another process's write of the same
// ledger (a write holds that lock for one compare, write, fsync and rename).
const ledgerLockWait = 10 * time.Second

// fileLedgers is the Ledgers capability: whole-document files, versioned by content hash,
// replaced atomically under a per-ledger lock file.
type fileLedgers struct {
	home string
	// mu serialises this process's writers of one ledger (the lock file does the same
	// across processes).
	mu sync.Map // name → *sync.Mutex
	// written, when set, is called with a ledger's current and new content while the
	// write holds the ledger's lock, around the rename (the activation watcher uses it to
	// tell this process's writes from other processes').
	written func(name string, before, after []byte, rename func() error) error
	// warn reports a ledger whose mode was corrected (nil: say nothing).
	warn func(string)
}

var _ hostabi.Ledgers = (*fileLedgers)(nil)

// Path implements hostabi.Ledgers.
func (l *fileLedgers) Path(name string) string {
	rel, ok := ledgerFiles[name]
	if !ok {
		return filepath.Join(l.home, name)
	}
	return filepath.Join(l.home, rel)
}

func (l *fileLedgers) path(name string) (string, error) {
	rel, ok := ledgerFiles[name]
	if !ok {
		return "", fmt.Errorf("native: unknown ledger %q", name)
	}
	return filepath.Join(l.home, rel), nil
}

// contentVersion is the version token of a ledger's bytes; "" means absent.
func contentVersion(doc []byte) string {
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// Read implements hostabi.Ledgers. A missing file is (nil, ""). Files are replaced by
// rename, so a read sees one whole version.
func (l *fileLedgers) Read(_ context.Context, name string) ([]byte, string, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, "", err
	}
	doc, err := l.load(p)
	if err != nil || doc == nil {
		return nil, "", err
	}
	return doc, contentVersion(doc), nil
}

// load reads the ledger file at p: nil when it does not exist, a CORRUPT_LEDGER error
// naming it (and leaving it as it is) when it is not a regular file, is a symbolic link
// or is larger than MaxLedgerBytes. A ledger other users may read or write is set to 0600
// and reported through warn.
func (l *fileLedgers) load(p string) ([]byte, error) {
	doc, fi, err := readLedgerFile(p)
	if err != nil || doc == nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		msg := fmt.Sprintf("%s was mode %#o, so other users could read or change it; grantwire set it to 0600 (check that nobody changed your grants: grantwire status)", p, perm)
		if err := os.Chmod(p, 0o600); err != nil {
			msg = fmt.Sprintf("%s is mode %#o, so other users can read or change it, and grantwire could not set it to 0600 (%v): chmod 600 %s", p, perm, errors.Unwrap(err), shellQuote(p))
		}
		if l.warn != nil {
			l.warn(msg)
		}
	}
	return doc, nil
}

// readLedgerFile reads a ledger file as a regular file of at most MaxLedgerBytes, never
// through a symbolic link and never blocking on a FIFO: (nil, nil, nil) when it does not
// exist, else the bytes or a CORRUPT_LEDGER error naming the file and a fixing command.
func readLedgerFile(p string) ([]byte, fs.FileInfo, error) {
	doc, fi, err := safefile.ReadFileNoFollow(p, MaxLedgerBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, readError(p, err)
	}
	return doc, fi, nil
}

func readError(p string, err error) error {
	q := shellQuote(p)
	var nr *safefile.NotRegularError
	var tl *safefile.TooLargeError
	switch {
	case errors.Is(err, safefile.ErrSymlink):
		// Writes replace a ledger by renaming a new file over it, which would replace the
		// link and leave its target stale; reading through it would let a link planted in
		// the home point grantwire anywhere. The fix keeps the content: the link becomes
		// a copy of its target.
		target, terr := filepath.EvalSymlinks(p)
		if fi, serr := os.Stat(p); terr != nil || serr != nil || !fi.Mode().IsRegular() {
			dest, _ := os.Readlink(p)
			return hostabi.Errorf("CORRUPT_LEDGER", "mv -- "+q+" "+shellQuote(p+".link"),
				fmt.Sprintf("%s is a symbolic link to %s, which is not a readable regular file; grantwire keeps its ledgers as regular files in its home and does not follow links; nothing was changed (moving the link aside starts that ledger empty)", p, dest))
		}
		copied := shellQuote(p + ".copy")
		return hostabi.Errorf("CORRUPT_LEDGER",
			fmt.Sprintf("cp -p -- %s %s && mv -f -- %s %s", shellQuote(target), copied, copied, q),
			fmt.Sprintf("%s is a symbolic link to %s; grantwire keeps its ledgers as regular files in its home and does not follow links (a write would replace the link and leave %s stale); nothing was changed (the fix replaces the link by a copy of its target)", p, target, target))
	case errors.As(err, &nr):
		return hostabi.Errorf("CORRUPT_LEDGER", "mv -- "+q+" "+shellQuote(p+".not-a-file"),
			fmt.Sprintf("%s is %s, not a regular file; nothing was changed (moving it aside starts that ledger empty)", p, safefile.Kind(nr.Mode)))
	case errors.As(err, &tl):
		return hostabi.Errorf("CORRUPT_LEDGER", "mv -- "+q+" "+shellQuote(p+".corrupt"),
			fmt.Sprintf("%s is larger than %s, the most a ledger may hold (it is %d bytes); it was not read and nothing was changed (inspect it, or move it aside to start that ledger empty)", p, safefile.Size(tl.Limit), tl.Size))
	}
	return hostabi.Errorf("CORRUPT_LEDGER",
		fmt.Sprintf("check its permissions: the directory should be 0700 and the file 0600 and owned by you (ls -l %s)", q),
		fmt.Sprintf("could not read %s (%v); nothing was changed", p, err))
}

// shellQuote quotes a path for a POSIX shell when it holds anything but letters, digits
// and / . _ - + : @ , =.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@,=", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Write implements hostabi.Ledgers: under the ledger's lock file, compare the current
// version with ifVersion, write a temporary file in the same directory (0600), fsync it,
// rename it over the ledger and fsync the directory (0700). Modes are re-asserted on
// every write.
func (l *fileLedgers) Write(ctx context.Context, name string, doc []byte, ifVersion string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := ensureDir(l.home, dir); err != nil {
		return err
	}
	mu, _ := l.mu.LoadOrStore(name, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	lk := flock.New(filepath.Join(dir, "."+filepath.Base(p)+".lock"), flock.SetPermissions(0o600))
	if err := lockFile(ctx, lk, ledgerLockWait); err != nil {
		if errors.Is(err, hostabi.ErrBusy) {
			return fmt.Errorf("native: the lock of %s was held by another process for more than %s: %w", p, ledgerLockWait, err)
		}
		return err
	}
	defer lk.Unlock()

	cur, err := l.load(p)
	switch {
	case err != nil:
		return err
	case cur == nil:
		if ifVersion != "" {
			return fmt.Errorf("native: %s was removed: %w", p, hostabi.ErrConflict)
		}
	case contentVersion(cur) != ifVersion:
		return fmt.Errorf("native: %s changed: %w", p, hostabi.ErrConflict)
	}
	removeStaleTemps(dir, filepath.Base(p))
	rename := func() error { return replaceFile(dir, p, doc) }
	if l.written != nil {
		return l.written(name, cur, doc, rename)
	}
	return rename()
}

// ensureDir creates dir (and the home) with mode 0700 and re-asserts the mode.
func ensureDir(home, dir string) error {
	for _, d := range []string{home, dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("native: create %s: %w", d, err)
		}
		if runtime.GOOS != "windows" {
			if err := os.Chmod(d, 0o700); err != nil {
				return fmt.Errorf("native: chmod 0700 %s: %w", d, err)
			}
		}
	}
	return nil
}

const tempMarker = ".tmp-"

// removeStaleTemps deletes temporary files a killed writer left behind. It runs under the
// ledger's lock, so no live writer of this ledger owns one.
func removeStaleTemps(dir, base string) {
	matches, _ := filepath.Glob(filepath.Join(dir, "."+base+tempMarker+"*"))
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

// replaceFile writes doc to a temporary file beside p, fsyncs it, renames it over p and
// fsyncs the directory.
func replaceFile(dir, p string, doc []byte) (err error) {
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+tempMarker+"*")
	if err != nil {
		return fmt.Errorf("native: write %s: %w", p, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		return fmt.Errorf("native: chmod 0600 %s: %w", tmp, err)
	}
	if _, err = f.Write(doc); err != nil {
		return fmt.Errorf("native: write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("native: fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("native: close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, p); err != nil {
		return fmt.Errorf("native: rename %s: %w", p, err)
	}
	if runtime.GOOS != "windows" {
		_ = os.Chmod(p, 0o600)
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("native: open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !strings.Contains(err.Error(), "invalid argument") {
		return fmt.Errorf("native: fsync %s: %w", dir, err)
	}
	return nil
}
