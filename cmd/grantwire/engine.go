package main

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/oprun"
)

// The CLI's policy engines, by name. --engine (or $GRANTWIRE_ENGINE) names one of them,
// or is opa-server=URL (an OPA server serving grantwire's bundle); defaultEngine
// (grantwire.DefaultEngine, native) is used otherwise. The root's construction path
// builds them (oprun.Assemble); the default build links the native and Wasm engines and no
// OPA package (TestBinaryLinksNoOPA); the OPA build (go build -tags opa) adds rego to
// engines (engine_rego.go).
const defaultEngine = grantwire.DefaultEngine

// engines are the engines this build adds to the root's (native, wasm, opa-server), each
// built on the catalog's data (data.catalog).
var engines = map[string]func(ctx context.Context, data []byte) (core.Engine, error){}

func engineNames() []string {
	names := []string{grantwire.EngineNative, grantwire.EngineWasm}
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkEngine validates an --engine name.
func checkEngine(name string) error {
	if slices.Contains(engineNames(), name) {
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

// engineChoice is the engine part of the client's construction: the engine --engine
// names, a wasm engine sized for one command (or, LongRunning, for many concurrent
// decisions) whose compiled code is kept in the user's cache directory as grantwire.Open
// keeps it (every process after the first loads it in milliseconds, BENCHMARKS.md), and
// interpreted without one (it starts faster than compiling).
func (a *app) engineChoice() oprun.Choice {
	ch := oprun.Choice{Engine: a.engineName, Engines: engines, Pool: 1}
	if a.LongRunning {
		ch.Pool = runtime.GOMAXPROCS(0)
	}
	if dir := a.cacheDir(); dir != "" {
		ch.CacheDir = filepath.Join(dir, "grantwire", "wazero")
	}
	return ch
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
