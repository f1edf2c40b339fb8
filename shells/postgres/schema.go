package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/grantwire/grantwire/hostabi"
)

// migrations are the schema's versions, NNN_name.sql numbered from 001 without gaps,
// applied in order (one transaction each) by ensureSchema, which records the version in
// grantwire.schema_version (one row, the layout jackc/tern uses). A migration is never
// edited once released: a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// versionTable is where the schema's version is recorded.
const versionTable = "grantwire.schema_version"

// SchemaVersion is the schema version this grantwire writes (the number of migrations).
var SchemaVersion = func() int32 {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	return int32(len(names))
}()

// schemaLock is the advisory lock under which one process creates or migrates the schema
// while others wait.
const schemaLock = int64(0x6772616e74770001) // "grantw" 0001

// ensureSchema applies the migrations the database lacks. A schema at this version costs
// one query; a newer one is refused, saying what to do.
func (s *Store) ensureSchema(ctx context.Context) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	v, err := s.schemaVersion(ctx, s.pool)
	if err == nil && v == SchemaVersion {
		return nil
	}
	if err != nil && !missingSchema(err) {
		return s.fail("read the schema version", err)
	}
	if err == nil && v > SchemaVersion {
		return s.newerSchema(v)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.fail("migrate the schema", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "select pg_advisory_lock($1)", schemaLock); err != nil {
		return s.fail("migrate the schema", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "select pg_advisory_unlock($1)", schemaLock) }()
	if _, err := conn.Exec(ctx, `create schema if not exists grantwire;
		create table if not exists `+versionTable+` (version int4 not null);
		insert into `+versionTable+` (version) select 0 where not exists (select 1 from `+versionTable+`)`); err != nil {
		return s.fail("create the schema grantwire", err)
	}
	cur, err := s.schemaVersion(ctx, conn)
	if err != nil {
		return s.fail("read the schema version", err)
	}
	if cur > SchemaVersion {
		return s.newerSchema(cur)
	}
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	for v := cur; v < SchemaVersion; v++ {
		sql, err := migrations.ReadFile(names[v])
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "update "+versionTable+" set version = $1", v+1)
			return err
		})
		if err != nil {
			return s.fail(fmt.Sprintf("migrate the schema from version %d to %d (%s)", v, v+1, path.Base(names[v])), err)
		}
	}
	return nil
}

func (s *Store) schemaVersion(ctx context.Context, q querier) (int32, error) {
	var v int32
	err := q.QueryRow(ctx, "select version from "+versionTable).Scan(&v)
	return v, err
}

// missingSchema reports a database without grantwire's schema (or its version table).
func missingSchema(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000")
}

func (s *Store) newerSchema(v int32) error {
	return &hostabi.HostError{Code: hostabi.HostErrIO,
		Detail: fmt.Sprintf("the PostgreSQL store %s has schema version %d, newer than this grantwire knows (%d): a newer grantwire migrated it, and this one could misread it, so it changes nothing; upgrade grantwire on this machine to the release the other machines of the store run (grantwire version prints this one's)", s.display, v, SchemaVersion)}
}
