package postgres

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/grantwire/grantwire/hostabi"
)

// MaxLedgerBytes is the largest ledger the store answers (as the OS shell: 16 MiB); a
// larger row is refused before it is read, and left as it is.
const MaxLedgerBytes = 16 << 20

// casRetries bounds how often a write is patched again after another process changed the
// ledger between its read and its compare-and-set.
const casRetries = 64

// notifyChannel carries every ledger change: {"home", "name", "version", "origin"}.
const notifyChannel = "grantwire_ledgers"

type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ledgers are the rows of one home in grantwire.ledgers.
type ledgers struct{ s *Store }

// ledgerFiles is the Files capability: the home's ledgers, and the digest of a file on this
// machine from the base capabilities.
type ledgerFiles struct {
	l     *ledgers
	local hostabi.Files
}

var _ hostabi.Files = ledgerFiles{}

// Path implements hostabi.Files: the ledger as messages name it, the store's URL (without
// its password), the home and the ledger's name
// (postgres://user@host:5432/db/<home>/connectors/grants.json).
func (f ledgerFiles) Path(name string) string { return f.l.path(name) }

func (l *ledgers) path(name string) string {
	return l.s.display + "/" + l.s.opts.Home + "/" + name
}

// Read implements hostabi.Files.
func (f ledgerFiles) Read(ctx context.Context, name string) ([]byte, string, error) {
	if err := f.l.s.settle(ctx); err != nil {
		return nil, "", err
	}
	doc, v, err := f.l.read(ctx, f.l.s.pool, name)
	if err != nil || doc == nil {
		return nil, "", err
	}
	return doc, versionToken(v), nil
}

// Update implements hostabi.Files: read the row, let fn patch the document, and replace
// the row only if its version is still the one read (one statement, which also notifies
// the change); when another process wrote in between, read and patch again.
func (f ledgerFiles) Update(ctx context.Context, name string, fn func(doc []byte, version string) ([]byte, error)) error {
	if err := f.l.s.settle(ctx); err != nil {
		return err
	}
	return f.l.update(ctx, name, fn)
}

// Digest implements hostabi.Files: the digest of a file on this machine.
func (f ledgerFiles) Digest(ctx context.Context, p string, max int64) (string, error) {
	if f.local == nil {
		return "", fmt.Errorf("no file system to read %s from", p)
	}
	return f.local.Digest(ctx, p, max)
}

// versionToken is a ledger version as the host sees it ("" is an absent ledger).
func versionToken(v int64) string { return "pg:" + strconv.FormatInt(v, 10) }

// checkLedgerName refuses a name that is not a relative path inside the home.
func checkLedgerName(name string) error {
	clean := path.Clean(name)
	if name == "" || clean != name || strings.HasPrefix(name, "/") || name == "." || name == ".." ||
		strings.HasPrefix(name, "../") || strings.ContainsAny(name, "\\\x00") {
		return fmt.Errorf("postgres: %q is not a ledger of the home", name)
	}
	return nil
}

// read returns a ledger's bytes and version (nil, 0 when there is none).
func (l *ledgers) read(ctx context.Context, q querier, name string) ([]byte, int64, error) {
	if err := checkLedgerName(name); err != nil {
		return nil, 0, err
	}
	s := l.s
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var doc []byte
	var size, version int64
	err := q.QueryRow(ctx, `select case when octet_length(doc) <= $3 then doc end, octet_length(doc), version
		from grantwire.ledgers where home = $1 and name = $2`, s.opts.Home, name, MaxLedgerBytes).Scan(&doc, &size, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, s.fail("read the ledger "+name, err)
	}
	if size > MaxLedgerBytes {
		return nil, 0, &hostabi.FileRefused{Path: l.path(name), Reason: hostabi.RefusedTooLarge}
	}
	if doc == nil {
		doc = []byte{}
	}
	return doc, version, nil
}

