// Package memhost is the in-memory reference world: every capability of hostabi held in
// memory, deterministic and controllable from outside — a simulated clock, seeded entropy,
// files under a simulated home, lock holders settable from outside, failure injection on
// the keyring, an event log, and the test worlds' one authorization server
// (internal/testworld/authserver, as NewWorld makes it) answering the HTTP capability in
// process at the catalog's URLs, with a simulated user at the browser (who follows the
// authorization to its redirect to the loopback) and at the device prompt. The server is
// scripted through World.Server.
//
// It exists for deterministic conformance runs and interleaving tests; the same corpus also
// runs on the OS shell (shells/native). It imports hostabi, the authorization server and
// the standard library only.
package memhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// Home is the simulated home directory; files are named relative to it.
const Home = "/home/user/.grantwire"

// World is one in-memory world. Its exported methods stage and inspect it.
type World struct {
	mu       sync.Mutex
	keyring  map[string]string // service "\x00" user → value
	files    map[string][]byte
	versions map[string]int
	sources  map[string][]byte // agent sources by path, for file.digest
	holders  map[string]string // lock → holder ("self" for this world's operations)
	cond     *sync.Cond
	now      time.Time
	rng      *rand.ChaCha8
	events   []hostabi.Event
	env      map[string]string
	failures []Failure
	prompts  []hostabi.DevicePrompt
	// Server is the world's authorization server: every request of the HTTP capability
	// reaches it at authserver.CatalogPath of its URL (ServeProviders says which URLs it
	// answers; any other is refused).
	Server  *authserver.Server
	handler http.Handler // the server's
}

// Failure makes one keyring operation fail: the first matching Op ("get", "set",
// "delete") on User fails with Err, Count times (1 when zero).
type Failure struct {
	Op    string
	User  string
	Err   error
	Count int
}

// New returns an empty world whose clock reads start and whose entropy is seeded. Its
// authorization server plays no provider until told which (Server.ServeProviders).
func New(start time.Time, seed uint64) *World {
	w := &World{
		keyring: map[string]string{}, files: map[string][]byte{}, versions: map[string]int{},
		sources: map[string][]byte{}, holders: map[string]string{}, now: start, env: map[string]string{},
	}
	var s [32]byte
	for i := 0; i < 8; i++ {
		s[i] = byte(seed >> (8 * i))
	}
	w.rng = rand.NewChaCha8(s)
	w.cond = sync.NewCond(&w.mu)
	w.Server = authserver.NewWorld(clock{w}.Now)
	w.handler = w.Server.Handler()
	return w
}

// Capabilities returns the world's capabilities, ready for package host.
func (w *World) Capabilities(service string) hostabi.Capabilities {
	return hostabi.Capabilities{
		Keyring: keyring{w}, Files: files{w}, Locks: locks{w}, Clock: clock{w},
		Entropy: entropy{w}, Events: events{w}, Loopback: loopback{w}, Prompt: prompter{w}, HTTP: transport{w},
		Getenv:  func(k string) string { w.mu.Lock(); defer w.mu.Unlock(); return w.env[k] },
		Service: service,
	}
}

// SetKeyring stores a keyring value, as another process would.
func (w *World) SetKeyring(service, user, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keyring[service+"\x00"+user] = value
}

// DeleteKeyring removes a keyring value, as another process would.
func (w *World) DeleteKeyring(service, user string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.keyring, service+"\x00"+user)
}

// Keyring returns a copy of the whole keyring (service "\x00" user → value).
func (w *World) Keyring() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.keyring))
	for k, v := range w.keyring {
		out[k] = v
	}
	return out
}

// SetFile writes a file under the home byte for byte (nil deletes it), as another process
// would.
func (w *World) SetFile(name string, doc []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if doc == nil {
		delete(w.files, name)
	} else {
		w.files[name] = append([]byte(nil), doc...)
	}
	w.versions[name]++
}

// File returns a file under the home (nil when absent).
func (w *World) File(name string) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b, ok := w.files[name]; ok {
		return append([]byte(nil), b...)
	}
	return nil
}

// Files lists the files under the home.
func (w *World) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Collect(maps.Keys(w.files))
}

// SetSource makes a file readable by file.digest at path (an agent's source).
func (w *World) SetSource(path string, content []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sources[path] = append([]byte(nil), content...)
}

