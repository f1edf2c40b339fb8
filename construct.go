package grantwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/opaserver"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/oprun"
	"github.com/grantwire/grantwire/shells/native"
)

// assembly is the one construction path every client takes: New (capabilities given),
// Open (the OS shell) and the grantwire command (oprun.Assemble, whose Choice it maps
// here). What the user chose → the catalog (no shell: the bundle's, the OPA server's, a
// WithCatalog source or the embedded one) → the engine on it → the shell (the
// capabilities given, or the OS shell opened with the policy's loopback rule and the
// watchers) → the store laid over it → the client. Each step runs once.
type assembly struct {
	c       config
	checked bool
	// The OS shell to open (Open, the command); nil: the capabilities of WithCapabilities.
	shellOpts *native.Options
	newShell  func(native.Options) (oprun.Shell, error)
	// The wasm engine's tuning: compiled code kept in cacheDir; without one, interpret
	// (the command) or compile (New); pool instances (0: GOMAXPROCS).
	cacheDir  string
	interpret bool
	pool      int
	// factory builds an engine this build adds by name (oprun.Choice.Engines).
	factory func(ctx context.Context, data []byte) (core.Engine, error)

	server   *opaserver.Engine
	cat      *catalog.Catalog
	engine   core.Engine
	revision string
	owns     bool // the engine was built here
	client   *Client
}

func newAssembly(options []Option) *assembly {
	a := &assembly{}
	for _, o := range options {
		o(&a.c)
	}
	return a
}

// check reports the options' errors and the combinations that cannot hold, once.
func (a *assembly) check() error {
	if a.checked {
		return nil
	}
	if err := errors.Join(append(a.c.errs, a.c.checkEngine())...); err != nil {
		return err
	}
	if err := a.c.useBundle(); err != nil {
		return err
	}
	a.checked = true
	return nil
}

// catalog is the client's catalog; an OPA server is connected to for its data.catalog.
func (a *assembly) catalog(ctx context.Context) (*catalog.Catalog, error) {
	if a.cat != nil {
		return a.cat, nil
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	if a.c.engine == nil && a.c.engineName == EngineOPAServer && a.server == nil {
		server, err := a.c.serverEngine(ctx)
		if err != nil {
			return nil, err
		}
		a.server = server
	}
	cat, err := a.c.loadCatalog()
	if err != nil {
		if a.server != nil {
			return nil, fmt.Errorf("grantwire: the OPA server at %s: data.catalog: %w", a.server.URL(), err)
		}
		return nil, err
	}
	a.cat = cat
	return cat, nil
}

// buildEngine is the engine on the catalog: WithEngine's, else built here (the
// bundle's, the one named, or DefaultEngine) with the policy's revision.
func (a *assembly) buildEngine(ctx context.Context) (core.Engine, error) {
	if a.engine != nil {
		return a.engine, nil
	}
	cat, err := a.catalog(ctx)
	if err != nil {
		return nil, err
	}
	if a.c.engine != nil {
		a.engine = a.c.engine
		if r, ok := a.engine.(interface{ Revision() string }); ok {
			a.revision = r.Revision() // an OPA server's bundle
		}
		return a.engine, nil
	}
	e, revision, err := a.newEngine(ctx, cat)
	if err != nil {
		return nil, err
	}
	a.engine, a.revision, a.owns = e, revision, true
	if e == core.Engine(a.server) {
		a.server = nil // the engine now
	}
	return e, nil
}

func (a *assembly) newEngine(ctx context.Context, cat *catalog.Catalog) (core.Engine, string, error) {
	name := a.c.engineName
	if name == "" {
		name = DefaultEngine
	}
	switch {
	case a.c.bundle != nil:
		return a.c.newWasmEngine(ctx, cat)
	case a.factory != nil:
		e, err := a.factory(ctx, cat.Data())
		return e, "", err
	case name == EngineOPAServer:
		return a.server, a.server.Revision(), nil
	case name == EngineNative:
		e, err := nativeengine.New(ctx, nativeengine.WithData(cat.Data()))
		return e, bundle.EmbeddedRevision(), err
	}
	opts := []wasmengine.Option{wasmengine.WithData(cat.Data())}
	if a.pool > 0 {
		opts = append(opts, wasmengine.WithPoolSize(a.pool))
	}
	if a.cacheDir != "" {
		// Compiled code is cached per user: a process after the first starts in
		// milliseconds instead of compiling policy.wasm again (BENCHMARKS.md).
		e, err := wasmengine.New(ctx, append(opts, wasmengine.WithCompilationCacheDir(a.cacheDir))...)
		if err == nil {
			return e, bundle.EmbeddedRevision(), nil
		}
		// An unwritable or broken cache must not stop the client: interpret instead.
		opts = append(opts, wasmengine.WithInterpreter())
	} else if a.interpret {
		opts = append(opts, wasmengine.WithInterpreter())
	}
	e, err := wasmengine.New(ctx, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("the wasm engine: %w", err)
	}
	return e, bundle.EmbeddedRevision(), nil
}

// capabilities are the shell's: WithCapabilities', or the OS shell opened with the
// policy's loopback rule and watchers that hand what other processes (or, with a store,
// other machines) change to the policy through the client (activation_changes,
// grant_changes). The returned function closes the shell.
func (a *assembly) capabilities(engine core.Engine, client *atomic.Pointer[Client]) (hostabi.Capabilities, func() error, error) {
	if a.newShell == nil {
		return *a.c.caps, nil, nil
	}
	opts := *a.shellOpts
	watch := func(op string) func(before, after json.RawMessage) {
		return func(before, after json.RawMessage) {
			if cl := client.Load(); cl != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _ = cl.run(ctx, op, map[string]any{"before": before, "after": after}, nil, nil)
			}
		}
	}
	if opts.ActivationChanges == nil {
		opts.ActivationChanges = watch("activation_changes")
	}
	if opts.GrantChanges == nil {
		opts.GrantChanges = watch("grant_changes")
	}
	if so := a.c.storeOpts; so != nil {
		// The store's watcher (LISTEN/NOTIFY) reports what other machines change; the
		// home's files are not the ledgers then.
		if so.ActivationChanges == nil && so.GrantChanges == nil && !so.NoWatch {
			so.ActivationChanges, so.GrantChanges = opts.ActivationChanges, opts.GrantChanges
		}
		if so.Warn == nil {
			so.Warn = opts.Warn
		}
		if so.Service == "" {
			so.Service = opts.Service
		}
		opts.NoWatch, opts.ActivationChanges, opts.GrantChanges = true, nil, nil
	}
	if opts.Loopback.Names == nil {
		opts.Loopback = engine.Manifest().Loopback // the policy's rule, for the shell's dialer
	}
	shell, err := a.newShell(opts)
	if err != nil {
		return hostabi.Capabilities{}, nil, err
	}
	return shell.Capabilities(), shell.Close, nil
}

