package grantwire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/grantwire/grantwire/core/opaserver"
)

// Engine names for [WithEngineName] and the CLI's --engine, and [DefaultEngine].
const (
	// EngineNative is Go compiled from the policy (core/nativeengine): the fastest, and
	// only the policy grantwire was built with.
	EngineNative = "native"
	// EngineWasm is policy.wasm on wazero (core/wasmengine): the published module, as
	// every foreign runtime runs it; the engine of a bundle (WithBundle).
	EngineWasm = "wasm"
	// EngineOPAServer is an OPA server serving grantwire's bundle (core/opaserver),
	// spelled "opa-server=URL".
	EngineOPAServer = "opa-server"
	// EngineRego is OPA's evaluator (core/regoengine). It links OPA, so this package
	// cannot build it: pass WithEngine(regoengine.New(…)).
	EngineRego = "rego"

	// DefaultEngine is the engine New and Open build when none is chosen: the native
	// engine, the fastest in Go programs. The wasm engine stays the engine of bundles and
	// of foreign runtimes (and WithEngineName(EngineWasm) chooses it).
	DefaultEngine = EngineNative
)

// WithEngineName chooses the engine New and Open build: EngineNative, EngineWasm, or
// "opa-server=URL" (an OPA server serving grantwire's bundle; the catalog is the
// server's, so WithCatalog does not combine with it; see core/opaserver and
// docs/fleet.md); opts configure that server's HTTP client. See [DefaultEngine]. The rego
// engine links OPA: build it yourself and pass WithEngine.
func WithEngineName(name string, opts ...opaserver.Option) Option {
	return func(c *config) {
		c.opaOpts = opts
		switch {
		case name == EngineNative || name == EngineWasm:
			c.engineName = name
		case strings.HasPrefix(name, EngineOPAServer+"="):
			u, _ := opaserver.Parse(name)
			c.engineName, c.opaURL = EngineOPAServer, u
		case name == EngineRego:
			c.errs = append(c.errs, errors.New("grantwire: the rego engine links OPA, which this package does not: pass WithEngine(regoengine.New(…))"))
		default:
			c.errs = append(c.errs, fmt.Errorf("grantwire: unknown engine %q (native, wasm or opa-server=URL)", name))
		}
	}
}

// checkEngine refuses combinations of engine options that cannot both hold.
func (c *config) checkEngine() error {
	switch {
	case c.engineName == "":
	case c.engine != nil:
		return errors.New("grantwire: WithEngine and WithEngineName choose the engine twice")
	case c.bundle != nil && c.engineName != EngineWasm:
		return fmt.Errorf("grantwire: WithBundle runs the bundle's policy.wasm on the wasm engine, not %s", c.engineName)
	case c.engineName == EngineOPAServer && c.source != nil:
		return errors.New("grantwire: an OPA server decides with its own data.catalog; do not combine opa-server with WithCatalog")
	}
	return nil
}

// serverEngine connects to the OPA server chosen, whose catalog the client then uses.
func (c *config) serverEngine(ctx context.Context) (*opaserver.Engine, error) {
	e, err := opaserver.New(ctx, c.opaURL, c.opaOpts...)
	if err != nil {
		return nil, fmt.Errorf("grantwire: %w", err)
	}
	if e.Catalog() == nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("grantwire: the OPA server at %s has no data.catalog: does it serve grantwire's bundle?", e.URL())
	}
	c.catalog = e.Catalog()
	return e, nil
}

// wasmCacheDir is where Open keeps the wasm engine's compiled code (the user's cache
// directory), "" when there is none.
func wasmCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		// Compiled code is cached per user: a process after the first starts in
		// milliseconds instead of compiling policy.wasm again (BENCHMARKS.md).
		return filepath.Join(dir, "grantwire", "wazero")
	}
	return ""
}
