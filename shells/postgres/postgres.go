// Package postgres is grantwire's PostgreSQL shell: the host ABI's storage capabilities on
// one PostgreSQL database that any number of machines share — the ledgers as rows, the
// keyring's secrets sealed with AES-256-GCM, the provider locks as advisory locks, and the
// changes other machines make reported through LISTEN/NOTIFY. Like every shell it makes no
// decision: package host performs the core's needs and effects over these capabilities, so
// the Go host and driver run on it unchanged.
//
// # What it owns
//
//   - Files: every ledger of a home (connectors/grants.json, mcp_servers.json, agents.json,
//     …: the names the policy gives) is a row of grantwire.ledgers keyed by (home, name),
//     holding the document's bytes exactly (a corrupt document stays corrupt, and the host
//     says so) and a version drawn from one sequence, so a version is never reused. A
//     write is a compare-and-set in one statement: the row is replaced only if its version
//     is still the one read (else it is read again and the patch applied again), and the
//     same statement notifies the change. Digest (file.digest) is the machine's own files'
//     (the base capabilities').
//   - Keyring: every value is a row of grantwire.secrets keyed by (service, user), sealed
//     with AES-256-GCM under a data key of its own, which is wrapped (AES-256-GCM again) by
//     the key-encryption key the user supplies (keys.go: a file, or an environment
//     variable) and named by its key id. A row's service and user are bound into both
//     seals, so a sealed value moved to another row does not open. The store records which
//     key is active; RotateKey re-wraps every data key under a new one while the store is in
//     use. Nothing secret is in a row, a log line or an error in plain text.
//   - Locks: a provider's lock is a session advisory lock (keyed by service and name) held
//     on a connection of its own, so a killed process frees it; within one Store callers
//     queue first. A lock held past the wait answers hostabi.ErrBusy.
//   - Events: a watcher LISTENs for ledger changes and hands the activations and grants
//     that another process changed to Options.ActivationChanges / GrantChanges, as the OS
//     shell's file watcher does (watch.go).
//   - Schema: versioned migrations (schema.go, migrations/) applied on first use under an
//     advisory lock; a database whose schema is newer than this grantwire is refused.
//   - Copy (copy.go): a home and its secrets from any capabilities to any others (the OS
//     shell's home and keyring to PostgreSQL and back), never through a plain file.
//
// A failure of the database is a *hostabi.HostError: IO (the policy's IO_ERROR, exit 5)
// saying the store is unavailable and how to check it, INSECURE_STORE for a secret that
// cannot be opened (a key this machine does not hold, a tampered row). The URL's password
// is never shown.
//
// The loopback, browser, HTTP, clock, entropy, environment and event bus stay the machine's:
// [Store.Capabilities] lays the store over the capabilities of another shell (the OS
// shell's). It imports hostabi, internal/layout and libraries (pgx, x/sync), never another shell, an engine or
// package host.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/grantwire/grantwire/hostabi"
)

// Options configures a Store. Zero values mean the documented defaults.
type Options struct {
	// Home names the home within the store (default "default"): the ledgers of one home
	// are the rows of that name. Machines that share a home give the same name.
	Home string
	// Service is the keyring service (default hostabi.DefaultService; "gaia.connections"
	// for a GAIA installation's secrets). Locks are shared by every Store of a service.
	Service string
	// KeyFile is a file holding the key-encryption keys, one per line (keys.go; default
	// $GRANTWIRE_STORE_KEY_FILE).
	KeyFile string
	// KeyEnv names an environment variable holding the keys instead of a file (the same
	// text as a key file's).
	KeyEnv string
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// Timeout bounds every statement that has no shorter deadline (default 10 s), so a
	// database that stops answering fails an operation instead of hanging it.
	Timeout time.Duration
	// MaxConns bounds the connections of ledgers and secrets (default 4); locks held use
	// connections of their own (at most MaxLocks, default 32).
	MaxConns, MaxLocks int32
	// NoWatch turns off the watcher (no LISTEN connection).
	NoWatch bool
	// ActivationChanges and GrantChanges, when set, receive the activations
	// ({connector: {agent: true}}) and the grants ledger as they were and as they are when
	// another process changed them (grantwire.Open runs the policy's activation_changes and
	// grant_changes operations on them, as for the OS shell). Without either the watcher
	// does not run.
	ActivationChanges func(before, after json.RawMessage)
	GrantChanges      func(before, after json.RawMessage)
	// Warn receives what the user should know that does not stop anything (the watcher
	// lost its connection); nil discards it.
	Warn func(string)
	// PendingFile, when set, is where a secret written under a provider lock while the
	// database does not answer is kept, sealed, until the store takes it (pending.go; the
	// CLI's is store-pending.json in its home). Without it such a secret is kept in the
	// process's memory only.
	PendingFile string
}