// Hold makes another process hold a lock.
func (w *World) Hold(lock, holder string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holders[lock] = holder
}

// Release frees a lock held from outside.
func (w *World) Release(lock string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.holders, lock)
	w.cond.Broadcast()
}

// Advance moves the clock.
func (w *World) Advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

// Events returns every event emitted so far.
func (w *World) Events() []hostabi.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]hostabi.Event(nil), w.events...)
}

// Setenv sets an environment variable of the world's processes.
func (w *World) Setenv(k, v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.env[k] = v
}

// Fail injects keyring failures.
func (w *World) Fail(f Failure) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f.Count == 0 {
		f.Count = 1
	}
	w.failures = append(w.failures, f)
}

func (w *World) failure(op, user string) error {
	for i := range w.failures {
		f := &w.failures[i]
		if f.Count > 0 && f.Op == op && f.User == user {
			f.Count--
			return f.Err
		}
	}
	return nil
}

// ErrInjected is a convenient failure for Fail.
var ErrInjected = errors.New("memhost: injected failure")

type keyring struct{ w *World }

func (k keyring) Get(_ context.Context, service, user string) (string, error) {
	k.w.mu.Lock()
	defer k.w.mu.Unlock()
	if err := k.w.failure("get", user); err != nil {
		return "", err
	}
	v, ok := k.w.keyring[service+"\x00"+user]
	if !ok {
		return "", fmt.Errorf("memhost: %s: %w", user, hostabi.ErrNotFound)
	}
	return v, nil
}

func (k keyring) Set(_ context.Context, service, user, value string) error {
	k.w.mu.Lock()
	defer k.w.mu.Unlock()
	if err := k.w.failure("set", user); err != nil {
		return err
	}
	k.w.keyring[service+"\x00"+user] = value
	return nil
}

func (k keyring) Delete(_ context.Context, service, user string) error {
	k.w.mu.Lock()
	defer k.w.mu.Unlock()
	if err := k.w.failure("delete", user); err != nil {
		return err
	}
	delete(k.w.keyring, service+"\x00"+user)
	return nil
}

type files struct{ w *World }

func (f files) version(name string) string {
	if _, ok := f.w.files[name]; !ok {
		return ""
	}
	return "v" + strconv.Itoa(f.w.versions[name])
}

func (f files) Read(_ context.Context, name string) ([]byte, string, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	b, ok := f.w.files[name]
	if !ok {
		return nil, "", nil
	}
	return append([]byte(nil), b...), f.version(name), nil
}

func (f files) Update(_ context.Context, name string, fn func([]byte, string) ([]byte, error)) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	var cur []byte
	if b, ok := f.w.files[name]; ok {
		cur = append([]byte(nil), b...)
	}
	next, err := fn(cur, f.version(name))
	if err != nil {
		return err
	}
	f.w.files[name] = append([]byte(nil), next...)
	f.w.versions[name]++
	return nil
}

func (f files) Path(name string) string { return Home + "/" + name }

func (f files) Digest(_ context.Context, path string, max int64) (string, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	b, ok := f.w.sources[path]
	if !ok {
		return "", fmt.Errorf("%s: no such file", path)
	}
	if int64(len(b)) > max {
		return "", fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

type locks struct{ w *World }

// TryLock: a lock held from outside (Hold) is busy at once — the simulated world does not
// wait for another process. A lock held by another operation of this world is waited for,
// up to wait, which is how concurrent callers share one refresh.
func (l locks) TryLock(ctx context.Context, name string, wait time.Duration) (func(), error) {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	deadline := time.Now().Add(wait)
	for {
		h, held := w.holders[name]
		if !held {
			w.holders[name] = "self"
			var once sync.Once
			return func() {
				once.Do(func() {
					w.mu.Lock()
					delete(w.holders, name)
					w.cond.Broadcast()
					w.mu.Unlock()
				})
			}, nil
		}
		if h != "self" || time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("memhost: lock %s held by %s: %w", name, h, hostabi.ErrBusy)
		}
		timer := time.AfterFunc(time.Until(deadline), func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
		w.cond.Wait()
		timer.Stop()
	}
}

type clock struct{ w *World }

func (c clock) Now() time.Time { c.w.mu.Lock(); defer c.w.mu.Unlock(); return c.w.now }

// Sleep implements hostabi.Sleeper: the simulated clock advances at once.
func (c clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.w.Advance(d)
	return nil
}

type entropy struct{ w *World }

func (e entropy) Read(p []byte) (int, error) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	return e.w.rng.Read(p)
}

type events struct{ w *World }

func (e events) Emit(ev hostabi.Event) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	e.w.events = append(e.w.events, ev)
}

