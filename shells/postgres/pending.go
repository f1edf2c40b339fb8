package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/grantwire/grantwire/hostabi"
)

// Writes the store could not take while a provider lock was held.
//
// A refresh runs under the provider's lock: the stored refresh token is read again, the
// provider is asked, and the rotated token is written back. A provider that rotates has
// retired the old token by the time it answers, so if the database goes away between the
// answer and the write, the new token is the only one left, and it is on this machine.
// Failing the write would lose it (the next refresh, on any machine, would send the retired
// token: a reuse, which a rotating provider answers by revoking the connection). So:
//
//   - While this Store holds a lock, it remembers the secrets it read and wrote under it
//     (with the row's revision). When the database does not answer, a read of one of them
//     answers what the store held (nobody can have changed it while the store is down),
//     and a write of one of them is kept here, sealed as a row would be, in memory and in
//     Options.PendingFile (mode 0600, written before the write is reported done) — the
//     operation goes on, and fails at its next write that needs the store.
//   - Every call of the Store first writes what it keeps, as soon as the database answers:
//     each secret only if its row is still at the revision it replaced (a reconnect or a
//     disconnect made meanwhile wins), and the holder's claims are deleted in the same
//     transaction. A Store opened on a machine whose PendingFile holds writes does this
//     first (a CLI that failed writes them with the machine's next command).
//   - Other machines cannot take the lock meanwhile: taking a provider lock writes a claim
//     (grantwire.lock_claims) that releasing it deletes. A claim found when the lock is
//     taken means its holder's session ended without releasing it; if the server has not
//     restarted since, the holder ended (killed) and the lock is taken over at once; if it
//     has, the holder may hold a write of the kind above, and the lock stays busy until
//     the holder writes it or doubtBound passes.

// doubtBound is how long a claim left by a session the server's restart ended keeps the
// lock from other machines: the time its holder has to write what it kept. Past it the lock
// is taken over (what the holder kept, if it ever comes back, then loses to newer state).
const doubtBound = "10 minutes"

// slot names a secret.
type slot struct{ service, user string }

// knownRow is a secret as this Store last read or wrote it under a lock.
type knownRow struct {
	value    string
	revision int64
}

// pendingWrite is a sealed secret waiting for the store: it replaces the row at revision
// base. Origin is the Store whose claims it settles.
type pendingWrite struct {
	Service  string `json:"service"`
	User     string `json:"user"`
	Base     int64  `json:"base_revision"`
	KeyID    string `json:"key_id"`
	Wrapped  []byte `json:"wrapped_key"`
	Sealed   []byte `json:"sealed"`
	Origin   string `json:"origin"`
	Home     string `json:"home"`
	StoreURL string `json:"store"`
}

// pending is a Store's memory of its lock holds and of the writes the store has not taken.
type pending struct {
	mu     sync.Mutex
	held   int               // locks this Store holds
	known  map[slot]knownRow // secrets read or written while a lock is held
	writes map[slot]pendingWrite
}

func (p *pending) hold() {
	p.mu.Lock()
	p.held++
	p.mu.Unlock()
}

func (p *pending) release() {
	p.mu.Lock()
	if p.held--; p.held == 0 {
		p.known = nil
	}
	p.mu.Unlock()
}

// remember records a secret read or written while a lock is held.
func (p *pending) remember(k slot, value string, revision int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == 0 {
		return
	}
	if p.known == nil {
		p.known = map[slot]knownRow{}
	}
	p.known[k] = knownRow{value, revision}
}

// recall is the secret as it was read or written under the lock held now.
func (p *pending) recall(k slot) (knownRow, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.known[k]
	return r, ok && p.held > 0
}

func (p *pending) empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.writes) == 0
}

// unavailable reports a failure that is the store's absence.
func unavailable(err error) bool {
	var he *hostabi.HostError
	return errors.As(err, &he) && he.Code == hostabi.HostErrStoreUnavailable
}