// build returns the client; the engine, the shell and the store are its to close.
func (a *assembly) build(ctx context.Context) (*Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	if a.newShell == nil && a.c.caps == nil {
		return nil, errors.New("grantwire: no shell: pass WithCapabilities, or use grantwire.Open for the OS shell")
	}
	engine, err := a.buildEngine(ctx)
	if err != nil {
		return nil, err
	}
	var client atomic.Pointer[Client]
	caps, closeShell, err := a.capabilities(engine, &client)
	if err != nil {
		return nil, err
	}
	cl := &Client{catalog: a.cat, observe: a.c.observer(), engine: engine, revision: a.revision}
	if closeShell != nil {
		cl.closers = append(cl.closers, closeShell)
	}
	a.c.caps = &caps
	closeStore, err := a.c.layStore(ctx)
	if err != nil {
		_ = cl.closeAll()
		return nil, err
	}
	if closeStore != nil {
		cl.closers = append(cl.closers, closeStore)
	}
	if a.c.bundle != nil && a.owns {
		cl.bundle = bundle.Name
	}
	cl.host = host.New(*a.c.caps)
	cl.host.Trace = a.c.trace
	cl.driver = &hostabi.Driver{Engine: engine, Host: cl.host}
	if err := cl.validate(ctx, a.c.bundle != nil); err != nil {
		_ = cl.closeAll()
		return nil, err
	}
	cl.owns = a.owns
	a.client = cl
	client.Store(cl)
	return cl, nil
}

// close releases what was built: the client (which closes its engine, shell and store),
// else the engine or OPA server built here. Closing twice is fine.
func (a *assembly) close(ctx context.Context) error {
	var err error
	switch {
	case a.client != nil:
		err = a.client.Close(ctx)
	case a.engine != nil && a.owns:
		err = a.engine.Close(ctx)
	}
	if a.server != nil {
		err = errors.Join(err, a.server.Close(ctx))
	}
	a.client, a.engine, a.server, a.owns = nil, nil, nil, false
	return err
}

// built runs build and releases what was built when it fails (New and Open).
func (a *assembly) built(ctx context.Context) (*Client, error) {
	cl, err := a.build(ctx)
	if err != nil {
		_ = a.close(ctx)
		return nil, err
	}
	return cl, nil
}

// choice is the assembly of the command's oprun.Choice.
type choice struct{ a *assembly }

func init() {
	oprun.RegisterAssemble(func(ch oprun.Choice) oprun.Assembly {
		var options []Option
		if _, added := ch.Engines[ch.Engine]; !added && ch.Engine != "" {
			options = append(options, WithEngineName(ch.Engine))
		}
		if ch.Catalog != nil {
			options = append(options, WithCatalog(ch.Catalog))
		}
		if ch.Bundle != nil {
			options = append(options, WithBundle(ch.Bundle))
		}
		if ch.StoreURL != "" {
			options = append(options, WithStore(ch.StoreURL, ch.Store))
		}
		if log := ch.DecisionLog; log != nil {
			options = append(options, WithObserver(func(d Decision) { log(d.Record()) }))
		}
		a := newAssembly(options)
		a.factory = ch.Engines[ch.Engine]
		a.shellOpts, a.newShell = ch.Shell, ch.NewShell
		if a.shellOpts == nil {
			a.shellOpts = &native.Options{}
		}
		if a.newShell == nil {
			a.newShell = openNative
		}
		a.cacheDir, a.interpret, a.pool = ch.CacheDir, ch.CacheDir == "", ch.Pool
		return choice{a}
	})
}

func (c choice) Catalog() (*catalog.Catalog, error) { return c.a.catalog(context.Background()) }

func (c choice) Engine(ctx context.Context) (core.Engine, error) { return c.a.buildEngine(ctx) }

func (c choice) Client(ctx context.Context) (any, error) { return c.a.build(ctx) }

func (c choice) Close(ctx context.Context) error { return c.a.close(ctx) }

// openNative opens the OS shell.
func openNative(o native.Options) (oprun.Shell, error) {
	s, err := native.New(o)
	if err != nil {
		return nil, err
	}
	return s, nil
}
