package grantwire

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"

	"github.com/grantwire/grantwire/agents"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/opaserver"
	"github.com/grantwire/grantwire/shells/native"
)

// Open returns a client on the OS shell with everything wired the way the grantwire
// command wires it: the catalog (embedded, or WithCatalog), the engine on it
// ([DefaultEngine], or the one WithEngineName, WithOPAServer or WithEngine chooses), the
// OS shell (opts: home, keyring service, browser, …) with the core's transport rule
// checking every URL, and the agent registry of the home ($GRANTWIRE_HOME/agents.json)
// unless opts.Agents is set. The wasm engine caches compiled code in the user's cache
// directory (grantwire/wazero). Close the client to release the shell.
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
	cat, err := catalog.Load(c.catalog)
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
	options = append(options, func(nc *config) { nc.engineName, nc.opaURL, nc.opaOpts, nc.catalog = "", "", nil, c.catalog })
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
	if owns {
		cl.revision = revision
	}
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
