package native

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/grantwire/grantwire/hostabi"
)

// lockName is what a provider lock may be called: a catalog id, never a path.
var lockName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// fileLocks is the Locks capability. A provider's lock guards the secrets the keyring
// holds for it, and those belong to the keyring service, not to a home: two homes (or a
// grantwire home and GAIA's) that share a service share the refresh token, so they must
// share the lock. A lock is therefore two files, taken in this order and released in the
// reverse one:
//
//  1. the service lock, LockDir/<service>-<hash>/<provider>.lock, which every home of the
//     service takes (LockDir is the user's cache directory's grantwire/locks unless
//     Options.LockDir or $GRANTWIRE_LOCK_DIR says otherwise; <service> is the service
//     name with anything but letters, digits, '.', '_' and '-' replaced, and <hash> the
//     first 8 bytes of its sha256 in hex, so distinct services never collide);
//  2. the home lock, <home>/connectors/<provider>.lock, the file docs/behaviour.md#files documents,
//     which grantwire versions before the service lock take alone: holding it too keeps
//     them excluded while versions are mixed.
//
// Both are held with flock(2) (LockFileEx on Windows). Within this process, callers of one
// service lock queue on a semaphore first (shared by every Shell of the process), so the
// second of two concurrent refreshes waits for the first and then re-reads what it stored.
type fileLocks struct {
	home string
	// dir holds the service locks of this shell's service ("" when no user cache
	// directory is known: only the home lock is taken).
	dir string
}

var _ hostabi.Locks = (*fileLocks)(nil)

// semaphores queues this process's callers of one lock file, across Shells.
var semaphores sync.Map // path → chan struct{}

func semaphore(path string) chan struct{} {
	s, _ := semaphores.LoadOrStore(path, make(chan struct{}, 1))
	return s.(chan struct{})
}

// serviceLockDir is the directory of a service's provider locks under root.
func serviceLockDir(root, service string) string {
	sum := sha256.Sum256([]byte(service))
	var b strings.Builder
	for i, r := range service {
		switch {
		case i >= 48:
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return filepath.Join(root, b.String()+"-"+hex.EncodeToString(sum[:8]))
}

// defaultLockDir is $GRANTWIRE_LOCK_DIR, else <user cache dir>/grantwire/locks ("" when
// there is no user cache directory).
func defaultLockDir(getenv func(string) string) string {
	if d := getenv("GRANTWIRE_LOCK_DIR"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil || !filepath.IsAbs(cache) {
		return ""
	}
	return filepath.Join(cache, "grantwire", "locks")
}

// Path is the home lock file of a lock name.
func (l *fileLocks) Path(name string) string {
	return filepath.Join(l.home, "connectors", name+".lock")
}

// ServicePath is the service lock file of a lock name ("" when there is none).
func (l *fileLocks) ServicePath(name string) string {
	if l.dir == "" {
		return ""
	}
	return filepath.Join(l.dir, name+".lock")
}

// TryLock implements hostabi.Locks: the service lock, then the home lock, both within
// wait.
func (l *fileLocks) TryLock(ctx context.Context, name string, wait time.Duration) (func(), error) {
	if !lockName.MatchString(name) {
		return nil, fmt.Errorf("native: invalid lock name %q", name)
	}
	deadline := time.Now().Add(wait)
	key := l.ServicePath(name)
	if key == "" {
		key = l.Path(name)
	}
	sem := semaphore(key)
	select {
	case sem <- struct{}{}:
	default:
		timer := time.NewTimer(wait)
		select {
		case sem <- struct{}{}:
			timer.Stop()
		case <-timer.C:
			return nil, fmt.Errorf("native: lock %s is held by another operation of this process: %w", name, hostabi.ErrBusy)
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
	var held []*flock.Flock
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			_ = held[i].Unlock()
		}
		<-sem
	}
	for _, p := range []string{l.ServicePath(name), l.Path(name)} {
		if p == "" {
			continue
		}
		if err := ensureLockDir(l.home, filepath.Dir(p)); err != nil {
			release()
			return nil, err
		}
		lk := flock.New(p, flock.SetPermissions(0o600))
		if err := lockFile(ctx, lk, time.Until(deadline)); err != nil {
			release()
			return nil, fmt.Errorf("native: lock %s (%s): %w", name, p, err)
		}
		held = append(held, lk)
	}
	var once sync.Once
	return func() { once.Do(release) }, nil
}

// ensureLockDir creates a lock directory: the home's with ensureDir; a service lock
// directory (and its parents) 0700, the mode re-asserted on the directory itself.
func ensureLockDir(home, dir string) error {
	if dir == filepath.Join(home, "connectors") {
		return ensureDir(home, dir)
	}
	return privateDir(dir)
}

// lockFile takes an exclusive file lock, polling until wait has passed (then ErrBusy) or
// ctx ends. The poll interval grows from 1 ms to 4 ms with jitter, so a waiter gets a
// lock within a few milliseconds of its release (a refresh holds it for tens of ms).
func lockFile(ctx context.Context, lk *flock.Flock, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for {
		ok, err := lk.TryLock()
		if err != nil {
			return fmt.Errorf("native: lock %s: %w", lk.Path(), err)
		}
		if ok {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("native: %s is held by another process: %w", lk.Path(), hostabi.ErrBusy)
		}
		d := delay/2 + rand.N(delay/2+1)
		if d > left {
			d = left
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if delay < 4*time.Millisecond {
			delay *= 2
		}
	}
}
