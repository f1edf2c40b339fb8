// Package native is grantwire's OS shell: the host ABI's capabilities on the operating
// system — the OS credential store through go-keyring, JSON files under $GRANTWIRE_HOME,
// per-provider file locks shared by every process of the user, the loopback listener of
// an authorization on 127.0.0.1 with the browser, HTTP through net/http (redirects never
// followed), the clock, entropy and events. It makes no decision: the core says what to
// read, write, request and show (package host performs it over these capabilities).
//
// # What it owns
//
//   - Keyring: go-keyring (Keychain, Credential Manager, Secret Service), every call bounded
//     by Options.KeyringTimeout, values larger than a platform's limit split into parts with
//     GAIA's manifest scheme (a torn multi-part value reads as absent), and no secure store
//     reported as INSECURE_STORE with what to install — never a file fallback.
//   - Files: JSON files under the home named by the policy (connectors/grants.json, ...);
//     a content hash is the version; every patch is atomic across processes (per-file
//     lock file, temp file, fsync, rename, fsync of the directory; 0600 files in 0700
//     directories, re-asserted on every write). Files are never reset on their own. A file
//     is read only as a regular file of at most MaxLedgerBytes, never through a symbolic
//     link and never blocking on a FIFO (internal/safefile: such a file is answered
//     hostabi.FileRefused); one other users may read is set to 0600 and reported through
//     Options.Warn.
//   - Locks: per provider, a lock of the keyring service (under Options.LockDir, by default
//     the user's cache directory) then the home's connectors/<provider>.lock (gofrs/flock),
//     queued within the process: two homes sharing a service share the lock.
//   - Loopback: a one-shot 127.0.0.1 listener (origin-form requests only, so the Host
//     header checked is the one sent), the browser and the prompt while waiting; in paste
//     mode, the redirect address the user pastes (Options.Paste), checked as a callback is.
//   - Prompt: the device code and where to enter it (the device authorization grant).
//   - HTTP: an http.Transport (a RoundTripper never follows redirects).
//   - Read caches (cache.go): ledger stamps (one lstat) for package host's parsed-ledger
//     cache, and keyring values cached behind per-service generation files that every
//     keyring write of every grantwire process bumps (README "Performance: a token
//     hand-out without I/O"); off with Options.NoCache or GRANTWIRE_NO_CACHE=1.
//   - Clock (real unless Options.Clock), Entropy (crypto/rand unless Options.Entropy), the
//     event [Bus], and a watcher that reports activations and grants changed by other
//     processes.
//
// It imports hostabi (and libraries), never the engines or package host.
package native

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
)

