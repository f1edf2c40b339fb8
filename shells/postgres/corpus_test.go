package postgres_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/nativeshell"
	"github.com/grantwire/grantwire/internal/testworld/pgtest"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/postgres"
)

// The conformance corpus on the PostgreSQL shell: each scenario's world is the OS shell's
// test world (internal/testworld/nativeshell: its processes' loopback, browser, HTTP to the local
// authorization server, clock, entropy, environment and event log) with the keyring, the
// ledgers and the locks of every process on PostgreSQL instead — each process its own
// postgres.Store (its own connections, so its own advisory-lock sessions), all on one
// database, the world's home and keyring service names its own. Staging, world actions and
// inspection go through one more Store (another process), which also holds the outside
// locks as real advisory locks. Beyond the runner's own leak check, every row of the
// world (ledgers' bytes, secrets' key ids and seals) is searched for the scenario's
// secrets. One engine (native, the default): the engines agree byte for byte elsewhere.

func TestCorpusOnPostgres(t *testing.T) {
	db := pgtest.Database(t, "./shells/postgres")
	keyFile := writeKeyFile(t, t.TempDir())
	inner, err := nativeshell.New("native", func(ctx context.Context, data []byte) (core.Engine, error) {
		return nativeengine.New(ctx, nativeengine.WithData(data))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inner.Close(context.Background()) })
	// Every process of every world is a sibling of one Store: its own home, service, lock
	// queues and notification identity, on warm connections.
	root, err := postgres.Open(context.Background(), db, postgres.Options{KeyFile: keyFile, MaxConns: 4, MaxLocks: 16})
	if err != nil {
		t.Fatal(err)
	}
	sh := &pgShell{Shell: inner, url: db, root: root}
	t.Cleanup(func() {
		_ = root.Close()
		if sh.conn != nil {
			_ = sh.conn.Close(context.Background())
		}
	})
	start := time.Now()
	conformance.Run(t, sh)
	t.Logf("the corpus on postgres/native took %.1f s", time.Since(start).Seconds())
}

// pgShell is the OS shell's test world with the storage on PostgreSQL.
type pgShell struct {
	*nativeshell.Shell
	url  string
	root *postgres.Store
	mu   sync.Mutex
	conn *pgx.Conn // the inspector's (rows listed and deleted)
}

func (s *pgShell) Name() string { return "postgres/native" }

// knownBusyWait is how long a process waits for a lock the world's outside holder keeps
// (it releases only between steps), as the OS shell's world does.
const knownBusyWait = nativeshell.KnownBusyWait

func (s *pgShell) NewWorld(ctx context.Context, t testing.TB, setup conformance.Setup) (conformance.World, error) {
	iw, err := s.Shell.NewWorld(ctx, t, setup)
	if err != nil {
		return nil, err
	}
	nonce := testenv.RandHex(6)
	w := &pgWorld{World: iw.(*nativeshell.World), ctx: ctx, sh: s, home: "conformance-" + nonce,
		service: hostabi.DefaultService + ".conformance." + nonce}
	w.outside, err = w.open(ctx)
	if err != nil {
		_ = w.World.Close()
		return nil, err
	}
	w.Outside.Locks, w.Outside.Ctx = w.outside.Capabilities(hostabi.Capabilities{}).Locks, ctx
	w.caps = w.overlay(w.World.Capabilities(), w.outside)
	return w, nil
}

// pgWorld is one scenario's world (see TestCorpusOnPostgres).
type pgWorld struct {
	*nativeshell.World
	ctx           context.Context
	sh            *pgShell
	home, service string

	// Outside (this world's, over the OS shell world's): the outside locks as real
	// advisory locks on the outside Store's session, and the keyring failures.
	testenv.Outside

	mu      sync.Mutex
	stores  []*postgres.Store
	outside *postgres.Store
	caps    hostabi.Capabilities
	procs   testenv.Processes
}

var (
	_ conformance.World         = (*pgWorld)(nil)
	_ conformance.Processes     = (*pgWorld)(nil)
	_ conformance.Surfaces      = (*pgWorld)(nil)
	_ conformance.KeyringLister = (*pgWorld)(nil)
)

