package grantwire

import (
	"context"
	"errors"
	"fmt"

	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
)

// WithBundle runs the client on a bundle read by [bundle.Read] instead of the embedded
// policy and catalog: its policy.wasm on the wasm engine, its data.catalog and its built-in
// agents. New refuses a module the engine does not accept (wrong ABI, missing exports,
// host builtins), and a catalog the bundle's policy refuses (validate_catalog), with an
// error wrapping bundle.ErrRefused. WithBundle excludes WithEngine and the catalog options.
func WithBundle(b *bundle.Bundle) Option {
	return func(c *config) {
		if b == nil {
			c.errs = append(c.errs, errors.New("grantwire: WithBundle(nil)"))
			return
		}
		c.bundle = b
	}
}

// useBundle takes the catalog and the built-in agents from the bundle.
func (c *config) useBundle() error {
	if c.bundle == nil {
		return nil
	}
	if c.engine != nil || c.catalog != nil || c.source != nil {
		return errors.New("grantwire: WithBundle carries its own policy and catalog; do not combine it with WithEngine or a catalog option")
	}
	cat, err := catalog.Load(c.bundle.Catalog)
	if err != nil {
		return bundleRefused("data.catalog: %v", err)
	}
	withAgents, err := cat.WithBuiltinAgents(c.bundle.Agents)
	if err != nil {
		return bundleRefused("data.agents.builtin: %v", err)
	}
	c.source = withAgents
	return nil
}

// newWasmEngine builds the default engine: the bundle's module, or the embedded one.
func (c *config) newWasmEngine(ctx context.Context, cat *catalog.Catalog) (*wasmengine.Engine, string, error) {
	opts := []wasmengine.Option{wasmengine.WithData(cat.Data())}
	if c.bundle == nil {
		e, err := wasmengine.New(ctx, opts...)
		return e, bundle.EmbeddedRevision(), err
	}
	e, err := wasmengine.New(ctx, append(opts, wasmengine.WithModule(c.bundle.Wasm))...)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", bundle.ErrRefused, c.bundle.WasmPath, err)
	}
	return e, c.bundle.Revision, nil
}

// Revision names the policy this client decides with: the bundle's revision (a bundle's,
// or the one an OPA server runs), the embedded policy's ([bundle.EmbeddedRevision]), or ""
// for an engine given with WithEngine that does not say (it may evaluate any Rego).
func (c *Client) Revision() string { return c.revision }

func bundleRefused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{bundle.ErrRefused}, args...)...)
}
