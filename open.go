package grantwire

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/grantwire/grantwire/core/opaserver"
	"github.com/grantwire/grantwire/shells/native"
)

// Open returns a client on the OS shell with everything wired the way the grantwire
// command wires it: the catalog (embedded, or WithCatalog), the engine
// on it ([DefaultEngine], or the one WithEngineName or WithEngine chooses),
// and the OS shell (opts: home, keyring service, browser, …), whose watcher reports
// activations and grants other processes change through the policy. The wasm engine
// caches compiled code in the user's cache directory (grantwire/wazero). Close the client
// to release the shell.
//
// No OPA package is linked.
func Open(ctx context.Context, opts native.Options, options ...Option) (*Client, error) {
	var c config
	for _, o := range options {
		o(&c)
	}
	if err := errors.Join(append(c.errs, c.checkEngine())...); err != nil {
		return nil, err
	}
	if c.bundle != nil {
		return nil, errors.New("grantwire: Open runs the embedded policy; build a client on a bundle with New(WithBundle, WithCapabilities)")
	}
	var server *opaserver.Engine
	if c.engine == nil && c.engineName == EngineOPAServer {
		var err error
		if server, err = c.serverEngine(ctx); err != nil {
			return nil, err
		}
	}
	cat, err := c.loadCatalog()
	if err != nil {
		if server != nil {
			_ = server.Close(ctx)
		}
		return nil, err
	}
	engine := c.engine
	owns := false
	revision := ""
	if engine == nil {
		if engine, revision, err = c.builtEngine(ctx, cat, server, wasmCacheDir()); err != nil {
			return nil, err
		}
		owns = true
	}
	// New takes the engine built here and the catalog it decides with (an OPA server's).
	options = append(options, func(nc *config) {
		nc.engineName, nc.opaURL, nc.opaOpts = "", "", nil
		nc.catalog, nc.source = nil, cat
	}, WithEngine(engine))
	var client atomic.Pointer[Client]
	if opts.ActivationChanges == nil {
		opts.ActivationChanges = func(before, after json.RawMessage) {
			if cl := client.Load(); cl != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _ = cl.run(ctx, "activation_changes", map[string]any{"before": before, "after": after}, nil, nil)
			}
		}
	}
	if opts.GrantChanges == nil {
		opts.GrantChanges = func(before, after json.RawMessage) {
			if cl := client.Load(); cl != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _ = cl.run(ctx, "grant_changes", map[string]any{"before": before, "after": after}, nil, nil)
			}
		}
	}
	if c.storeOpts != nil {
		// The store's watcher (LISTEN/NOTIFY) reports what other machines change; the home's
		// files are not the ledgers then.
		so := *c.storeOpts
		if so.ActivationChanges == nil && so.GrantChanges == nil && !so.NoWatch {
			so.ActivationChanges, so.GrantChanges = opts.ActivationChanges, opts.GrantChanges
		}
		if so.Warn == nil {
			so.Warn = opts.Warn
		}
		if so.Service == "" {
			so.Service = opts.Service
		}
		options = append(options, WithStore(c.storeURL, so))
		opts.NoWatch = true
	}
	if opts.Loopback.Names == nil {
		opts.Loopback = engine.Manifest().Loopback // the policy's rule, for the shell's dialer
	}
	shell, err := native.New(opts)
	if err != nil {
		if owns {
			_ = engine.Close(ctx)
		}
		return nil, err
	}
	options = append(options, WithCapabilities(shell.Capabilities()))
	cl, err := New(ctx, options...)
	if err != nil {
		_ = shell.Close()
		if owns {
			_ = engine.Close(ctx)
		}
		return nil, err
	}
	cl.owns = cl.owns || owns
	if owns {
		cl.revision = revision
	}
	cl.closers = append(cl.closers, shell.Close)
	client.Store(cl)
	return cl, nil
}

// closeAll runs the extra closers of a client opened by Open.
func (c *Client) closeAll() error {
	var errs []error
	for _, f := range c.closers {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}
