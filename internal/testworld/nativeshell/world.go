package nativeshell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

// World is one scenario's world on the OS shell (see the package documentation).
type World struct {
	t      testing.TB
	ctx    context.Context
	sh     *Shell
	home   string
	nonce  string
	cat    *catalog.Catalog // endpoints patched
	engine core.Engine
	srv    *authserver.Server
	clock  *simClock
	rng    *seeded
	prompt *testenv.Buffer

	// inflight orders a scripted "during" (run by the authorization server's handler while
	// a refresh is in flight) before whatever the refreshing process does next: the handler
	// runs it holding inflight, and a process takes inflight once its request returned.
	inflight  sync.Mutex
	browsers  sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	// Outside holds the corpus's locks as the outside instance and injects its keyring
	// failures (Hold, Release, FailKeyring).
	testenv.Outside

	mu       sync.Mutex
	env      map[string]string
	events   []hostabi.Event
	services map[string]bool // real keyring services used
	shells   []*native.Shell
	pastes   []*io.PipeWriter // each process's standard input in paste mode
	procs    testenv.Processes
	problems []string // what went wrong off the runner's path (browser fetches)

	outside *native.Shell
	caps    hostabi.Capabilities
}

var (
	_ conformance.World         = (*World)(nil)
	_ conformance.Processes     = (*World)(nil)
	_ conformance.Surfaces      = (*World)(nil)
	_ conformance.KeyringLister = (*World)(nil)
)

func newWorld(ctx context.Context, t testing.TB, sh *Shell, setup conformance.Setup) (*World, error) {
	raw, err := patchCatalog(setup.Catalog.JSON(), sh.base)
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("nativeshell: patched catalog: %w", err)
	}
	w := &World{
		t: t, ctx: ctx, sh: sh, home: filepath.Join(t.TempDir(), "grantwire"), nonce: testenv.RandHex(6),
		cat: cat, engine: setup.Engine, clock: &simClock{now: setup.Start}, rng: newSeeded(1), prompt: &testenv.Buffer{},
		env: map[string]string{}, services: map[string]bool{},
	}
	// One server per world, every provider under its own path (the patched catalog's
	// URLs), each naming itself and checking its clients as the catalog says.
	w.srv = authserver.NewWorld(w.clock.Now)
	issuers, auth := map[string]string{}, map[string]string{}
	for id, p := range memshell.Providers(setup.Catalog) {
		if p.Type == authserver.TypeOAuth {
			issuers[id], auth[id] = p.Issuer, p.ClientAuth()
		}
	}
	w.srv.Configure(func(c *authserver.Config) { c.Issuers, c.ProviderClientAuth = issuers, auth })
	if err := sh.attach(w.srv.Handler()); err != nil {
		return nil, err
	}
	w.outside, w.caps, err = w.newShell(false)
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	w.Outside.Locks, w.Outside.Ctx = w.outside.Capabilities().Locks, ctx // unwrapped: the outside holder's own
	return w, nil
}

// newShell opens one more native.Shell on the world's home: a process.
func (w *World) newShell(browser bool) (*native.Shell, hostabi.Capabilities, error) {
	pr, pw := io.Pipe()
	opts := native.Options{
		Home:        w.home,
		Service:     hostabi.DefaultService,
		Prompt:      w.prompt,
		Interactive: true, // the prompt is read (and searched for secrets)
		Paste:       pr,
		HTTPTimeout: 10 * time.Second,
		Clock:       w.clock,
		Entropy:     w.rng,
		NoWatch:     true, // events are the steps' own; the watcher has its own tests
		Getenv:      w.getenv,
		// The service locks of this world, beside its home: worlds share a service name
		// (grantwire.connections) but never a lock.
		LockDir: filepath.Join(filepath.Dir(w.home), "locks"),
		// The policy's loopback rule, as grantwire.Open sets it.
		Loopback: w.engine.Manifest().Loopback,
	}
	if browser {
		opts.Browser = w.browser
	}
	sh, err := native.New(opts)
	if err != nil {
		return nil, hostabi.Capabilities{}, err
	}
	w.mu.Lock()
	w.shells = append(w.shells, sh)
	w.pastes = append(w.pastes, pw)
	w.mu.Unlock()
	c := sh.Capabilities()
	c.Keyring = w.Outside.Keyring(c.Keyring, w.realService)
	if !w.sh.policyWaits {
		c.Locks = w.Outside.ShortLocks(c.Locks, KnownBusyWait)
	}
	c.Events = events{w: w, bus: c.Events}
	c.HTTP = transport{w: w, inner: c.HTTP}
	c.Loopback = loopback{w: w, inner: c.Loopback, paste: pw}
	c.Prompt = prompter{w: w, inner: c.Prompt}
	c.Service = hostabi.DefaultService
	return sh, c, nil
}