func (w *pgWorld) open(ctx context.Context) (*postgres.Store, error) {
	st, err := w.sh.root.Sibling(w.home, w.service)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.stores = append(w.stores, st)
	w.mu.Unlock()
	return st, nil
}

// overlay lays a Store over a process's capabilities of the OS shell's world, showing the
// core the service grantwire.connections.
func (w *pgWorld) overlay(base hostabi.Capabilities, st *postgres.Store) hostabi.Capabilities {
	c := st.Capabilities(base)
	c.Keyring = w.Outside.Keyring(c.Keyring, w.realService)
	c.Locks = w.Outside.ShortLocks(c.Locks, knownBusyWait)
	c.Service = hostabi.DefaultService
	return c
}

func (w *pgWorld) Capabilities() hostabi.Capabilities { return w.caps }

func (w *pgWorld) ProcessCapabilities(name string) (hostabi.Capabilities, error) {
	return w.procs.Get(name, func() (hostabi.Capabilities, error) {
		base, err := w.World.ProcessCapabilities(name)
		if err != nil {
			return hostabi.Capabilities{}, err
		}
		st, err := w.open(w.ctx)
		if err != nil {
			return hostabi.Capabilities{}, err
		}
		return w.overlay(base, st), nil
	})
}

// realService is where the core's service grantwire.connections (or another) of this
// world is stored.
func (w *pgWorld) realService(service string) string {
	if service == hostabi.DefaultService {
		return w.service
	}
	return service + ".conformance." + w.home
}

// KeyringUsers lists the world's secrets from the table itself.
func (w *pgWorld) KeyringUsers(service string) []string {
	var users []string
	err := w.query(func(conn *pgx.Conn) error {
		rows, err := conn.Query(w.ctx, `select "user" from grantwire.secrets where service = $1 order by "user"`,
			w.realService(service))
		if err != nil {
			return err
		}
		users, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return []string{"<the secrets could not be listed: " + err.Error() + ">"}
	}
	return users
}

// Surfaces adds every row of the world, as its raw bytes, to what the OS shell's world
// shows (files under its home, which stays empty, and the prompts).
func (w *pgWorld) Surfaces() ([]conformance.Surface, error) {
	out, err := w.World.Surfaces()
	qerr := w.query(func(conn *pgx.Conn) error {
		rows, err := conn.Query(w.ctx, `select 'ledger ' || name, doc from grantwire.ledgers where home = $1
			union all select 'secret ' || "user", convert_to(key_id, 'UTF8') || wrapped_key || sealed from grantwire.secrets where service like $2`,
			w.home, w.service+"%")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var b []byte
			if err := rows.Scan(&name, &b); err != nil {
				return err
			}
			out = append(out, conformance.Surface{Name: "row " + name, Text: string(b)})
		}
		return rows.Err()
	})
	return out, errors.Join(err, qerr)
}

func (w *pgWorld) query(f func(*pgx.Conn) error) error {
	w.sh.mu.Lock()
	defer w.sh.mu.Unlock()
	if w.sh.conn == nil {
		conn, err := pgx.Connect(w.ctx, w.sh.url)
		if err != nil {
			return err
		}
		w.sh.conn = conn
	}
	return f(w.sh.conn)
}

// Close releases the outside locks, closes the OS shell's world and every Store, and
// deletes the world's rows.
func (w *pgWorld) Close() error {
	w.ReleaseAll()
	w.mu.Lock()
	stores := w.stores
	w.stores = nil
	w.mu.Unlock()
	err := w.World.Close()
	for _, st := range stores {
		_ = st.Close()
	}
	derr := w.query(func(conn *pgx.Conn) error {
		_, err := conn.Exec(context.Background(), `delete from grantwire.ledgers where home = $1;`, w.home)
		if err == nil {
			_, err = conn.Exec(context.Background(), `delete from grantwire.secrets where service like $1`, w.service+"%")
		}
		return err
	})
	return errors.Join(err, derr)
}

// writeKeyFile writes a new key file (mode 0600) in dir and returns its path.
func writeKeyFile(t testing.TB, dir string) string {
	t.Helper()
	_, text, err := postgres.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "store.key")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
