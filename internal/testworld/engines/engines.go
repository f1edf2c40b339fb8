// Package engines builds the three policy engines the way the corpus runners use them: one
// constructor per engine for policy data ({"catalog": ...}), so that the memory host's, the
// OS shell's and the differential tests' runners choose an engine without writing its
// construction again. Each is a memshell.EngineFactory.
package engines

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
)

// Wasm is the wasm engine on data with one instance (the corpus runs one query at a time).
func Wasm(ctx context.Context, data []byte) (core.Engine, error) {
	return wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1))
}

// Rego is OPA's evaluator on data.
func Rego(ctx context.Context, data []byte) (core.Engine, error) {
	return regoengine.New(ctx, regoengine.WithData(data))
}

// Native is the native engine on data.
func Native(ctx context.Context, data []byte) (core.Engine, error) {
	return nativeengine.New(ctx, nativeengine.WithData(data))
}

// Factory builds an engine for policy data (memshell.EngineFactory's shape).
type Factory = func(ctx context.Context, data []byte) (core.Engine, error)

// WasmCompiledOnce returns Wasm's factory with one compilation cache: the policy is compiled
// once for every catalog it is built for, until tb ends (the foreign shells' replays).
func WasmCompiledOnce(tb testing.TB) Factory {
	cache := wazero.NewCompilationCache()
	tb.Cleanup(func() { _ = cache.Close(context.Background()) })
	return func(ctx context.Context, data []byte) (core.Engine, error) {
		return wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1), wasmengine.WithCompilationCache(cache))
	}
}