// writeSQL replaces a row whose version is still $4, or inserts one where there was none
// ($4 = 0), drawing the new version from the sequence and notifying the change in the
// same statement.
const (
	updateSQL = `with w as (update grantwire.ledgers set doc = $3, version = nextval('grantwire.ledger_versions'), updated_at = now()
		where home = $1 and name = $2 and version = $4 returning version)
		select version, pg_notify('` + notifyChannel + `', json_build_object('home', $1::text, 'name', $2::text, 'version', version, 'origin', $5::text)::text) from w`
	insertSQL = `with w as (insert into grantwire.ledgers (home, name, doc, version) values ($1, $2, $3, nextval('grantwire.ledger_versions'))
		on conflict (home, name) do nothing returning version)
		select version, pg_notify('` + notifyChannel + `', json_build_object('home', $1::text, 'name', $2::text, 'version', version, 'origin', $4::text)::text) from w`
)

func (l *ledgers) update(ctx context.Context, name string, fn func(doc []byte, version string) ([]byte, error)) error {
	s := l.s
	w := s.watcher.ledger(name)
	for range casRetries {
		cur, v, err := l.read(ctx, s.pool, name)
		if err != nil {
			return err
		}
		token := ""
		if cur != nil {
			token = versionToken(v)
		}
		doc, err := fn(cur, token)
		if err != nil {
			return err
		}
		next, ok, err := l.compareAndSet(ctx, name, doc, v, cur != nil)
		if err != nil {
			return err
		}
		if ok {
			if w != nil {
				w.written(cur, v, doc, next)
			}
			return nil
		}
	}
	return &hostabi.HostError{Code: hostabi.HostErrIO,
		Detail: fmt.Sprintf("%s changed %d times while grantwire tried to write it; nothing was written", l.path(name), casRetries)}
}

// compareAndSet writes doc if the ledger is still at version v (present) or still absent;
// ok is false when another process wrote first.
func (l *ledgers) compareAndSet(ctx context.Context, name string, doc []byte, v int64, present bool) (int64, bool, error) {
	s := l.s
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var next int64
	var ignored string
	var err error
	if present {
		err = s.pool.QueryRow(ctx, updateSQL, s.opts.Home, name, doc, v, s.origin).Scan(&next, &ignored)
	} else {
		err = s.pool.QueryRow(ctx, insertSQL, s.opts.Home, name, doc, s.origin).Scan(&next, &ignored)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.fail("write the ledger "+name, err)
	}
	return next, true, nil
}

// Names lists the home's ledgers (a store copy lists them; the core names the ones it
// reads).
func (l *ledgers) names(ctx context.Context) ([]string, error) {
	return l.s.column(ctx, "list the ledgers", `select name from grantwire.ledgers where home = $1 order by name`, l.s.opts.Home)
}

// MoveAside renames a ledger of the home to name + ".corrupt" (replacing an older one), so
// that the ledger starts empty and nothing is lost: what `mv FILE FILE.corrupt` does for
// the OS shell's file. It reports whether there was a ledger to move.
func (s *Store) MoveAside(ctx context.Context, name string) (bool, error) {
	if err := checkLedgerName(name); err != nil {
		return false, err
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	moved := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `delete from grantwire.ledgers where home = $1 and name = $2`, s.opts.Home, name+".corrupt"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `update grantwire.ledgers set name = $3, version = nextval('grantwire.ledger_versions') where home = $1 and name = $2`,
			s.opts.Home, name, name+".corrupt")
		if err != nil {
			return err
		}
		moved = tag.RowsAffected() == 1
		_, err = tx.Exec(ctx, `select pg_notify('`+notifyChannel+`', json_build_object('home', $1::text, 'name', $2::text, 'version', 0, 'origin', $3::text)::text)`,
			s.opts.Home, name, s.origin)
		return err
	})
	if err != nil {
		return false, s.fail("move the ledger "+name+" aside", err)
	}
	return moved, nil
}