// Capabilities implements conformance.World: another process of the world (staging, world
// actions, inspection).
func (w *World) Capabilities() hostabi.Capabilities { return w.caps }

// ProcessCapabilities implements conformance.Processes: each process its own native.Shell.
func (w *World) ProcessCapabilities(name string) (hostabi.Capabilities, error) {
	return w.procs.Get(name, func() (hostabi.Capabilities, error) {
		_, c, err := w.newShell(true)
		return c, err
	})
}

// Home is the world's grantwire home.
func (w *World) Home() string { return w.home }

// Advance implements conformance.World.
func (w *World) Advance(d time.Duration) { w.clock.Advance(d) }

// Setenv implements conformance.World.
func (w *World) Setenv(k, v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.env[k] = v
}

func (w *World) getenv(k string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.env[k]
}

// TokenServer implements conformance.World.
func (w *World) TokenServer() conformance.TokenServer {
	return memshell.TokenServer(w.srv, func(during func()) func() {
		return func() {
			w.inflight.Lock()
			defer w.inflight.Unlock()
			during()
		}
	})
}

// Events implements conformance.World.
func (w *World) Events() []hostabi.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]hostabi.Event(nil), w.events...)
}

// Close implements conformance.World: it releases the locks held from outside, closes
// every shell, detaches the authorization server and deletes the world's keyring entries.
// The runner ignores Close's error, so failures are also reported on t. Closing again does
// nothing.
func (w *World) Close() error {
	w.closeOnce.Do(func() { w.closeErr = w.close() })
	return w.closeErr
}

