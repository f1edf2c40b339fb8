package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/wasmengine"
)

// The CLI's policy engines, in one place. --engine (or $GRANTWIRE_ENGINE) names one of
// engines, or is opa-server=URL (an OPA server serving grantwire's bundle); defaultEngine
// (grantwire.DefaultEngine, native) is used otherwise. The default build links the native
// and Wasm engines and no OPA package (TestBinaryLinksNoOPA); the OPA build (go build
// -tags opa) adds rego (engine_rego.go).
const defaultEngine = grantwire.DefaultEngine

// engineFactory builds an engine on the catalog's data (data.catalog).
type engineFactory func(ctx context.Context, a *app, data []byte) (core.Engine, error)

// engines are the engines this build can run, by name.
var engines = map[string]engineFactory{
	"native": newNativeEngine,
	"wasm":   newWasmEngine,
}

// newNativeEngine runs the policy compiled to Go (core/nativeengine): no compilation or
// instantiation at start, the fastest decisions.
func newNativeEngine(ctx context.Context, _ *app, data []byte) (core.Engine, error) {
	return nativeengine.New(ctx, nativeengine.WithData(data))
}

func engineNames() []string {
	names := make([]string, 0, len(engines))
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkEngine validates an --engine name.
func checkEngine(name string) error {
	if _, ok := engines[name]; ok {
		return nil
	}
	if slices.Contains(opaBuildEngines, name) {
		return &needsOPABuild{"--engine " + name}
	}
	known := strings.Join(engineNames(), ", ") + " or opa-server=URL"
	for _, n := range opaBuildEngines {
		if _, ok := engines[n]; !ok {
			known += " (" + n + " in the OPA build)"
		}
	}
	return usagef("--engine must be %s, not %q", known, name)
}

// newWasmEngine runs policy.wasm on wazero, compiled, with the compiled code cached in the
// user's cache directory (grantwire/wazero, as grantwire.Open does): every process after
// the first loads it in milliseconds instead of compiling it (BENCHMARKS.md). Without a
// usable cache directory it interprets the module, which starts faster than compiling it.
func newWasmEngine(ctx context.Context, a *app, data []byte) (core.Engine, error) {
	pool := 1 // one command asks a handful of questions, one at a time
	if a.LongRunning {
		pool = runtime.GOMAXPROCS(0)
	}
	if dir := a.cacheDir(); dir != "" {
		e, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(pool),
			wasmengine.WithCompilationCacheDir(filepath.Join(dir, "grantwire", "wazero")))
		if err == nil {
			return e, nil
		}
		// An unwritable or broken cache must not stop the command: interpret instead.
	}
	e, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithInterpreter(), wasmengine.WithPoolSize(pool))
	if err != nil {
		return nil, fmt.Errorf("the wasm engine: %w", err)
	}
	return e, nil
}

// cacheDir is the user's cache directory, or "" without one.
func (a *app) cacheDir() string {
	if a.CacheDir == nil {
		return ""
	}
	dir, err := a.CacheDir()
	if err != nil {
		return ""
	}
	return dir
}
