// Package memshell runs the conformance corpus on internal/testworld/memhost: each scenario gets a
// fresh in-memory world, and the engine is whatever the test passes in (wasm or rego).
//
// It imports conformance, catalog, hostabi, memhost and core; never an engine (tests
// choose one).
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
	"github.com/grantwire/grantwire/internal/testworld/memhost"
)

// EngineFactory builds an engine for policy data ({"catalog": ...}).
type EngineFactory func(ctx context.Context, data []byte) (core.Engine, error)

// Shell is the memhost shell with one engine kind. Engines are cached by data.
type Shell struct {
	name    string
	factory EngineFactory

	mu      sync.Mutex
	engines map[string]core.Engine
}

// New returns a shell named "memhost/<engine>" whose engines come from factory.
func New(engine string, factory EngineFactory) *Shell {
	return &Shell{name: "memhost/" + engine, factory: factory, engines: map[string]core.Engine{}}
}

// Name implements conformance.Shell.
func (s *Shell) Name() string { return s.name }

// Engine implements conformance.Shell.
func (s *Shell) Engine(ctx context.Context, data []byte) (core.Engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.engines[string(data)]; ok {
		return e, nil
	}
	e, err := s.factory(ctx, data)
	if err != nil {
		return nil, err
	}
	s.engines[string(data)] = e
	return e, nil
}

// Close closes every cached engine.
func (s *Shell) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.engines {
		_ = e.Close(ctx)
		delete(s.engines, k)
	}
	return nil
}

// NewWorld implements conformance.Shell.
func (s *Shell) NewWorld(_ context.Context, _ testing.TB, setup conformance.Setup) (conformance.World, error) {
	w := memhost.New(setup.Start, 1)
	Serve(w, setup.Catalog)
	caps := w.Capabilities("")
	caps.Entropy = &Entropy{}
	mw := &World{W: w, caps: caps, during: map[string][]func(){}}
	w.Server.BeforeRefresh = mw.beforeRefresh
	return mw, nil
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

// Serve makes a world's authorization server answer the endpoints of every OAuth provider
// of a catalog.
func Serve(w *memhost.World, cat *catalog.Catalog) {
	for _, e := range cat.Entries() {
		if e.Type != catalog.TypeOAuth {
			continue
		}
		w.Server.Serve(e.ID, map[string]string{
			"authorization_url": e.AuthorizationURL, "token_url": e.TokenURL,
			"userinfo_url": e.UserinfoURL, "revocation_url": e.RevocationURL, "issuer": e.Issuer,
			"device_authorization_url": e.DeviceAuthorizationURL,
		})
		w.Server.ClientAuth(e.ID, ClientAuthMethod(e), e.ClientSecretRequired)
	}
}

// ClientAuthMethod is how a catalog entry's clients are registered to authenticate at the
// provider: its token_endpoint_auth_method, client_secret_basic when it requires a secret,
// else "" (RFC 8414's default: HTTP Basic for a client with a secret, none without).
func ClientAuthMethod(e catalog.Entry) string {
	switch {
	case e.TokenEndpointAuthMethod != "":
		return e.TokenEndpointAuthMethod
	case e.ClientSecretRequired:
		return "client_secret_basic"
	}
	return ""
}

func (w *World) beforeRefresh(provider string) {
	w.mu.Lock()
	q := w.during[provider]
	var f func()
	if len(q) > 0 {
		f, w.during[provider] = q[0], q[1:]
	}
	w.mu.Unlock()
	if f != nil {
		f()
	}
}

// World is a memhost world seen through conformance.World.
type World struct {
	W    *memhost.World
	caps hostabi.Capabilities

	mu     sync.Mutex
	during map[string][]func() // per provider, aligned with the scripted refresh answers
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
func (w *World) TokenServer() conformance.TokenServer { return tokenServer{w} }

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

type tokenServer struct{ w *World }

func (t tokenServer) Configure(rotate bool, expiresIn int64) {
	t.w.W.Server.Configure(rotate, expiresIn)
}
func (t tokenServer) Issue(p, rt string) { t.w.W.Server.Issue(p, rt) }
func (t tokenServer) Requests() int      { return t.w.W.Server.RequestCount() }
func (t tokenServer) Exchanges() int     { return t.w.W.Server.Exchanges() }
func (t tokenServer) Revocations() int   { return t.w.W.Server.Revocations() }
func (t tokenServer) Revoked() int       { return len(t.w.W.Server.Revoked()) }
func (t tokenServer) ClientAuth() []string {
	return t.w.W.Server.AuthSeen()
}

func (t tokenServer) RequireClientAuth(p, method string, secretRequired bool) {
	t.w.W.Server.ClientAuth(p, method, secretRequired)
}

func (t tokenServer) ScriptRevoke(p string, r conformance.TokenResponse) {
	t.w.W.Server.ScriptRevoke(p, memhost.RevokeAnswer{Status: r.Status, Error: r.Error})
}

func (t tokenServer) ScriptAuthorize(p string, r conformance.AuthorizeResult) {
	t.w.W.Server.ScriptAuthorize(p, AuthorizeAnswer(r))
}

func (t tokenServer) ScriptRefresh(p string, r conformance.TokenResponse, during func()) {
	if during == nil {
		during = func() {}
	}
	t.w.mu.Lock()
	t.w.during[p] = append(t.w.during[p], during)
	t.w.mu.Unlock()
	t.w.W.Server.Script(p, TokenAnswer(r))
}

// TokenAnswer converts a scripted refresh answer of the corpus to memhost's.
func TokenAnswer(r conformance.TokenResponse) memhost.TokenAnswer {
	return memhost.TokenAnswer{Status: r.Status, Error: r.Error, AccessToken: r.AccessToken,
		RefreshToken: r.RefreshToken, ExpiresIn: r.ExpiresIn, Scope: r.Scope, NotJSON: r.NotJSON}
}

// AuthorizeAnswer converts a scripted authorization outcome of the corpus to memhost's.
func AuthorizeAnswer(r conformance.AuthorizeResult) memhost.AuthorizeAnswer {
	a := memhost.AuthorizeAnswer{Status: r.Status, Error: r.Error, HTTPStatus: r.HTTPStatus,
		AccessToken: r.AccessToken, RefreshToken: r.RefreshToken, ExpiresIn: r.ExpiresIn,
		Scopes: r.Scopes, Account: r.Account, Iss: r.Iss, NoIss: r.NoIss, NoRefresh: r.NoRefresh, NotJSON: r.NotJSON, Polls: r.Polls}
	if d := r.Device; d != nil {
		a.Device = &memhost.DeviceAnswer{ExpiresIn: d.ExpiresIn, Interval: d.Interval, Error: d.Error, HTTPStatus: d.HTTPStatus}
	}
	return a
}