func (w *World) close() error {
	w.browsers.Wait()
	w.mu.Lock()
	shells := w.shells
	services := slices.Sorted(maps.Keys(w.services))
	for _, pw := range w.pastes {
		_ = pw.Close()
	}
	w.mu.Unlock()
	w.ReleaseAll()
	var errs []error
	for _, sh := range shells {
		errs = append(errs, sh.Close())
	}
	errs = append(errs, w.sh.attach(nil))
	for _, svc := range services {
		if err := gokeyring.DeleteAll(svc); err != nil {
			errs = append(errs, fmt.Errorf("nativeshell: delete the keyring service %s: %w", svc, err))
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		w.t.Errorf("nativeshell: closing the world: %v", err)
	}
	return err
}

// realService is where a service the world shows is stored.
func (w *World) realService(service string) string {
	real := service + ".conformance." + w.nonce
	w.mu.Lock()
	w.services[real] = true
	w.mu.Unlock()
	return real
}

// KeyringUsers implements conformance.KeyringLister from the Secret Service's own
// listing (the items' attributes): the entries that exist, chunk parts ("<user>#<n>")
// folded into their entry.
func (w *World) KeyringUsers(service string) []string {
	items, err := listKeyring(w.realService(service))
	if err != nil {
		return []string{"<the keyring could not be listed: " + err.Error() + ">"}
	}
	var out []string
	for _, it := range items {
		if isChunkPart(it.user) {
			continue
		}
		out = append(out, it.user)
	}
	return out
}

func isChunkPart(user string) bool {
	i := strings.LastIndexByte(user, '#')
	if i < 0 || i == len(user)-1 {
		return false
	}
	for _, r := range user[i+1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Surfaces implements conformance.Surfaces: every file under the home (its path and its
// bytes; a file that is not 0600 or a directory that is not 0700 is an error), the labels
// and attributes of the world's keyring items, and everything printed for a person.
func (w *World) Surfaces() ([]conformance.Surface, error) {
	var out []conformance.Surface
	var errs []error
	err := filepath.WalkDir(w.home, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == w.home {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.home, p)
		switch {
		case d.IsDir():
			if perm := info.Mode().Perm(); perm != 0o700 {
				errs = append(errs, fmt.Errorf("directory %s has mode %04o, want 0700", rel, perm))
			}
		case info.Mode().IsRegular():
			if perm := info.Mode().Perm(); perm != 0o600 {
				errs = append(errs, fmt.Errorf("file %s has mode %04o, want 0600", rel, perm))
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, conformance.Surface{Name: "file " + rel, Text: string(b)})
		default:
			errs = append(errs, fmt.Errorf("%s is neither a file nor a directory (%s)", rel, info.Mode()))
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	w.mu.Lock()
	services := slices.Sorted(maps.Keys(w.services))
	problems := append([]string(nil), w.problems...)
	w.mu.Unlock()
	for _, svc := range services {
		items, err := listKeyring(svc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, it := range items {
			attrs, _ := json.Marshal(it.attributes)
			out = append(out, conformance.Surface{Name: "keyring item " + it.user, Text: it.label + " " + string(attrs)})
		}
	}
	out = append(out, conformance.Surface{Name: "prompt", Text: w.prompt.String()})
	for _, p := range problems {
		errs = append(errs, errors.New(p))
	}
	return out, errors.Join(errs...)
}

// --- capabilities as the world wraps them --------------------------------------------

// events records every event in the world's log, in order, and delivers it on the
// process's bus.
type events struct {
	w   *World
	bus hostabi.Events
}

func (e events) Emit(ev hostabi.Event) {
	e.w.mu.Lock()
	e.w.events = append(e.w.events, ev)
	e.w.mu.Unlock()
	e.bus.Emit(ev)
}

// transport is the process's HTTP capability; after a request returns it waits for a
// scripted "during" to have finished (see World.inflight).
type transport struct {
	w     *World
	inner http.RoundTripper
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.inner.RoundTrip(req)
	t.w.inflight.Lock() // an ordering point, not a critical section
	t.w.inflight.Unlock()
	return resp, err
}

// loopback plays the scripted outcomes no browser can: a session without a browser
// (interactive_required) and nobody answering (timeout, at once rather than after the
// policy's five minutes).
type loopback struct {
	w     *World
	inner hostabi.Loopback
	paste io.Writer // the process's standard input in paste mode
}

func (l loopback) Open(ctx context.Context, connector, mode string) (hostabi.Callback, error) {
	outcome := l.w.srv.Browser(connector)
	cb, err := l.inner.Open(ctx, connector, mode)
	if err == nil && outcome == "" && mode == hostabi.ModePaste {
		return pasting{cb, l}, nil
	}
	if err != nil || outcome == "" {
		return cb, err
	}
	if outcome == "interactive_required" {
		_ = cb.Close()
		return nil, fmt.Errorf("nativeshell: scripted: %w", hostabi.ErrUnavailable)
	}
	return unanswered{cb}, nil
}

type unanswered struct{ hostabi.Callback }

func (u unanswered) Wait(context.Context, hostabi.Authorization) (map[string]string, error) {
	return nil, context.DeadlineExceeded
}

// pasting plays the user of paste mode: the automatic browser follows the authorization
// up to the redirect to 127.0.0.1 (which it does not load), and the user pastes that
// address on the process's standard input.
type pasting struct {
	hostabi.Callback
	l loopback
}

func (p pasting) Wait(ctx context.Context, a hostabi.Authorization) (map[string]string, error) {
	p.l.w.pasteBrowser(a.URL, p.l.paste)
	return p.Callback.Wait(ctx, a)
}

// prompter plays the user reading a device code: nobody when the provider's scripted
// authorization is interactive_required.
type prompter struct {
	w     *World
	inner hostabi.Prompter
}

func (p prompter) Show(ctx context.Context, d hostabi.DevicePrompt) error {
	if p.w.srv.Unattended(d.Connector) {
		return fmt.Errorf("nativeshell: scripted: nobody reads the code: %w", hostabi.ErrUnavailable)
	}
	return p.inner.Show(ctx, d)
}

// --- the automatic browser ---------------------------------------------------------------

// browser plays the user's browser: it fetches the authorization URL (where the server
// plays what the provider's next scripted authorization says the user decides; nothing
// scripted: consent) and follows its redirect to the loopback callback.
func (w *World) browser(authURL string) error {
	w.browsers.Add(1)
	go func() {
		defer w.browsers.Done()
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get(authURL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		if err != nil {
			w.problem("the browser could not complete the authorization: %v", err)
		}
	}()
	return nil
}

// pasteBrowser plays the user of paste mode: the authorization is followed up to its
// redirect to the loopback (not loaded), and that address is pasted on in.
func (w *World) pasteBrowser(authURL string, in io.Writer) {
	w.browsers.Add(1)
	go func() {
		defer w.browsers.Done()
		c := &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(authURL)
		if err != nil {
			w.problem("the browser could not complete the authorization: %v", err)
			return
		}
		_ = resp.Body.Close()
		if _, err := io.WriteString(in, resp.Header.Get("Location")+"\n"); err != nil {
			w.problem("the redirect address could not be pasted: %v", err)
		}
	}()
}

func (w *World) problem(format string, args ...any) {
	w.mu.Lock()
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

// --- small parts -------------------------------------------------------------------------

// simClock is the world's simulated clock, shared by every process.
type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *simClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// Sleep implements hostabi.Sleeper: the simulated clock advances at once.
func (c *simClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}

// seeded is deterministic entropy shared by every process.
type seeded struct {
	mu  sync.Mutex
	rng *mrand.ChaCha8
}

func newSeeded(seed uint64) *seeded {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return &seeded{rng: mrand.NewChaCha8(s)}
}

func (s *seeded) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Read(p)
}