// loopback is the simulated user at the browser, who does what the server's script says
// (consent by default): no browser here, nobody answering, or the browser following the
// authorization up to its redirect to the loopback, whose parameters are the callback's.
// In paste mode the user pastes that redirect, which carries the same parameters.
type loopback struct{ w *World }

func (l loopback) Open(_ context.Context, connector, _ string) (hostabi.Callback, error) {
	switch l.w.Server.Browser(connector) {
	case "interactive_required":
		return nil, fmt.Errorf("memhost: no browser: %w", hostabi.ErrUnavailable)
	case "timeout":
		return &callback{w: l.w, nobody: true}, nil
	}
	return &callback{w: l.w}, nil
}

type callback struct {
	w      *World
	nobody bool // nobody will answer
}

// redirectURI is the loopback address of every callback.
const redirectURI = "http://127.0.0.1:49152/callback"

func (c *callback) RedirectURI() string { return redirectURI }
func (c *callback) Close() error        { return nil }

func (c *callback) Wait(ctx context.Context, a hostabi.Authorization) (map[string]string, error) {
	if c.nobody {
		return nil, context.DeadlineExceeded
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("memhost: the authorization URL: %w", err)
	}
	resp, err := transport{c.w}.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("memhost: the browser: %w", err)
	}
	_ = resp.Body.Close()
	back, ok := strings.CutPrefix(resp.Header.Get("Location"), redirectURI+"?")
	if resp.StatusCode != http.StatusFound || !ok {
		return nil, context.DeadlineExceeded // the user never came back
	}
	q, err := url.ParseQuery(back)
	if err != nil {
		return nil, fmt.Errorf("memhost: the redirect: %w", err)
	}
	params := map[string]string{}
	for k := range q {
		params[k] = q.Get(k)
	}
	if params["state"] != a.State {
		return nil, errors.New("memhost: the callback's state does not match")
	}
	return params, nil
}

// prompter is the simulated user reading a device code: shown unless the provider's
// scripted authorization says nobody is there (interactive_required). Every prompt is
// kept (World.Prompts).
type prompter struct{ w *World }

func (p prompter) Show(_ context.Context, d hostabi.DevicePrompt) error {
	p.w.mu.Lock()
	p.w.prompts = append(p.w.prompts, d)
	p.w.mu.Unlock()
	if p.w.Server.Unattended(d.Connector) {
		return fmt.Errorf("memhost: nobody to show the code to: %w", hostabi.ErrUnavailable)
	}
	return nil
}

// Prompts returns every device prompt shown so far.
func (w *World) Prompts() []hostabi.DevicePrompt {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]hostabi.DevicePrompt(nil), w.prompts...)
}

// transport is the world's HTTP capability: each request is answered in process by the
// authorization server at authserver.CatalogPath of its URL; a URL it does not answer
// is refused, as a host with nobody listening refuses.
type transport struct{ w *World }

func (t transport) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	if !t.w.Server.Routes(req.URL.String()) {
		return nil, &url.Error{Op: req.Method, URL: req.URL.Redacted(), Err: syscall.ECONNREFUSED}
	}
	in := req.Clone(req.Context())
	in.URL, err = url.Parse(authserver.CatalogPath(req.URL))
	if err != nil {
		return nil, err
	}
	in.RequestURI, in.Host, in.RemoteAddr = in.URL.RequestURI(), "memhost", "127.0.0.1:49153"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	defer func() {
		if r := recover(); r != nil {
			if r != http.ErrAbortHandler {
				panic(r)
			}
			resp, err = nil, errors.New("memhost: the server closed the connection without an answer")
		}
	}()
	t.w.handler.ServeHTTP(rec, in)
	resp = rec.Result()
	resp.Request = req
	return resp, nil
}