// Options configures the OS shell. Zero values mean the documented defaults.
type Options struct {
	// Home is grantwire's directory (default $GRANTWIRE_HOME, else ~/.grantwire).
	Home string
	// Service is the keyring service (default ServiceFor(Home): hostabi.DefaultService
	// for ~/.grantwire, a service of its own for any other home; "gaia.connections"
	// shares a GAIA installation).
	Service string
	// KeyLayout maps hostabi's keyring user names ("<provider>:default",
	// "provider:<provider>", "<connector>:<ENV_KEY>") to the names stored; nil keeps them,
	// which is GAIA's layout.
	KeyLayout func(user string) string
	// Browser opens a URL for the user; nil means headless (print the URL and wait).
	Browser func(url string) error
	// Prompt receives what the user must read while an authorization waits (the URL,
	// progress); nil means os.Stderr.
	Prompt io.Writer
	// Prompts, when set, receives what the user must read while an authorization waits as
	// values instead of lines on Prompt: the URL to open (browser, paste), the code to enter
	// (device) and the notices while waiting, each with the text Prompt would have shown
	// (the CLI's --json writes each as one JSON object).
	Prompts func(PromptEvent)
	// Interactive reports whether a person can complete an authorization at all; when false
	// and no browser is available, the loopback reports that it is unavailable at once, and
	// no device code can be shown.
	Interactive bool
	// Paste is where a user pastes the final redirect address of an authorization in paste
	// mode (connect --no-browser: standard input), one per line; nil means paste mode is
	// unavailable. One goroutine reads it for the shell's lifetime.
	Paste io.Reader
	// KeyringTimeout bounds every keyring call (default 10 s).
	KeyringTimeout time.Duration
	// HTTPTimeout bounds every HTTP request (default 30 s; the core sets shorter ones).
	HTTPTimeout time.Duration
	// Clock tells the time (default the system clock).
	Clock hostabi.Clock
	// Entropy supplies random bytes for the state parameter (default crypto/rand).
	Entropy hostabi.Entropy
	// NoWatch turns off the watcher of activations and grants changed by other processes.
	NoWatch bool
	// Loopback is the policy's loopback rule (core.Manifest.Loopback): the names it dials
	// at a loopback address, never through a resolver (localhost as 127.0.0.1).
	// grantwire.Open and the CLI set it from the policy; without it no name is mapped and
	// localhost is looked up by the system.
	Loopback core.Loopback
	// ActivationChanges, when set, turns a change other processes made to
	// connectors/activations.json into events: it is given the activations as they were
	// and as they are now ({connector: {agent: true}} as JSON) and emits
	// connector.activation.changed for each pair that changed (grantwire.Open runs the
	// policy's activation_changes operation). Without it (and GrantChanges) the watcher
	// does not run.
	ActivationChanges func(before, after json.RawMessage)
	// GrantChanges, when set, does the same for connectors/grants.json: it is given the
	// grants ledger as it was and as it is now ({connector: {agent: [scopes]}}) and emits
	// connector.grant.changed for each pair whose scopes changed (grantwire.Open runs the
	// policy's grant_changes operation).
	GrantChanges func(before, after json.RawMessage)
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// LockDir is where the provider locks shared by every home of a keyring service live:
	// LockDir/<service>-<hash>/<provider>.lock (default $GRANTWIRE_LOCK_DIR, else
	// <user cache dir>/grantwire/locks).
	LockDir string
	// NoCache turns off the read caches (cache.go; README "Performance"): every keyring
	// read goes to the store and every ledger read parses the file. GRANTWIRE_NO_CACHE=1
	// does the same. Writes bump the keyring generation either way, so that other
	// processes' caches see them.
	NoCache bool
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
	bus       *Bus
	watcher   *ledgerWatcher
	entropy   io.Reader
	transport http.RoundTripper
	pasteOnce sync.Once
	paster    *pasteReader
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// New opens the OS shell on opts.Home. Unless NoWatch is set it creates the home's
// connectors directory (0700) and starts the watcher of activations and grants.
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
		opts.Home = filepath.Join(h, HomeDirName)
	}
	home, err := filepath.Abs(opts.Home)
	if err != nil {
		return nil, fmt.Errorf("native: home %q: %w", opts.Home, err)
	}
	opts.Home = home
	if opts.Service == "" {
		userHome, _ := os.UserHomeDir()
		opts.Service = ServiceFor(home, userHome)
	}
	if opts.KeyLayout == nil {
		opts.KeyLayout = func(u string) string { return u }
	}
	if opts.Prompt == nil {
		opts.Prompt = os.Stderr
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
		t = t.Clone()
		t.DialContext = loopbackDialer(opts.Loopback, t.DialContext)
		s.transport = t
	} else {
		s.transport = http.DefaultTransport
	}
	s.keyring = &keyringStore{b: goKeyring{}, timeout: opts.KeyringTimeout, layout: opts.KeyLayout, getenv: os.Getenv, setenv: os.Setenv}
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
	s.keyring.gen = newGenerations(home, opts.LockDir, opts.Service)
	if !cacheEnabled(opts) {
		s.keyring.noCache, s.ledgers.noCache = true, true
	}
	if !opts.NoWatch {
		var watched []*watchedLedger
		if opts.ActivationChanges != nil {
			watched = append(watched, &watchedLedger{name: activationsFile, path: s.ledgers.Path(activationsFile),
				view: layout.ActivationsOf, changes: opts.ActivationChanges})
		}
		if opts.GrantChanges != nil {
			watched = append(watched, &watchedLedger{name: grantsFile, path: s.ledgers.Path(grantsFile),
				view: layout.GrantsOf, changes: opts.GrantChanges})
		}
		if len(watched) > 0 {
			s.watcher = startWatcher(watched...)
			s.ledgers.written = func(name string, before, after []byte, rename func() error) error {
				return s.watcher.written(s.ledgers.Path(name), before, after, rename)
			}
		}
	}
	return s, nil
}

// HomeDirName is grantwire's directory under the user's home: ~/.grantwire is the
// default home.
const HomeDirName = ".grantwire"

// ServiceFor is the keyring service of a home when none is given, so that two homes never
// share secrets by accident: the default home (userHome/.grantwire) uses
// hostabi.DefaultService; any other home uses hostabi.DefaultService + "." + the first 12
// hex digits of the sha256 of its absolute, cleaned path. Sharing is always explicit: give
// the service (grantwire --home ~/.gaia --keyring-service gaia.connections). Moving a
// non-default home changes its service; keep the old one by giving it explicitly.
func ServiceFor(home, userHome string) string {
	abs, err := filepath.Abs(home)
	if err != nil {
		abs = filepath.Clean(home)
	}
	if userHome != "" {
		if def, err := filepath.Abs(filepath.Join(userHome, HomeDirName)); err == nil && def == abs {
			return hostabi.DefaultService
		}
	}
	sum := sha256.Sum256([]byte(abs))
	return hostabi.DefaultService + "." + hex.EncodeToString(sum[:6])
}

// Capabilities returns the shell's capabilities for package host / grantwire.WithCapabilities.
func (s *Shell) Capabilities() hostabi.Capabilities {
	return hostabi.Capabilities{
		Keyring:  s.keyring,
		Files:    s.ledgers,
		Locks:    s.locks,
		Clock:    s.opts.Clock,
		Entropy:  s.entropy,
		Events:   s.bus,
		Loopback: loopbackCap{s},
		Prompt:   promptCap{s},
		HTTP:     timeoutTransport{s.transport, s.opts.HTTPTimeout},
		Getenv:   s.opts.Getenv,
		Service:  s.opts.Service,
	}
}

// timeoutTransport bounds every request (the core asks for shorter bounds itself).
type timeoutTransport struct {
	rt      http.RoundTripper
	timeout time.Duration
}

func (t timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelBody{resp.Body, cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// The ledgers the watcher follows.
const (
	activationsFile = "connectors/activations.json"
	grantsFile      = "connectors/grants.json"
)

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

// loopbackDialer dials the policy's loopback names at their addresses (localhost as
// 127.0.0.1, RFC 6761 §6.3), never through a resolver: the policy counts http://localhost
// as loopback for remote MCP servers (docs/behaviour.md#remote-mcp-servers), so it must
// reach this machine and nothing else.
func loopbackDialer(l core.Loopback, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dial(ctx, network, l.Addr(addr))
	}
}