// keep seals value for the row at base and keeps it until the store takes it: in memory
// and, when the Store has one, in its pending file. It fails (and keeps nothing) when
// the file cannot be written.
func (s *Store) keep(k slot, value string, base int64) error {
	key, ok := s.keys.get(s.keys.activeID())
	if !ok {
		return fmt.Errorf("postgres: no active key to seal a pending write with")
	}
	wrapped, sealed, err := seal(key, k.service, k.user, []byte(value))
	if err != nil {
		return err
	}
	p := &s.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.writes == nil {
		p.writes = map[slot]pendingWrite{}
	}
	prev, had := p.writes[k]
	p.writes[k] = pendingWrite{Service: k.service, User: k.user, Base: base, KeyID: key.ID, Wrapped: wrapped,
		Sealed: sealed, Origin: s.origin, Home: s.opts.Home, StoreURL: s.display}
	if err := s.savePending(); err != nil {
		if had {
			p.writes[k] = prev
		} else {
			delete(p.writes, k)
		}
		return err
	}
	if p.known != nil {
		p.known[k] = knownRow{value, base}
	}
	s.warn(fmt.Sprintf("the PostgreSQL store %s does not answer: the new value of %s/%s is kept sealed in %s until it answers", s.display, k.service, k.user, s.pendingWhere()))
	return nil
}

func (s *Store) pendingWhere() string {
	if s.opts.PendingFile == "" {
		return "this process's memory"
	}
	return s.opts.PendingFile
}

// savePending writes the pending writes to the pending file (atomically, 0600), or
// removes the file when there are none. The caller holds s.pending.mu.
func (s *Store) savePending() error {
	path := s.opts.PendingFile
	if path == "" {
		return nil
	}
	if len(s.pending.writes) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	list := make([]pendingWrite, 0, len(s.pending.writes))
	for _, w := range s.pending.writes {
		list = append(list, w)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".store-pending-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// loadPending reads the pending file of an earlier process: its writes for this store's
// home are this Store's to settle.
func (s *Store) loadPending() error {
	path := s.opts.PendingFile
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &hostabi.HostError{Code: hostabi.HostErrIO,
			Detail: fmt.Sprintf("the writes kept for the PostgreSQL store in %s cannot be read (%v); nothing was changed", path, errors.Unwrap(err))}
	}
	var list []pendingWrite
	if err := json.Unmarshal(b, &list); err != nil {
		return &hostabi.HostError{Code: hostabi.HostErrIO,
			Detail: fmt.Sprintf("the writes kept for the PostgreSQL store in %s are not readable JSON; it was left as it is; move it aside (the secrets it kept are sealed, and lost without it) and retry", path)}
	}
	s.pending.mu.Lock()
	defer s.pending.mu.Unlock()
	for _, w := range list {
		if s.pending.writes == nil {
			s.pending.writes = map[slot]pendingWrite{}
		}
		s.pending.writes[slot{w.Service, w.User}] = w
	}
	return nil
}

// settle writes what the Store keeps, once the store answers: each secret only if its row
// is still at the revision it replaced, and the claims of the Stores that kept them
// deleted, in one transaction. A store still away leaves everything kept.
func (s *Store) settle(ctx context.Context) error {
	if s.pending.empty() {
		return nil
	}
	p := &s.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.fail("write the secrets kept while it was away", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	origins := map[string]bool{}
	for _, w := range p.writes {
		if w.Home != s.opts.Home || w.StoreURL != s.display {
			continue // another store's or home's: settled by a Store of those
		}
		if _, err := tx.Exec(ctx, `update grantwire.secrets set key_id = $3, wrapped_key = $4, sealed = $5,
			revision = revision + 1, updated_at = now() where service = $1 and "user" = $2 and revision = $6`,
			w.Service, w.User, w.KeyID, w.Wrapped, w.Sealed, w.Base); err != nil {
			return s.fail("write the secrets kept while it was away", err)
		}
		origins[w.Origin] = true
	}
	for o := range origins {
		if _, err := tx.Exec(ctx, `delete from grantwire.lock_claims where origin = $1`, o); err != nil {
			return s.fail("write the secrets kept while it was away", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return s.fail("write the secrets kept while it was away", err)
	}
	for k, w := range p.writes {
		if origins[w.Origin] {
			delete(p.writes, k)
		}
	}
	return s.savePending()
}
