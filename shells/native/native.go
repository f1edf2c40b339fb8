// Package native is grantwire's OS shell: the host ABI's capabilities on the operating
// system — the OS credential store through go-keyring, ledger files under
// $GRANTWIRE_HOME, per-provider file locks shared by every process of the user, the PKCE
// loopback listener on 127.0.0.1, and HTTP through golang.org/x/oauth2.
//
// # What it owns
//
//   - Keyring: go-keyring (Keychain, Credential Manager, Secret Service), every call bounded
//     by Options.KeyringTimeout, values larger than a platform's limit split into parts with
//     GAIA's manifest scheme (a torn multi-part value reads as absent), and no secure store
//     reported as INSECURE_STORE with what to install — never a file fallback.
//   - Ledgers: connectors/grants.json, connectors/activations.json, connectors/state.json
//     and mcp_servers.json under the home; a content hash is the version; writes are
//     conditional and atomic across processes (per-ledger lock file, temp file, fsync,
//     rename, fsync of the directory; 0600 files in 0700 directories, re-asserted on every
//     write). Ledgers are never reset or rewritten on their own. A ledger is read only as a
//     regular file of at most MaxLedgerBytes, never through a symbolic link and never
//     blocking on a FIFO (internal/safefile); one other users may read is set to 0600 and
//     reported through Options.Warn.
//   - Locks: per provider, a lock of the keyring service (under Options.LockDir, by default
//     the user's cache directory) then the home's connectors/<provider>.lock (gofrs/flock),
//     queued within the process: two homes sharing a service share the lock.
//   - OAuth: PKCE S256 authorization through a one-shot 127.0.0.1 loopback (origin-form
//     requests only, so the Host header checked is the one sent), the code
//     exchange and the refresh grant (x/oauth2); every URL and redirect hop passes
//     Options.CheckURL first, and token endpoint redirects are never followed.
//   - Clock (real unless Options.Clock), Entropy (crypto/rand unless Options.Entropy), the
//     event [Bus], and a watcher that reports activations changed by other processes.
//
// It imports hostabi (and libraries), never the engines: the transport rule reaches it as
// the Options.CheckURL function.
package native

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/grantwire/grantwire/hostabi"
)

// Options configures the OS shell. Zero values mean the documented defaults.
type Options struct {
	// Home is grantwire's directory (default $GRANTWIRE_HOME, else ~/.grantwire).
	Home string
	// Service is the keyring service (default hostabi.DefaultService; "gaia.connections"
	// shares a GAIA installation).
	Service string
	// KeyLayout maps hostabi's keyring user names ("<provider>:default",
	// "provider:<provider>", "<connector>:<ENV_KEY>") to the names stored; nil keeps them,
	// which is GAIA's layout.
	KeyLayout func(user string) string
	// Agents is the agent registry.
	Agents hostabi.Agents
	// Catalog returns a connector's catalog entry.
	Catalog func(id string) (hostabi.Connector, bool)
	// CheckURL applies the core's transport rule to a URL or redirect hop (grantwire.CheckURL).
	// Without it no OAuth request is sent.
	CheckURL func(ctx context.Context, u *url.URL, purpose string, hop int, from *url.URL) error
	// Browser opens a URL for the user; nil means headless (print the URL and wait).
	Browser func(url string) error
	// Prompt receives what the user must read while an authorization waits (the URL,
	// progress); nil means os.Stderr.
	Prompt io.Writer
	// Interactive reports whether a person can complete an authorization at all; when false
	// and no browser is available, Authorize reports interactive_required at once.
	Interactive bool
	// AuthTimeout bounds an interactive authorization (default 5 minutes).
	AuthTimeout time.Duration
	// KeyringTimeout bounds every keyring call (default 10 s).
	KeyringTimeout time.Duration
	// HTTPTimeout bounds every HTTP request to a provider (default 30 s).
	HTTPTimeout time.Duration
	// Clock tells the time (default the system clock).
	Clock hostabi.Clock
	// Entropy supplies random bytes for the state parameter (default crypto/rand).
	Entropy hostabi.Entropy
	// NoWatch turns off the watcher of activations changed by other processes.
	NoWatch bool
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// LockDir is where the provider locks shared by every home of a keyring service live:
	// LockDir/<service>-<hash>/<provider>.lock (default $GRANTWIRE_LOCK_DIR, else
	// <user cache dir>/grantwire/locks).
	LockDir string
	// Warn receives what the user should know but that does not stop an operation (a
	// ledger other users could read, now set to 0600); nil writes "grantwire: warning: …"
	// lines to Prompt.
	Warn func(string)
}

