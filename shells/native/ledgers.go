package native

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/safefile"
)

// MaxLedgerBytes is the largest ledger file the shell reads: 16 MiB, a thousand times
// what a heavy user's ledgers hold. A larger file is refused before it is read, so a
// runaway or hostile file costs no memory.
const MaxLedgerBytes = 16 << 20

// ledgerLockWait bounds how long a write waits for another process's write of the same
// ledger (a write holds that lock for one read, patch, write, fsync and rename).
const ledgerLockWait = 10 * time.Second

// fileLedgers is the Files capability: JSON files under the home named by relative paths
// (the policy names them: connectors/grants.json, ...), versioned by content hash, replaced
// atomically under a per-file lock file; and the digest of any regular file.
type fileLedgers struct {
	home string
	stat statFunc // how Stamp stats a file (nil: lstatStamp)
	// mu serialises this process's writers of one file (the lock file does the same
	// across processes).
	mu sync.Map // name → *sync.Mutex
	// written, when set, is called with a file's current and new content while the write
	// holds the file's lock, around the rename (the activation watcher uses it to tell this
	// process's writes from other processes').
	written func(name string, before, after []byte, rename func() error) error
	// warn reports a file whose mode was corrected (nil: say nothing).
	warn func(string)
	// noCache turns off Stamp (package host then parses every read).
	noCache bool
}

var _ hostabi.Files = (*fileLedgers)(nil)

// Path implements hostabi.Files.
func (l *fileLedgers) Path(name string) string {
	return filepath.Join(l.home, filepath.FromSlash(name))
}

// path checks that name is a relative path inside the home.
func (l *fileLedgers) path(name string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(name))
	if name == "" || filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) || clean == ".." {
		return "", fmt.Errorf("native: %q is not a file under the home", name)
	}
	return filepath.Join(l.home, clean), nil
}

// contentVersion is the version token of a ledger's bytes; "" means absent.
func contentVersion(doc []byte) string {
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// Read implements hostabi.Files. A missing file is (nil, ""). Files are replaced by
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

// load reads the file at p: nil when it does not exist; a *hostabi.FileRefused (the file
// left as it is) when it is a symbolic link, not a regular file or larger than
// MaxLedgerBytes. A file other users may read or write is set to 0600 and reported
// through warn.
func (l *fileLedgers) load(p string) ([]byte, error) {
	doc, fi, err := readLedgerFile(p)
	if err != nil || doc == nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		msg := fmt.Sprintf("%s was mode %#o, so other users could read or change it; grantwire set it to 0600 (check that nobody changed your grants: grantwire status)", p, perm)
		if err := os.Chmod(p, 0o600); err != nil {
			msg = fmt.Sprintf("%s is mode %#o, so other users can read or change it, and grantwire could not set it to 0600 (%v): chmod 600 %s", p, perm, errors.Unwrap(err), p)
		}
		if l.warn != nil {
			l.warn(msg)
		}
	}
	return doc, nil
}

// readLedgerFile reads a file as a regular file of at most MaxLedgerBytes, never through
// a symbolic link and never blocking on a FIFO: (nil, nil, nil) when it does not exist.
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

// readError is a file refused for what it is (the policy says what to do), else a
// failure of the host.
func readError(p string, err error) error {
	var nr *safefile.NotRegularError
	var tl *safefile.TooLargeError
	switch {
	case errors.Is(err, safefile.ErrSymlink):
		if fi, serr := os.Stat(p); serr != nil || !fi.Mode().IsRegular() {
			return &hostabi.FileRefused{Path: p, Reason: hostabi.RefusedBrokenLink}
		}
		return &hostabi.FileRefused{Path: p, Reason: hostabi.RefusedSymlink}
	case errors.As(err, &nr):
		return &hostabi.FileRefused{Path: p, Reason: hostabi.RefusedNotRegular}
	case errors.As(err, &tl):
		return &hostabi.FileRefused{Path: p, Reason: hostabi.RefusedTooLarge}
	}
	return &hostabi.HostError{Code: hostabi.HostErrIO,
		Detail: fmt.Sprintf("could not read %s (%v); nothing was changed", p, err),
		Fix:    fmt.Sprintf("ls -l %s", p)}
}

// Update implements hostabi.Files: under the file's lock file, read the current content,
// let fn turn it into the new content, write a temporary file in the same directory
// (0600), fsync it, rename it over the file and fsync the directory (0700). Modes are
// re-asserted on every write.
func (l *fileLedgers) Update(ctx context.Context, name string, fn func(doc []byte, version string) ([]byte, error)) error {
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
			return fmt.Errorf("native: the lock of %s was held by another process for more than %s", p, ledgerLockWait)
		}
		return err
	}
	defer lk.Unlock()

	cur, err := l.load(p)
	if err != nil {
		return err
	}
	version := ""
	if cur != nil {
		version = contentVersion(cur)
	}
	doc, err := fn(cur, version)
	if err != nil {
		return err
	}
	// The rename is the commit point: a cancellation that arrives before it (a Ctrl-C
	// during the read, the rewrite or the temporary file's write of a large ledger) cancels,
	// and nothing is written (issue 20 §1.20).
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", hostabi.ErrCanceled, err)
	}
	removeStaleTemps(dir, filepath.Base(p))
	rename := func() error { return replaceFile(ctx, dir, p, doc) }
	if l.written != nil {
		return l.written(name, cur, doc, rename)
	}
	return rename()
}

// Digest implements hostabi.Files: the SHA-256 of a regular file of at most max bytes
// ("~/" is the user's home directory).
func (l *fileLedgers) Digest(_ context.Context, path string, max int64) (string, error) {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory for %s", path)
		}
		path = filepath.Join(h, rest)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > max {
		return "", fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, max+1))
	if err != nil {
		return "", err
	}
	if n > max {
		return "", fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ensureDir creates dir (and the home) with mode 0700 and re-asserts the mode.
func ensureDir(home, dir string) error {
	if err := privateDir(home); err != nil {
		return err
	}
	return privateDir(dir)
}

// privateDir creates d (and its parents) with mode 0700 and re-asserts the mode of d
// itself, which MkdirAll leaves as it found it.
func privateDir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("native: create %s: %w", d, err)
	}
	if runtime.GOOS != "windows" {
		if err := os.Chmod(d, 0o700); err != nil {
			return fmt.Errorf("native: chmod 0700 %s: %w", d, err)
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
func replaceFile(ctx context.Context, dir, p string, doc []byte) (err error) {
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
	if err = ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", hostabi.ErrCanceled, err)
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
