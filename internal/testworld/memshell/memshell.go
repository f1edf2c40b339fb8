// Package memshell runs the conformance corpus on internal/testworld/memhost: each
// scenario gets a fresh in-memory world, and the engine is whatever the test passes in
// (wasm or rego). Its TokenServer scripts the test worlds' one authorization server with
// the corpus's token_server, for this shell and the OS shell's alike.
//
// It imports conformance, catalog, hostabi, memhost, authserver and core; never an engine
// (tests choose one).
package memshell

import (
	"context"
	"crypto/sha256"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
)

// EngineFactory builds an engine for policy data ({"catalog": ...}).
type EngineFactory func(ctx context.Context, data []byte) (core.Engine, error)

// Engines are a shell's engines, built by a factory and kept by the policy data they were
// built for (the memory and the OS shell's runners share them).
type Engines struct {
	factory EngineFactory
	mu      sync.Mutex
	m       map[string]core.Engine
}

// NewEngines returns an empty cache of engines from factory.
func NewEngines(factory EngineFactory) *Engines {
	return &Engines{factory: factory, m: map[string]core.Engine{}}
}

// Engine returns the engine built for data, building it the first time.
func (c *Engines) Engine(ctx context.Context, data []byte) (core.Engine, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[string(data)]; ok {
		return e, nil
	}
	e, err := c.factory(ctx, data)
	if err != nil {
		return nil, err
	}
	c.m[string(data)] = e
	return e, nil
}

// Close closes every engine built so far.
func (c *Engines) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		_ = e.Close(ctx)
		delete(c.m, k)
	}
	return nil
}

// Shell is the memhost shell with one engine kind. Engines are cached by data.
type Shell struct {
	*Engines // implements conformance.Shell's Engine
	name     string
}

// New returns a shell named "memhost/<engine>" whose engines come from factory.
func New(engine string, factory EngineFactory) *Shell {
	return &Shell{Engines: NewEngines(factory), name: "memhost/" + engine}
}

// Name implements conformance.Shell.
func (s *Shell) Name() string { return s.name }

// NewWorld implements conformance.Shell.
func (s *Shell) NewWorld(_ context.Context, _ testing.TB, setup conformance.Setup) (conformance.World, error) {
	w := memhost.New(setup.Start, 1)
	Serve(w, setup.Catalog)
	caps := w.Capabilities("")
	caps.Entropy = &Entropy{}
	return &World{W: w, caps: caps}, nil
}

// Entropy is the test worlds' random source: SHA-256("grantwire test entropy <n>") for n =
// 0, 1, 2, ... end to end. shells/wasm/node/memworld.mjs draws the same stream, so that the
// Node shell asks the core exactly the questions the Go host asks (states and PKCE
// verifiers included).
type Entropy struct {
	mu  sync.Mutex
	buf []byte
	n   int
}

// Read implements hostabi.Entropy.
func (e *Entropy) Read(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.buf) < len(p) {
		sum := sha256.Sum256([]byte("grantwire test entropy " + strconv.Itoa(e.n)))
		e.n++
		e.buf = append(e.buf, sum[:]...)
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	return n, nil
}

// Serve makes a world's authorization server play every OAuth provider of a catalog at
// the catalog's URLs.
func Serve(w *memhost.World, cat *catalog.Catalog) { w.Server.ServeProviders(Providers(cat)) }

// Providers are a catalog's entries as the authorization server plays them.
func Providers(cat *catalog.Catalog) map[string]authserver.Provider {
	out := map[string]authserver.Provider{}
	for _, e := range cat.Entries() {
		out[e.ID] = authserver.Provider{Type: e.Type, AuthorizationURL: e.AuthorizationURL, TokenURL: e.TokenURL,
			UserinfoURL: e.UserinfoURL, RevocationURL: e.RevocationURL, DeviceAuthorizationURL: e.DeviceAuthorizationURL,
			Issuer: e.Issuer, TokenEndpointAuthMethod: e.TokenEndpointAuthMethod, ClientSecretRequired: e.ClientSecretRequired}
	}
	return out
}

// World is a memhost world seen through conformance.World.
type World struct {
	W    *memhost.World
	caps hostabi.Capabilities
}

