package grantwire

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"

	"github.com/grantwire/grantwire/agents"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/shells/native"
)

// Open returns a client on the OS shell with everything wired the way the grantwire
// command wires it: the catalog (embedded, or WithCatalog), the Wasm engine on it, the OS
// shell (opts: home, keyring service, browser, …) with the core's transport rule checking
// every URL, and the agent registry of the home ($GRANTWIRE_HOME/agents.json) unless
// opts.Agents is set. The engine caches compiled code in the user's cache directory
// (grantwire/wazero). Close the client to release the shell.
//
// No OPA package is linked: this is grantwire's Wasm shell for Go programs.
func Open(ctx context.Context, opts native.Options, options ...Option) (*Client, error) {
	var c config
	for _, o := range options {
		o(&c)
	}
	cat, err := catalog.Load(c.catalog)
	if err != nil {
		return nil, err
	}
	engine := c.engine
	owns := false
	if engine == nil {
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
	}
	if opts.Catalog == nil {
		opts.Catalog = cat.Connector
	}
	if opts.CheckURL == nil {
		opts.CheckURL = func(ctx context.Context, u *url.URL, purpose string, hop int, from *url.URL) error {
			return CheckURL(ctx, engine, u, purpose, hop, from)
		}
	}
	shell, err := native.New(opts)
	if err != nil {
		if owns {
			_ = engine.Close(ctx)
		}
		return nil, err
	}
	if opts.Agents == nil {
		home, _ := os.UserHomeDir()
		reg := agents.New(filepath.Join(shell.Home(), agents.FileName), agents.WithUserHome(home))
		caps := shell.Capabilities()
		caps.Agents = reg
		options = append(options, WithCapabilities(caps))
	} else {
		options = append(options, WithCapabilities(shell.Capabilities()))
	}
	options = append(options, WithEngine(engine))
	cl, err := New(ctx, options...)
	if err != nil {
		_ = shell.Close()
		if owns {
			_ = engine.Close(ctx)
		}
		return nil, err
	}
	cl.owns = owns
	cl.closers = append(cl.closers, shell.Close)
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
