package grantwire

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/shells/native"
)

// Open returns a client on the OS shell with everything wired the way the grantwire
// command wires it: the catalog (embedded, or WithCatalog / WithCatalogFile), the Wasm
// engine on it, and the OS shell (opts: home, keyring service, browser, …), whose watcher
// reports activations other processes change through the policy. The engine caches
// compiled code in the user's cache directory (grantwire/wazero). Close the client to
// release the shell.
//
// No OPA package is linked: this is grantwire's Wasm shell for Go programs.
func Open(ctx context.Context, opts native.Options, options ...Option) (*Client, error) {
	var c config
	for _, o := range options {
		o(&c)
	}
	cat, err := c.loadCatalog()
	if err != nil {
		return nil, err
	}
	engine := c.engine
	owns := false
	if engine == nil && c.bundle == nil {
		eopts := []wasmengine.Option{wasmengine.WithData(cat.Data())}
		if dir, err := os.UserCacheDir(); err == nil {
			// Compiled code is cached per user: a process after the first starts in
			// milliseconds instead of compiling policy.wasm again (BENCHMARKS.md).
			eopts = append(eopts, wasmengine.WithCompilationCacheDir(filepath.Join(dir, "grantwire", "wazero")))
		}
		if engine, err = wasmengine.New(ctx, eopts...); err != nil {
			return nil, err
		}
		owns = true
		options = append(options, WithEngine(engine))
	}
	var client atomic.Pointer[Client]
	if opts.ActivationChanges == nil {
		opts.ActivationChanges = func(before, after json.RawMessage) {
			if cl := client.Load(); cl != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = cl.ActivationChanges(ctx, before, after)
			}
		}
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