// Capabilities implements conformance.World.
func (w *World) Capabilities() hostabi.Capabilities { return w.caps }

// Advance implements conformance.World.
func (w *World) Advance(d time.Duration) { w.W.Advance(d) }

// Setenv implements conformance.World.
func (w *World) Setenv(k, v string) { w.W.Setenv(k, v) }

// Hold implements conformance.World.
func (w *World) Hold(lock, holder string) error { w.W.Hold(lock, holder); return nil }

// Release implements conformance.World.
func (w *World) Release(lock string) error { w.W.Release(lock); return nil }

// FailKeyring implements conformance.World.
func (w *World) FailKeyring(op, user string, count int, insecure bool) error {
	err := error(memhost.ErrInjected)
	if insecure {
		err = &hostabi.HostError{Code: hostabi.HostErrInsecureStore, Detail: "memhost: injected",
			Fix: "install and unlock a Secret Service provider (gnome-keyring or KeePassXC)"}
	}
	w.W.Fail(memhost.Failure{Op: op, User: user, Err: err, Count: count})
	return nil
}

// TokenServer implements conformance.World.
func (w *World) TokenServer() conformance.TokenServer { return TokenServer(w.W.Server, nil) }

// Events implements conformance.World.
func (w *World) Events() []hostabi.Event { return w.W.Events() }

// Close implements conformance.World.
func (w *World) Close() error { return nil }

// KeyringUsers implements conformance.KeyringLister.
func (w *World) KeyringUsers(service string) []string {
	var out []string
	for k := range w.W.Keyring() {
		if svc, user, ok := strings.Cut(k, "\x00"); ok && svc == service {
			out = append(out, user)
		}
	}
	return out
}

// TokenServer is the conformance.TokenServer of a world whose authorization server is s:
// each call loads a piece of the scenario's script (authserver.Script). wrap, when set,
// wraps every action done while a refresh is in flight (a world orders it after the
// request); the OS shell's runner shares it.
func TokenServer(s *authserver.Server, wrap func(during func()) func()) conformance.TokenServer {
	return tokenServer{s, wrap}
}

type tokenServer struct {
	s    *authserver.Server
	wrap func(func()) func()
}

func (t tokenServer) load(sc authserver.Script) {
	if err := t.s.Load(sc); err != nil {
		panic(err) // the corpus's schema admits no script the server refuses
	}
}

func (t tokenServer) Configure(rotate bool, expiresIn int64) {
	t.load(authserver.Script{Rotate: &rotate, ExpiresIn: expiresIn})
}

func (t tokenServer) Issue(p, rt string) {
	t.load(authserver.Script{Issued: map[string][]string{p: {rt}}})
}

func (t tokenServer) ScriptRefresh(p string, r conformance.TokenResponse, during func()) {
	reply := Reply(r)
	if during != nil && t.wrap != nil {
		during = t.wrap(during)
	}
	reply.Do = during
	t.load(authserver.Script{Refresh: map[string][]authserver.Reply{p: {reply}}})
}

func (t tokenServer) ScriptAuthorize(p string, r conformance.AuthorizeResult) {
	t.load(authserver.Script{Authorize: map[string][]authserver.Authorization{p: {r}}})
}

func (t tokenServer) ScriptRevoke(p string, r conformance.TokenResponse) {
	t.load(authserver.Script{Revoke: map[string][]authserver.Reply{p: {Reply(r)}}})
}

func (t tokenServer) RequireClientAuth(p, method string, _ bool) {
	t.load(authserver.Script{ClientAuth: map[string]string{p: method}})
}

func (t tokenServer) Requests() int        { return authserver.CountersOf(t.s).Requests }
func (t tokenServer) Exchanges() int       { return authserver.CountersOf(t.s).Exchanges }
func (t tokenServer) Revocations() int     { return authserver.CountersOf(t.s).Revocations }
func (t tokenServer) Revoked() int         { return authserver.CountersOf(t.s).Revoked }
func (t tokenServer) ClientAuth() []string { return authserver.CountersOf(t.s).ClientAuth }

// Reply converts a scripted answer of the corpus to the authorization server's.
func Reply(r conformance.TokenResponse) authserver.Reply {
	return authserver.Reply{TokenAnswer: r.TokenAnswer}
}
