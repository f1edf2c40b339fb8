package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/grantwire/grantwire/hostabi"
)

// lockName is what a provider lock may be called: a catalog id, never a path.
var lockName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// fileLocks is the Locks capability: connectors/<name>.lock held with flock(2) (LockFileEx
// on Windows) by every grantwire process of the user. Within this process, callers of one
// lock queue on a semaphore first, so the second of two concurrent refreshes waits for
// the first and then re-reads what it stored.
type fileLocks struct {
	home string
	mu   sync.Mutex
	sems map[string]chan struct{}
}

var _ hostabi.Locks = (*fileLocks)(nil)

func (l *fileLocks) sem(name string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sems[name]
	if !ok {
		s = make(chan struct{}, 1)
		l.sems[name] = s
	}
	return s
}

// Path is the lock file of a lock name.
func (l *fileLocks) Path(name string) string {
	return filepath.Join(l.home, "connectors", name+".lock")
}

// TryLock implements hostabi.Locks.
func (l *fileLocks) TryLock(ctx context.Context, name string, wait time.Duration) (func(), error) {
	if !lockName.MatchString(name) {
		return nil, fmt.Errorf("native: invalid lock name %q", name)
	}
	deadline := time.Now().Add(wait)
	sem := l.sem(name)
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
	p := l.Path(name)
	if err := ensureDir(l.home, filepath.Dir(p)); err != nil {
		<-sem
		return nil, err
	}
	lk := flock.New(p, flock.SetPermissions(0o600))
	if err := lockFile(ctx, lk, time.Until(deadline)); err != nil {
		<-sem
		return nil, fmt.Errorf("native: lock %s (%s): %w", name, p, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = lk.Unlock()
			<-sem
		})
	}, nil
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