// Store is one process's connection to a PostgreSQL store.
type Store struct {
	opts    Options
	display string // the URL without its password, for messages
	host    string
	port    string
	pool    *pgxpool.Pool
	lockDB  *pgxpool.Pool
	keys    *keyRing
	origin  string // this Store's id in notifications
	ledgers *ledgers
	secrets *secrets
	locks   *advisoryLocks
	watcher *watcher
	sibling bool    // shares another Store's connections (Sibling)
	pending pending // lock holds and writes the store has not taken (pending.go)
}

// Open connects to the PostgreSQL database at rawURL (postgres://user:password@host:port/db),
// applies the schema's migrations when the database has none or older ones, checks that
// the key-encryption key is the store's, and starts the watcher when Options asks for one.
// Close the Store to release its connections.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Home == "" {
		opts.Home = "default"
	}
	if opts.Service == "" {
		opts.Service = hostabi.DefaultService
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 4
	}
	if opts.MaxLocks <= 0 {
		opts.MaxLocks = 32
	}
	if err := checkNames(opts); err != nil {
		return nil, err
	}
	s := &Store{opts: opts, origin: randomID()}
	cfg, err := s.parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if s.keys, err = loadKeys(opts); err != nil {
		return nil, err
	}
	cfg.MaxConns = opts.MaxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = "grantwire"
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, s.unavailable("connect", err)
	}
	lockCfg := cfg.Copy()
	lockCfg.MaxConns = opts.MaxLocks
	if s.lockDB, err = pgxpool.NewWithConfig(ctx, lockCfg); err != nil {
		s.pool.Close()
		return nil, s.unavailable("connect", err)
	}
	if err := s.ensureSchema(ctx); err != nil {
		s.closePools()
		return nil, err
	}
	if err := s.ensureKey(ctx); err != nil {
		s.closePools()
		return nil, err
	}
	s.ledgers = &ledgers{s: s}
	s.secrets = &secrets{s: s}
	s.locks = newAdvisoryLocks(s)
	if err := s.loadPending(); err != nil {
		s.closePools()
		return nil, err
	}
	if err := s.settle(ctx); err != nil {
		s.closePools()
		return nil, err
	}
	if !opts.NoWatch && (opts.ActivationChanges != nil || opts.GrantChanges != nil) {
		w, err := startWatcher(ctx, s, cfg.ConnConfig)
		if err != nil {
			s.closePools()
			return nil, err
		}
		s.watcher = w
	}
	return s, nil
}

// parseURL checks the store URL and returns the pool's configuration; the URL's password
// never appears in a message.
func (s *Store) parseURL(rawURL string) (*pgxpool.Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, &hostabi.HostError{Code: hostabi.HostErrIO,
			Detail: "the store is not a PostgreSQL URL (postgres://user:password@host:port/database); give the store as postgres://USER:PASSWORD@HOST:5432/DATABASE (GRANTWIRE_STORE or --store)"}
	}
	shown := *u
	if shown.User != nil {
		shown.User = url.User(shown.User.Username())
	}
	shown.RawQuery, shown.Fragment = "", ""
	s.display = shown.String()
	s.host, s.port = u.Hostname(), u.Port()
	if s.port == "" {
		s.port = "5432"
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, &hostabi.HostError{Code: hostabi.HostErrIO,
			Detail: fmt.Sprintf("the store URL %s is not one PostgreSQL accepts (%s); give the store as postgres://USER:PASSWORD@HOST:5432/DATABASE (GRANTWIRE_STORE or --store)", s.display, redact(err.Error(), u))}
	}
	return cfg, nil
}

// redact removes the URL's password from a message of a library.
func redact(msg string, u *url.URL) string {
	if p, ok := u.User.Password(); ok && p != "" {
		msg = strings.ReplaceAll(msg, p, "…")
		msg = strings.ReplaceAll(msg, url.QueryEscape(p), "…")
	}
	return msg
}

