// Package memhost is the in-memory reference host: every capability of hostabi held in
// memory, deterministic and controllable from outside — a simulated clock, seeded
// entropy, a scripted token endpoint with refresh-token rotation and reuse detection,
// lock holders settable from outside, failure injection on the keyring, and an event log.
//
// It exists for deterministic conformance runs and interleaving tests; the same corpus also
// runs on the OS shell (shells/native). It imports hostabi and the standard library only.
package memhost

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/grantwire/grantwire/hostabi"
)

// World is one in-memory world. Its exported methods stage and inspect it.
type World struct {
	mu       sync.Mutex
	keyring  map[string]string // service "\x00" user → value
	ledgers  map[string][]byte
	versions map[string]int
	holders  map[string]string // lock → holder ("" free)
	cond     *sync.Cond
	now      time.Time
	rng      *rand.ChaCha8
	events   []hostabi.Event
	agents   map[string]hostabi.Agent
	catalog  map[string]hostabi.Connector
	env      map[string]string
	failures []Failure
	Server   *TokenServer
}

// Failure makes one keyring operation fail: the first matching Op ("get", "set",
// "delete") on User fails with Err, Count times (1 when zero).
type Failure struct {
	Op    string
	User  string
	Err   error
	Count int
}

// New returns an empty world whose clock reads start and whose entropy is seeded.
func New(start time.Time, seed uint64) *World {
	w := &World{
		keyring: map[string]string{}, ledgers: map[string][]byte{}, versions: map[string]int{},
		holders: map[string]string{}, now: start, agents: map[string]hostabi.Agent{},
		catalog: map[string]hostabi.Connector{}, env: map[string]string{},
	}
	var s [32]byte
	for i := 0; i < 8; i++ {
		s[i] = byte(seed >> (8 * i))
	}
	w.rng = rand.NewChaCha8(s)
	w.cond = sync.NewCond(&w.mu)
	w.Server = NewTokenServer(w)
	return w
}

// Capabilities returns the world's capabilities, ready for hostabi.NewHost.
func (w *World) Capabilities(service string) hostabi.Capabilities {
	return hostabi.Capabilities{
		Keyring: keyring{w}, Ledgers: ledgers{w}, Locks: locks{w}, Clock: clock{w},
		Entropy: entropy{w}, Events: events{w}, Agents: agents{w}, OAuth: w.Server,
		Catalog: func(id string) (hostabi.Connector, bool) {
			w.mu.Lock()
			defer w.mu.Unlock()
			c, ok := w.catalog[id]
			return c, ok
		},
		Getenv:  func(k string) string { w.mu.Lock(); defer w.mu.Unlock(); return w.env[k] },
		Service: service,
	}
}

// --- staging and inspection -------------------------------------------------------------

// SetKeyring stores a value as another process would.
func (w *World) SetKeyring(service, user, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keyring[service+"\x00"+user] = value
}

// DeleteKeyring removes a value as another process would.
func (w *World) DeleteKeyring(service, user string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.keyring, service+"\x00"+user)
}

// Keyring returns every keyring entry as "service\x00user" → value.
func (w *World) Keyring() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.keyring))
	for k, v := range w.keyring {
		out[k] = v
	}
	return out
}

// SetLedger replaces a ledger's bytes (nil removes the file).
func (w *World) SetLedger(name string, doc []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if doc == nil {
		delete(w.ledgers, name)
	} else {
		w.ledgers[name] = append([]byte(nil), doc...)
	}
	w.versions[name]++
}

// Ledger returns a ledger's bytes (nil when absent).
func (w *World) Ledger(name string) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.ledgers[name]...)
}

// Hold makes holder (another process) hold a lock; Release frees it.
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

// Advance moves the simulated clock.
func (w *World) Advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

// Events returns the event log.
func (w *World) Events() []hostabi.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]hostabi.Event(nil), w.events...)
}

// SetAgent registers an agent declaration.
func (w *World) SetAgent(a hostabi.Agent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.agents[a.ID] = a
}

// SetConnector registers a catalog entry for the capabilities (the core reads its own copy
// of the catalog as data).
func (w *World) SetConnector(c hostabi.Connector) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.catalog[c.ID] = c
}

// Setenv sets an environment variable of the world.
func (w *World) Setenv(k, v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.env[k] = v
}

// Fail injects a keyring failure.
func (w *World) Fail(f Failure) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f.Count == 0 {
		f.Count = 1
	}
	w.failures = append(w.failures, f)
}

func (w *World) failure(op, user string) error {
	for i, f := range w.failures {
		if f.Op == op && f.User == user {
			w.failures[i].Count--
			if w.failures[i].Count <= 0 {
				w.failures = append(w.failures[:i], w.failures[i+1:]...)
			}
			return f.Err
		}
	}
	return nil
}

// --- capabilities ---------------------------------------------------------------------

type keyring struct{ w *World }

