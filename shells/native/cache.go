package native

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grantwire/grantwire/hostabi"
)

// The read caches of the OS shell (README "Performance: a token hand-out without I/O").
//
// A keyring read through D-Bus costs a millisecond; a stat costs a microsecond. So that a
// token hand-out with nothing changed touches neither the Secret Service nor a ledger's
// bytes, every read is cached behind a stamp that one stat(2) checks:
//
//   - Ledgers: the stamp of a file is its (device, inode, size, mode, mtime ns, ctime ns)
//     (Stamp, used by package host, which keeps the parsed document). grantwire replaces
//     ledgers by rename, so every write is a new inode; an edit in place by any other
//     program changes the size or the times. No writer has to cooperate.
//   - Keyring: the Secret Service has no change counter, so grantwire keeps one. Every
//     keyring set or delete by a grantwire process bumps the service's generation files
//     before and after it writes (a new file renamed over the old one, its mtime set to
//     the clock's nanoseconds, so no two bumps look alike): one in the service's lock
//     directory, shared by every home of the service, and one in the home, shared by every
//     process of the home whatever its lock directory. Generation is their stamps. The
//     cache of keyring values is not here: it is package host's memory of slots, whose
//     rule (host/cache.go) answers a value only while the generation is the one it was
//     read at. A value written by another program (GAIA, secret-tool) bumps nothing, so
//     a generation is told only for grantwire's own services ("grantwire.*":
//     hostabi.DefaultService and the per-home services); Options.NoCache or
//     GRANTWIRE_NO_CACHE=1 turn every cache off.
//
// The caches only save reads; the facts they answer are those a read of the store would
// give at the stamp checked, so the policy cannot tell them apart.

// generationFile is the name of a generation file (in the service's lock directory and in
// the home).
const generationFile = ".keyring-generation"

// cacheEnabled reports whether the read caches are on for a shell of service.
func cacheEnabled(opts Options) bool {
	if opts.NoCache {
		return false
	}
	switch strings.ToLower(opts.Getenv("GRANTWIRE_NO_CACHE")) {
	case "", "0", "false", "no":
		return true
	}
	return false
}

// ownService reports whether service is one of grantwire's own, "grantwire" or
// "grantwire.<anything>" (hostabi.DefaultService and the per-home services): no other
// program writes it, so every write bumps its generation. "gaia.connections", which GAIA
// writes too, is not.
func ownService(service string) bool {
	return service == "grantwire" || strings.HasPrefix(service, "grantwire.")
}

// generations are the generation files of the keyring services a shell uses.
type generations struct {
	home, lockDir, service string
	paths                  sync.Map // service → []string
	stat                   statFunc // nil: lstatStamp
}

func newGenerations(home, lockDir, service string) *generations {
	return &generations{home: home, lockDir: lockDir, service: service}
}

// pathsOf are the generation files of service: one in its lock directory (shared by every
// home of the service), one in the home (shared by every process of the home, whatever
// its lock directory).
func (g *generations) pathsOf(service string) []string {
	if p, ok := g.paths.Load(service); ok {
		return p.([]string)
	}
	var paths []string
	if g.lockDir != "" {
		paths = append(paths, filepath.Join(serviceLockDir(g.lockDir, service), generationFile))
	}
	name := generationFile
	if service != g.service {
		sum := sha256.Sum256([]byte(service))
		name += "-" + hex.EncodeToString(sum[:8])
	}
	paths = append(paths, filepath.Join(g.home, name))
	g.paths.Store(service, paths)
	return paths
}

// stamp returns the stamps of the generation files of service, one lstat(2) each
// ("absent" for a file that does not exist yet); ok is false when one cannot be read.
func (g *generations) stamp(service string) (string, bool) {
	paths := g.pathsOf(service)
	if len(paths) == 1 {
		return oneStamp(g.stat, paths[0])
	}
	var b []byte
	for _, p := range paths {
		s, ok := oneStamp(g.stat, p)
		if !ok {
			return "", false
		}
		b = append(b, s...)
	}
	return string(b), true
}

// bump replaces every generation file of service by a new one.
func (g *generations) bump(service string) error {
	for _, p := range g.pathsOf(service) {
		if err := bumpFile(p); err != nil {
			return &hostabi.HostError{Code: hostabi.HostErrIO,
				Detail: fmt.Sprintf("could not record a keyring change in %s (%v); other grantwire processes may not see it", p, err),
				Fix:    fmt.Sprintf("ls -ld %s", filepath.Dir(p))}
		}
	}
	return nil
}

// bumpFile writes a new generation file beside p and renames it over p: a new inode whose
// mtime is set explicitly to the clock's nanoseconds (file times are otherwise as coarse as
// the kernel's tick).
func bumpFile(p string) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, generationFile+tempMarker+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	now := time.Now()
	_, werr := f.WriteString(strconv.FormatInt(now.UnixNano(), 10) + " " + strconv.Itoa(os.Getpid()) + "\n")
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chtimes(tmp, now, now)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// changing brackets a write of service: the generation is bumped before the write (so
// that readers of the old value re-read) and after it.
func (k *keyringStore) changing(service string, write func() error) error {
	if k.gen == nil {
		return write()
	}
	if err := k.gen.bump(service); err != nil {
		return err
	}
	werr := write()
	return errors.Join(werr, k.gen.bump(service))
}

// Generation reports a token that changes whenever a grantwire process may have changed
// a value of service in the store (package host, which owns the process's keyring cache,
// answers from it only while it is unchanged); ok is false when the cache is off or the
// token unknown.
func (k *keyringStore) Generation(service string) (string, bool) {
	if k.noCache || !ownService(service) {
		return "", false
	}
	return k.gen.stamp(service)
}

// Stamp reports a token that changes whenever the ledger name may have changed: the
// stamp of one lstat(2) ("absent" when there is no file). ok is false when the cache is
// off or the file cannot be stat'ed; package host then reads the file.
func (l *fileLedgers) Stamp(name string) (string, bool) {
	if l.noCache {
		return "", false
	}
	p, err := l.path(name)
	if err != nil {
		return "", false
	}
	return oneStamp(l.stat, p)
}

// statFunc stats a file for its stamp, as lstatStamp does.
type statFunc func(path string) (stamp string, absent bool, err error)

// oneStamp is the stamp of one regular file ("absent" when it does not exist), read by
// stat (nil: lstatStamp).
func oneStamp(stat statFunc, p string) (string, bool) {
	if stat == nil {
		stat = lstatStamp
	}
	s, absent, err := stat(p)
	if absent {
		return "absent", true
	}
	return s, err == nil
}

var (
	errNotRegular = errors.New("not a regular file")
	errNoStamp    = errors.New("no file stamps on this system")
)

func notFound(service, user string) error {
	return fmt.Errorf("native: keyring %s/%s: %w", service, user, hostabi.ErrNotFound)
}
