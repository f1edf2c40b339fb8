package conformance_test

import (
	"context"
	"testing"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

func wasmEngine(ctx context.Context, data []byte) (core.Engine, error) {
	return wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1))
}

func regoEngine(ctx context.Context, data []byte) (core.Engine, error) {
	return regoengine.New(ctx, regoengine.WithData(data))
}

func nativeEngine(ctx context.Context, data []byte) (core.Engine, error) {
	return nativeengine.New(ctx, nativeengine.WithData(data))
}

func TestNativeMemhost(t *testing.T) {
	conformance.Run(t, memshell.New("native", nativeEngine))
}

func TestWasmMemhost(t *testing.T) {
	conformance.Run(t, memshell.New("wasm", wasmEngine))
}

func TestRegoMemhost(t *testing.T) {
	conformance.Run(t, memshell.New("rego", regoEngine))
}