func (k keyring) Get(_ context.Context, service, user string) (string, error) {
	k.w.mu.Lock()
	defer k.w.mu.Unlock()
	if err := k.w.failure("get", user); err != nil {
		return "", err
	}
	v, ok := k.w.keyring[service+"\x00"+user]
	if !ok {
		return "", fmt.Errorf("memhost: %s/%s: %w", service, user, hostabi.ErrNotFound)
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

type ledgers struct{ w *World }

func (l ledgers) Read(_ context.Context, name string) ([]byte, string, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	doc, ok := l.w.ledgers[name]
	if !ok {
		return nil, "", nil
	}
	return append([]byte(nil), doc...), strconv.Itoa(l.w.versions[name]), nil
}

func (l ledgers) Write(_ context.Context, name string, doc []byte, ifVersion string) error {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	cur := ""
	if _, ok := l.w.ledgers[name]; ok {
		cur = strconv.Itoa(l.w.versions[name])
	}
	if cur != ifVersion {
		return fmt.Errorf("memhost: ledger %s: %w", name, hostabi.ErrConflict)
	}
	l.w.ledgers[name] = append([]byte(nil), doc...)
	l.w.versions[name]++
	return nil
}

func (l ledgers) Path(name string) string { return "mem:" + name + ".json" }

type locks struct{ w *World }

// TryLock: a lock held from outside (Hold) is busy at once — the simulated world does not
// wait for another process. A lock held by another operation of this process is waited
// for, up to wait, which is how concurrent callers share one refresh.
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

type agents struct{ w *World }

func (a agents) Agent(_ context.Context, id string) (hostabi.Agent, bool, error) {
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	ag, ok := a.w.agents[id]
	return ag, ok, nil
}

// --- token endpoint -------------------------------------------------------------------

// TokenServer is the scripted authorization server: refresh tokens rotate on every use, a
// reused refresh token is invalid_grant (reuse detection), and scripted responses replace
// the next answers.
type TokenServer struct {
	w         *World
	live      map[string]string // refresh token → provider
	used      map[string]bool
	next      map[string][]hostabi.TokenResponse // provider → scripted responses
	auth      map[string][]hostabi.AuthResult
	Rotate    bool
	ExpiresIn int64
	// BeforeRefresh, when set, runs at the start of every refresh request, outside the
	// world's lock: a test uses it to let another process act while a request is in flight.
	BeforeRefresh func(provider string)
	issued        int
	Requests      int
	sent          []string // refresh tokens presented, in order
	reused        int      // refreshes that presented an already-used refresh token
}

// NewTokenServer returns a server that rotates refresh tokens and issues 3600 s tokens.
func NewTokenServer(w *World) *TokenServer {
	return &TokenServer{w: w, live: map[string]string{}, used: map[string]bool{},
		next: map[string][]hostabi.TokenResponse{}, auth: map[string][]hostabi.AuthResult{},
		Rotate: true, ExpiresIn: 3600}
}

// Issue registers a refresh token as valid for a provider (as a past authorization would).
func (s *TokenServer) Issue(provider, refresh string) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.live[refresh] = provider
}

// Script queues responses for the next refreshes of a provider.
func (s *TokenServer) Script(provider string, rs ...hostabi.TokenResponse) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.next[provider] = append(s.next[provider], rs...)
}

// ScriptAuthorize queues results for the next authorizations of a provider.
func (s *TokenServer) ScriptAuthorize(provider string, rs ...hostabi.AuthResult) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.auth[provider] = append(s.auth[provider], rs...)
}

func (s *TokenServer) token(prefix string) string {
	s.issued++
	return fmt.Sprintf("%s-%04d", prefix, s.issued)
}

// Refresh implements hostabi.OAuth.
func (s *TokenServer) Refresh(_ context.Context, c hostabi.Connector, _ hostabi.Client, refresh string) hostabi.TokenResponse {
	if s.BeforeRefresh != nil {
		s.BeforeRefresh(c.ID)
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.Requests++
	s.sent = append(s.sent, refresh)
	if s.used[refresh] {
		s.reused++
	}
	if q := s.next[c.ID]; len(q) > 0 {
		s.next[c.ID] = q[1:]
		return q[0]
	}
	if s.used[refresh] || s.live[refresh] != c.ID {
		return hostabi.TokenResponse{Status: 400, Error: "invalid_grant"}
	}
	r := hostabi.TokenResponse{Status: 200, AccessToken: s.token("access-" + c.ID), ExpiresIn: s.ExpiresIn}
	if s.Rotate {
		s.used[refresh] = true
		delete(s.live, refresh)
		r.RefreshToken = s.token("refresh-" + c.ID)
		s.live[r.RefreshToken] = c.ID
	}
	return r
}

// Authorize implements hostabi.OAuth: scripted results first, else consent is granted for
// every requested scope as account "user@example.com".
func (s *TokenServer) Authorize(_ context.Context, c hostabi.Connector, _ hostabi.Client, scopes []string) hostabi.AuthResult {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if q := s.auth[c.ID]; len(q) > 0 {
		s.auth[c.ID] = q[1:]
		r := q[0]
		if r.Status == hostabi.AuthOK && r.Token.RefreshToken != "" {
			s.live[r.Token.RefreshToken] = c.ID
		}
		return r
	}
	sc := append([]string(nil), scopes...)
	sort.Strings(sc)
	r := hostabi.TokenResponse{Status: 200, AccessToken: s.token("access-" + c.ID),
		RefreshToken: s.token("refresh-" + c.ID), ExpiresIn: s.ExpiresIn, Scopes: sc, Account: "user@example.com"}
	s.live[r.RefreshToken] = c.ID
	return hostabi.AuthResult{Status: hostabi.AuthOK, Token: r}
}

// Configure sets rotation and the lifetime of issued access tokens (seconds), under the
// world's lock.
func (s *TokenServer) Configure(rotate bool, expiresIn int64) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.Rotate, s.ExpiresIn = rotate, expiresIn
}

// RequestCount is Requests, read under the world's lock.
func (s *TokenServer) RequestCount() int {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.Requests
}

// Sent returns the refresh tokens presented to the token endpoint, in order (test code
// only: these are secrets).
func (s *TokenServer) Sent() []string {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// Reused counts refreshes that presented a refresh token already used once (which a real
// server's reuse detection would treat as theft).
func (s *TokenServer) Reused() int {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.reused
}

// ErrInjected is a convenient failure for Fail.
var ErrInjected = errors.New("memhost: injected failure")
