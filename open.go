package grantwire

import (
	"context"
	"errors"

	"github.com/grantwire/grantwire/shells/native"
)

// Open returns a client on the OS shell, built the way the grantwire command builds its
// own (one construction path): the catalog (embedded, WithCatalog, or a bundle's with
// WithBundle), the engine on it ([DefaultEngine], or the one WithEngineName or WithEngine
// chooses), the OS shell (opts: home, keyring service, browser, …), whose watcher reports
// activations and grants other processes change through the policy. The wasm engine
// caches compiled code in the user's cache directory (grantwire/wazero). Close the client
// to release the shell.
//
// No OPA package is linked.
func Open(ctx context.Context, opts native.Options, options ...Option) (*Client, error) {
	a := newAssembly(options)
	a.shellOpts, a.newShell, a.cacheDir = &opts, openNative, wasmCacheDir()
	return a.built(ctx)
}

// closeAll runs the extra closers of a client opened by Open.
func (c *Client) closeAll() error {
	var errs []error
	for _, f := range c.closers {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}
