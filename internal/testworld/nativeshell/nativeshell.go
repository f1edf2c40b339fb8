// Package nativeshell runs the conformance corpus on the OS shell (shells/native): the
// real Secret Service through go-keyring, real ledger files in a temporary home, real
// flock locks held by separate shell instances, and the OAuth capability's real code paths
// — token requests over HTTP to a local authorization server (internal/testworld/authserver) on
// 127.0.0.1, each URL passed through the core's transport rule, and authorizations through
// the real loopback listener, consented by an automatic browser.
//
// # A scenario's world
//
//   - A fresh home (a temporary directory the OS shell creates, 0700) and a keyring
//     service of its own: the world shows grantwire the service "grantwire.connections" (so
//     ledger references read as an installation writes them), and a keyring wrapper stores
//     it as "grantwire.connections.conformance.<random>" — scenarios never see each other's
//     entries, or a real installation's. They are deleted when the world closes.
//   - Every process a step names ("A", "B", ...) is its own native.Shell on that home: own
//     token and client caches, own lock queue, own OAuth client; shared files, keyring and
//     locks. Staging, world actions and inspection use one more instance: another process.
//     A lock held by another process (world.locks, hold) is a real flock held by that
//     instance.
//   - Agents are written to the home's agents.json and read by the real registry (package
//     agents) of each process; the environment, the clock (simulated: the corpus is
//     deterministic in time) and the entropy (seeded) are the shell's options.
//   - The token server is the test worlds' one authorization server
//     (internal/testworld/authserver, as authserver.NewWorld makes it), one per world,
//     played by every provider of the catalog under its own path; the catalog's OAuth
//     endpoints (engine data and the shells' catalog alike) point there. It follows the
//     scenario's script as on memhost (memshell.TokenServer): a scripted "during" runs
//     while the request is in flight, scripted authorizations are what the user decides
//     at the authorization endpoint the automatic browser opens (interactive_required: no
//     browser opens; timeout: nobody comes back) and at the device prompt. Each provider
//     names itself with the catalog's issuer (RFC 9207) and checks how its clients
//     authenticate at the token and revocation endpoints, as on memhost.
//
// # What differs from memhost, and why
//
//   - Keyring failures are injected by a wrapper around the real keyring (the corpus's
//     keyring_failures), as the Secret Service cannot be told to fail one call.
//   - A lock acquisition that a known outside holder will refuse waits at most
//     KnownBusyWait instead of the policy's 0.5-30 s (the corpus's holders never release
//     during an operation: memhost answers busy at once). The answer still comes from a
//     real flock attempt, and every other wait is the policy's. With PolicyLockWaits every
//     wait is the policy's (the corpus then takes about 80 s more per engine, with the same
//     outcomes).
//
// It imports conformance, hostabi, core, catalog, agents, shells/native, the root package
// (for the transport rule), internal/testworld/authserver, internal/testworld/memshell
// (the catalog as the server plays it, the corpus's script) and go-keyring; never an
// engine (tests choose one). Nothing in grantwire's product imports it.
package nativeshell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

// KnownBusyWait is the longest a process waits for a lock held by another process of the
// world (see the package documentation).
const KnownBusyWait = 50 * time.Millisecond

// Option configures New.
type Option func(*Shell)

// PolicyLockWaits makes every lock acquisition wait as long as the policy asks, also for
// a lock a known outside holder keeps (see the package documentation).
func PolicyLockWaits() Option { return func(s *Shell) { s.policyWaits = true } }

// Shell is the OS shell with one engine kind. It serves the worlds' authorization servers
// on one 127.0.0.1 port (so the patched catalog, and the engine built for it, are the same
// for every scenario); each world brings its own server state.
type Shell struct {
	name        string
	engines     *memshell.Engines // by the scenario's (unpatched) data
	policyWaits bool

	mu      sync.Mutex
	current http.Handler // the running world's authorization server

	ln   net.Listener
	srv  *http.Server
	base string
}

// New returns a shell named "native/<engine>" whose engines come from factory, listening
// for the worlds' authorization servers on 127.0.0.1. Close it after the run.
func New(engine string, factory memshell.EngineFactory, opts ...Option) (*Shell, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("nativeshell: %w", err)
	}
	s := &Shell{name: "native/" + engine, ln: ln, base: "http://" + ln.Addr().String()}
	s.engines = memshell.NewEngines(func(ctx context.Context, data []byte) (core.Engine, error) {
		patched, err := patchData(data, s.base)
		if err != nil {
			return nil, err
		}
		return factory(ctx, patched)
	})
	for _, o := range opts {
		o(s)
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *Shell) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.current
	s.mu.Unlock()
	if h == nil {
		http.Error(w, "no world is running", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}

func (s *Shell) attach(h http.Handler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current != nil && h != nil {
		return fmt.Errorf("nativeshell: %s runs one world at a time", s.name)
	}
	s.current = h
	return nil
}

// Name implements conformance.Shell.
func (s *Shell) Name() string { return s.name }

// Engine implements conformance.Shell: an engine deciding with the scenario's catalog
// whose OAuth endpoints point at the local authorization server.
func (s *Shell) Engine(ctx context.Context, data []byte) (core.Engine, error) {
	return s.engines.Engine(ctx, data)
}

// Close stops the listener and closes every cached engine.
func (s *Shell) Close(ctx context.Context) error {
	err := s.srv.Close()
	return errors.Join(err, s.engines.Close(ctx))
}

// NewWorld implements conformance.Shell.
func (s *Shell) NewWorld(ctx context.Context, t testing.TB, setup conformance.Setup) (conformance.World, error) {
	return newWorld(ctx, t, s, setup)
}

// --- the catalog's endpoints -------------------------------------------------------------

// endpoint maps a catalog URL field to the authorization server's endpoint name.
var endpoints = map[string]string{"authorization_url": "authorize", "token_url": "token", "userinfo_url": "userinfo",
	"revocation_url": "revoke", "device_authorization_url": "devicecode"}

// patchConnectors points every OAuth endpoint of a connectors object at the provider's
// path on base, keeping a tenant segment ("/<tenant>/" or "{tenant}") so the OS shell's
// tenant substitution still has something to replace.
func patchConnectors(connectors map[string]map[string]any, base string) {
	for id, c := range connectors {
		tenant, _ := c["tenant"].(string)
		for field, name := range endpoints {
			u, ok := c[field].(string)
			if !ok || u == "" {
				continue
			}
			seg := ""
			switch {
			case strings.Contains(u, "{tenant}"):
				seg = "/{tenant}"
			case tenant != "" && strings.Contains(u, "/"+tenant+"/"):
				seg = "/" + tenant
			}
			c[field] = base + "/p/" + id + seg + "/" + name
		}
	}
}

// patchData patches policy data ({"catalog": {"connectors": ...}}).
func patchData(data []byte, base string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("nativeshell: policy data: %w", err)
	}
	cat, err := patchCatalog(doc["catalog"], base)
	if err != nil {
		return nil, err
	}
	doc["catalog"] = cat
	return json.Marshal(doc)
}

// patchCatalog patches a catalog document ({"connectors": ...}), keeping its other fields.
func patchCatalog(raw []byte, base string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("nativeshell: catalog: %w", err)
	}
	var connectors map[string]map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc["connectors"]))
	dec.UseNumber()
	if err := dec.Decode(&connectors); err != nil {
		return nil, fmt.Errorf("nativeshell: catalog connectors: %w", err)
	}
	patchConnectors(connectors, base)
	b, err := json.Marshal(connectors)
	if err != nil {
		return nil, err
	}
	doc["connectors"] = b
	return json.Marshal(doc)
}