// Capabilities returns base with the store in place of its keyring, ledgers and locks:
// ledger reads and writes, secrets and provider locks go to PostgreSQL; the loopback,
// browser, HTTP, clock, entropy, environment and events stay base's (the OS shell's),
// and so does the digest of a file on this machine (file.digest).
func (s *Store) Capabilities(base hostabi.Capabilities) hostabi.Capabilities {
	c := base
	c.Keyring = s.secrets
	c.Files = ledgerFiles{l: s.ledgers, local: base.Files}
	c.Locks = s.locks
	c.Service = s.opts.Service
	return c
}

// Home is the home's name within the store.
func (s *Store) Home() string { return s.opts.Home }

// Service is the store's keyring service.
func (s *Store) Service() string { return s.opts.Service }

// String names the store for messages: its URL without the password.
func (s *Store) String() string { return s.display }

// KeyID is the id of the key this Store seals new secrets with (the store's active key).
func (s *Store) KeyID() string { return s.keys.activeID() }

// Sibling returns a Store of another home and keyring service on s's connections: its
// own queues for locks (advisory locks are per held connection, so siblings exclude each
// other as separate processes do) and its own identity in notifications, without a
// watcher. One process serving several homes uses siblings, and so do tests that play many
// processes (a connection costs tens of milliseconds to open). Closing a sibling leaves s's
// connections open; closing s closes them.
func (s *Store) Sibling(home, service string) (*Store, error) {
	opts := s.opts
	opts.Home, opts.Service = home, service
	opts.ActivationChanges, opts.GrantChanges, opts.NoWatch = nil, nil, true
	opts.PendingFile = "" // a sibling keeps what the store cannot take in memory
	if err := checkNames(opts); err != nil {
		return nil, err
	}
	sib := &Store{opts: opts, display: s.display, host: s.host, port: s.port, pool: s.pool, lockDB: s.lockDB,
		keys: s.keys, origin: randomID(), sibling: true}
	sib.ledgers = &ledgers{s: sib}
	sib.secrets = &secrets{s: sib}
	sib.locks = newAdvisoryLocks(sib)
	return sib, nil
}

// Close stops the watcher and closes the store's connections (locks still held are freed
// by the server when their connections close). A sibling's Close closes nothing shared.
func (s *Store) Close() error {
	if s.watcher != nil {
		s.watcher.close()
		s.watcher = nil
	}
	if !s.sibling {
		s.closePools()
	}
	return nil
}

func (s *Store) closePools() {
	if s.lockDB != nil {
		s.lockDB.Close()
	}
	if s.pool != nil {
		s.pool.Close()
	}
}

// bounded returns ctx bounded by the store's statement timeout (a shorter deadline of the
// caller's wins).
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < s.opts.Timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.opts.Timeout)
}

// column runs query, bounded like every statement, and returns its one text column; a
// failure is reported as what failed.
func (s *Store) column(ctx context.Context, what, query string, args ...any) ([]string, error) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.fail(what, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail(what, err)
	}
	return out, nil
}

func (s *Store) warn(msg string) {
	if s.opts.Warn != nil {
		s.opts.Warn(msg)
	}
}

// checkNames refuses a home or service name that cannot be used.
func checkNames(opts Options) error {
	if !homeName.MatchString(opts.Home) {
		return &hostabi.HostError{Code: hostabi.HostErrIO,
			Detail: fmt.Sprintf("the home name %q cannot be used in a PostgreSQL store; name the home with letters, digits, '.', '_' and '-' (at most 64)", opts.Home)}
	}
	return checkName("keyring service", opts.Service)
}

// checkName refuses a home or service name that cannot be one (empty, too long, control
// characters).
func checkName(what, v string) error {
	if v == "" || len(v) > 200 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return &hostabi.HostError{Code: hostabi.HostErrIO,
			Detail: fmt.Sprintf("the %s name %q cannot be used in a PostgreSQL store (1 to 200 printable characters)", what, v)}
	}
	return nil
}

// homeName is what a home may be called in a store: a name that messages show as part of
// a ledger's path, safe in a shell command unquoted.
var homeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

var errClosed = errors.New("postgres: the store is closed")
