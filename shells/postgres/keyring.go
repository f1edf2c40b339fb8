package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/grantwire/grantwire/hostabi"
)

// secrets is the Keyring capability: grantwire.secrets, every value sealed (keys.go).
type secrets struct{ s *Store }

var _ hostabi.Keyring = (*secrets)(nil)

// Get implements hostabi.Keyring. Under a provider lock, a secret already read or
// written under it is answered from memory when the database does not answer (pending.go).
func (k *secrets) Get(ctx context.Context, service, user string) (string, error) {
	s, at := k.s, slot{service, user}
	err := s.settle(ctx)
	var value string
	var revision int64
	if err == nil {
		value, revision, err = k.get(ctx, service, user)
	}
	if err == nil {
		s.pending.remember(at, value, revision)
		return value, nil
	}
	if r, ok := s.pending.recall(at); ok && unavailable(err) {
		return r.value, nil
	}
	return "", err
}

func (k *secrets) get(ctx context.Context, service, user string) (string, int64, error) {
	s := k.s
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var keyID string
	var wrapped, sealed []byte
	var revision int64
	err := s.pool.QueryRow(ctx, `select key_id, wrapped_key, sealed, revision from grantwire.secrets where service = $1 and "user" = $2`,
		service, user).Scan(&keyID, &wrapped, &sealed, &revision)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, fmt.Errorf("postgres: keyring %s/%s: %w", service, user, hostabi.ErrNotFound)
	}
	if err != nil {
		return "", 0, s.fail("read a secret", err)
	}
	key, ok := s.keys.lookup(keyID)
	if !ok {
		return "", 0, &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("the secret %s/%s in the PostgreSQL store %s is sealed under the key %s, which %s does not hold", service, user, s.display, keyID, s.keys.source) + "; " + s.keys.source.fixHint()}
	}
	plain, err := unseal(key, service, user, wrapped, sealed)
	if err != nil {
		return "", 0, &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("the secret %s/%s in the PostgreSQL store %s does not open under its key %s: its row was changed outside grantwire or is corrupt; it was left as it is", service, user, s.display, keyID) + "; " + fmt.Sprintf("restore the row (service %q, user %q of grantwire.secrets) from a backup of the store; or connect or configure again, which replaces it", service, user)}
	}
	return string(plain), revision, nil
}

// Set implements hostabi.Keyring: the value sealed under the store's active key, in one
// statement that holds the key's row shared (a rotation waits for it, and a write that
// began under a key no longer active writes nothing and is sealed again under the new one).
// Under a provider lock, a secret read under it that the database does not take is kept,
// sealed, until it does (pending.go): a rotated refresh token is never lost.
func (k *secrets) Set(ctx context.Context, service, user, value string) error {
	s, at := k.s, slot{service, user}
	err := s.settle(ctx)
	var revision int64
	if err == nil {
		revision, err = k.set(ctx, service, user, value)
	}
	if err == nil {
		s.pending.remember(at, value, revision)
		return nil
	}
	if r, ok := s.pending.recall(at); ok && unavailable(err) {
		if kerr := s.keep(at, value, r.revision); kerr != nil {
			return errors.Join(err, kerr)
		}
		return nil
	}
	return err
}

func (k *secrets) set(ctx context.Context, service, user, value string) (int64, error) {
	s := k.s
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	for range 4 {
		key, ok := s.keys.get(s.keys.activeID())
		if !ok {
			return 0, s.refreshActive(ctx)
		}
		wrapped, sealed, err := seal(key, service, user, []byte(value))
		if err != nil {
			return 0, err
		}
		var revision int64
		err = s.pool.QueryRow(ctx, `insert into grantwire.secrets as t (service, "user", key_id, wrapped_key, sealed)
			select $1, $2, k.key_id, $4, $5 from grantwire.keys k where k.key_id = $3 and k.active for share
			on conflict (service, "user") do update set key_id = excluded.key_id, wrapped_key = excluded.wrapped_key,
				sealed = excluded.sealed, revision = t.revision + 1, updated_at = now()
			returning t.revision`,
			service, user, key.ID, wrapped, sealed).Scan(&revision)
		if err == nil {
			return revision, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, s.fail("store a secret", err)
		}
		// The active key changed (a rotation): learn the new one and seal again.
		if err := s.refreshActive(ctx); err != nil {
			return 0, err
		}
	}
	return 0, &hostabi.HostError{Code: hostabi.HostErrIO,
		Detail: fmt.Sprintf("the active key of the PostgreSQL store %s kept changing while a secret was stored; nothing was stored", s.display)}
}

// Delete implements hostabi.Keyring; deleting nothing succeeds.
func (k *secrets) Delete(ctx context.Context, service, user string) error {
	s := k.s
	if err := s.settle(ctx); err != nil {
		return err
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `delete from grantwire.secrets where service = $1 and "user" = $2`, service, user); err != nil {
		return s.fail("delete a secret", err)
	}
	return nil
}

// Users lists the users of a service that hold a value (a store copy lists them; the core
// never needs to).
func (k *secrets) Users(ctx context.Context, service string) ([]string, error) {
	return k.s.column(ctx, "list the secrets", `select "user" from grantwire.secrets where service = $1 order by "user"`, service)
}