// Shell is the OS shell.
type Shell struct {
	opts      Options
	home      string
	keyring   *keyringStore
	ledgers   *fileLedgers
	locks     *fileLocks
	oauth     *oauthClient
	bus       *Bus
	watcher   *activationWatcher
	entropy   io.Reader
	transport http.RoundTripper
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// New opens the OS shell on opts.Home. Unless NoWatch is set it creates the home's
// connectors directory (0700) and starts the activation watcher.
func New(opts Options) (*Shell, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Home == "" {
		opts.Home = opts.Getenv("GRANTWIRE_HOME")
	}
	if opts.Home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("native: no home directory for ~/.grantwire (set GRANTWIRE_HOME): %w", err)
		}
		opts.Home = filepath.Join(h, ".grantwire")
	}
	home, err := filepath.Abs(opts.Home)
	if err != nil {
		return nil, fmt.Errorf("native: home %q: %w", opts.Home, err)
	}
	opts.Home = home
	if opts.Service == "" {
		opts.Service = hostabi.DefaultService
	}
	if opts.KeyLayout == nil {
		opts.KeyLayout = func(u string) string { return u }
	}
	if opts.Prompt == nil {
		opts.Prompt = os.Stderr
	}
	if opts.AuthTimeout <= 0 {
		opts.AuthTimeout = 5 * time.Minute
	}
	if opts.KeyringTimeout <= 0 {
		opts.KeyringTimeout = 10 * time.Second
	}
	if opts.HTTPTimeout <= 0 {
		opts.HTTPTimeout = 30 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	s := &Shell{opts: opts, home: home, bus: NewBus(), entropy: rand.Reader}
	if opts.Entropy != nil {
		s.entropy = opts.Entropy
	}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		s.transport = t.Clone()
	} else {
		s.transport = http.DefaultTransport
	}
	s.keyring = &keyringStore{b: goKeyring{}, timeout: opts.KeyringTimeout, layout: opts.KeyLayout, getenv: os.Getenv}
	if opts.Warn == nil {
		prompt := opts.Prompt
		opts.Warn = func(msg string) { fmt.Fprintf(prompt, "grantwire: warning: %s\n", msg) }
	}
	s.opts.Warn = opts.Warn
	s.ledgers = &fileLedgers{home: home, warn: opts.Warn}
	if opts.LockDir == "" {
		opts.LockDir = defaultLockDir(opts.Getenv)
	} else if abs, err := filepath.Abs(opts.LockDir); err == nil {
		opts.LockDir = abs
	}
	s.opts.LockDir = opts.LockDir
	s.locks = &fileLocks{home: home}
	if opts.LockDir != "" {
		s.locks.dir = serviceLockDir(opts.LockDir, opts.Service)
	}
	s.oauth = &oauthClient{s: s}
	if !opts.NoWatch {
		if err := ensureDir(home, filepath.Join(home, "connectors")); err != nil {
			return nil, err
		}
		s.watcher = startWatcher(s.ledgers.Path(hostabi.LedgerActivations), s.bus)
		s.ledgers.written = func(name string, before, after []byte, rename func() error) error {
			if name != hostabi.LedgerActivations {
				return rename()
			}
			return s.watcher.written(before, after, rename)
		}
	}
	return s, nil
}

// Capabilities returns the shell's capabilities for hostabi.NewHost / grantwire.WithCapabilities.
func (s *Shell) Capabilities() hostabi.Capabilities {
	return hostabi.Capabilities{
		Keyring: s.keyring,
		Ledgers: s.ledgers,
		Locks:   s.locks,
		Clock:   s.opts.Clock,
		Entropy: s.entropy,
		Events:  s.bus,
		Agents:  s.opts.Agents,
		OAuth:   s.oauth,
		Catalog: s.opts.Catalog,
		Getenv:  s.opts.Getenv,
		Service: s.opts.Service,
	}
}

// Home is the shell's home directory (absolute).
func (s *Shell) Home() string { return s.home }

// Events is the shell's event bus: subscribe to receive connector.* events, including
// activations other processes changed.
func (s *Shell) Events() *Bus { return s.bus }

// LockPath is the home's file of a provider's lock (connectors/<provider>.lock).
func (s *Shell) LockPath(name string) string { return s.locks.Path(name) }

// ServiceLockPath is the file of a provider's lock shared by every home of the keyring
// service, taken before the home's ("" when no lock directory is known).
func (s *Shell) ServiceLockPath(name string) string { return s.locks.ServicePath(name) }

// Close releases the shell's resources (watchers, listeners).
func (s *Shell) Close() error {
	if s.watcher != nil {
		s.watcher.close()
		s.watcher = nil
	}
	if t, ok := s.transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return nil
}

// ErrNoTransportRule is reported (as a transport failure) when Options.CheckURL is nil.
var ErrNoTransportRule = errors.New("native: no transport rule (Options.CheckURL) is configured, so no request is sent")

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
