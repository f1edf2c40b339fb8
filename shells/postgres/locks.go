package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/semaphore"

	"github.com/grantwire/grantwire/hostabi"
)

// lockName is what a provider lock may be called: a catalog id, never a path.
var lockName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// advisoryLocks is the Locks capability. A provider's lock guards the secrets the keyring
// service holds for it, so it is one PostgreSQL session advisory lock per (service, name),
// shared by every Store of the service on any machine: its key is the first 8 bytes of the
// SHA-256 of a label, the service and the name. It is held on a connection of its own
// (from a pool of lock connections), so the server frees it when that connection ends: a
// process killed while holding it frees it at once, and one that loses its connection
// loses it (which the next holder's fresh reads cover: everything read under a lock is
// read from the store again). Within one Store callers queue on a semaphore first, so
// concurrent operations of a process take their turns and at most one connection per lock
// waits. A wait past its bound answers hostabi.ErrBusy.
type advisoryLocks struct {
	s      *Store
	mu     sync.Mutex
	queues map[int64]*semaphore.Weighted
}

var _ hostabi.Locks = (*advisoryLocks)(nil)

func newAdvisoryLocks(s *Store) *advisoryLocks {
	return &advisoryLocks{s: s, queues: map[int64]*semaphore.Weighted{}}
}

// LockKey is the advisory lock key of a provider lock of a keyring service.
func LockKey(service, name string) int64 {
	sum := sha256.Sum256([]byte("grantwire.store.lock.v1\x00" + service + "\x00" + name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

func (l *advisoryLocks) queue(key int64) *semaphore.Weighted {
	l.mu.Lock()
	defer l.mu.Unlock()
	q, ok := l.queues[key]
	if !ok {
		q = semaphore.NewWeighted(1)
		l.queues[key] = q
	}
	return q
}

// TryLock implements hostabi.Locks: this Store's queue, then the advisory lock and its
// claim (pending.go), all within wait. The Store first writes what it kept while the
// database was away.
func (l *advisoryLocks) TryLock(ctx context.Context, name string, wait time.Duration) (func(), error) {
	if !lockName.MatchString(name) {
		return nil, fmt.Errorf("postgres: invalid lock name %q", name)
	}
	deadline := time.Now().Add(wait)
	key := LockKey(l.s.opts.Service, name)
	q := l.queue(key)
	if !q.TryAcquire(1) {
		qctx, cancel := context.WithDeadline(ctx, deadline)
		err := q.Acquire(qctx, 1)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("postgres: lock %s is held by another operation of this process: %w", name, hostabi.ErrBusy)
		}
	}
	conn, err := l.claimed(ctx, name, key, deadline)
	if err != nil {
		q.Release(1)
		return nil, err
	}
	l.s.pending.hold()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.unlock(conn, key)
			l.s.pending.release()
			q.Release(1)
		})
	}, nil
}

// claimed takes the advisory lock and writes its claim. A claim another holder left
// while the server restarted keeps the lock busy (the holder may have a write to make):
// the lock is tried again until deadline.
func (l *advisoryLocks) claimed(ctx context.Context, name string, key int64, deadline time.Time) (*pgxpool.Conn, error) {
	if err := l.s.settle(ctx); err != nil {
		return nil, err
	}
	for {
		conn, err := l.acquire(ctx, name, key, time.Until(deadline))
		if err != nil {
			return nil, err
		}
		ok, err := l.claim(ctx, conn, key)
		if err != nil {
			conn.Hijack().Close(context.Background())
			return nil, l.lockError(ctx, name, err)
		}
		if ok {
			return conn, nil
		}
		l.unlock(conn, key)
		pause := min(100*time.Millisecond, time.Until(deadline))
		if pause <= 0 {
			return nil, fmt.Errorf("postgres: lock %s is held in doubt: the machine that held it lost the store when it restarted, and may keep a rotated secret it writes when it runs again (any grantwire command there writes it; after %s the lock is taken over): %w", name, doubtBound, hostabi.ErrBusy)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// claim writes this Store's claim of a lock it just took: replacing its own, one whose
// holder's session ended with the server running (a killed process), or one older than
// doubtBound; it reports false for a claim left by a session the server's restart ended.
func (l *advisoryLocks) claim(ctx context.Context, conn *pgxpool.Conn, key int64) (bool, error) {
	ctx, cancel := l.s.bounded(ctx)
	defer cancel()
	var ok bool
	err := conn.QueryRow(ctx, `insert into grantwire.lock_claims as c (lock_key, origin, since) values ($1, $2, now())
		on conflict (lock_key) do update set origin = excluded.origin, since = excluded.since
		where c.origin = excluded.origin or c.since > pg_postmaster_start_time() or c.since < now() - interval '`+doubtBound+`'
		returning true`, key, l.s.origin).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return ok, err
}

// acquire takes the advisory lock on a lock connection: at once when wait is under a
// millisecond, else waiting at most wait in the server (lock_timeout: the waiter is woken
// when the holder releases, without polling).
func (l *advisoryLocks) acquire(ctx context.Context, name string, key int64, wait time.Duration) (*pgxpool.Conn, error) {
	s := l.s
	actx, cancel := context.WithTimeout(ctx, wait+s.opts.Timeout)
	defer cancel()
	conn, err := s.lockDB.Acquire(actx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, s.fail("take the lock "+name, err)
	}
	ms := wait.Milliseconds()
	if ms < 1 {
		var got bool
		if err := conn.QueryRow(actx, "select pg_try_advisory_lock($1)", key).Scan(&got); err != nil {
			conn.Hijack().Close(context.Background())
			return nil, l.lockError(ctx, name, err)
		}
		if !got {
			conn.Release()
			return nil, fmt.Errorf("postgres: lock %s is held by another process: %w", name, hostabi.ErrBusy)
		}
		return conn, nil
	}
	// Both statements in one round trip (the simple protocol); the numbers are ours.
	_, err = conn.Exec(actx, fmt.Sprintf("set lock_timeout = %d; select pg_advisory_lock(%d)", ms, key))
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available: lock_timeout passed
			conn.Release()
			return nil, fmt.Errorf("postgres: lock %s is held by another process: %w", name, hostabi.ErrBusy)
		}
		// Cancelled or broken mid-wait: whether the lock was granted is unknown, so the
		// connection goes (and with it any lock it holds).
		conn.Hijack().Close(context.Background())
		return nil, l.lockError(ctx, name, err)
	}
	return conn, nil
}

func (l *advisoryLocks) lockError(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return l.s.fail("take the lock "+name, err)
}

// unlock releases the advisory lock and returns its connection; a connection that cannot
// say it released the lock is closed (the server then frees the lock).
func (l *advisoryLocks) unlock(conn *pgxpool.Conn, key int64) {
	ctx, cancel := context.WithTimeout(context.Background(), l.s.opts.Timeout)
	defer cancel()
	var released bool
	err := conn.QueryRow(ctx, `with gone as (delete from grantwire.lock_claims where lock_key = $1 and origin = $2)
		select pg_advisory_unlock($1)`, key, l.s.origin).Scan(&released)
	if err != nil || !released {
		conn.Hijack().Close(context.Background())
		return
	}
	conn.Release()
}
