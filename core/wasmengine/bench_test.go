package wasmengine_test

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
)

// BenchmarkFloor measures what OPA's Wasm runtime costs with no policy logic: the
// minimal policy (decision `true`) and the floor policy (a constant decision equal to the
// gate's allow decision), on a 10-byte query and on the gate's allow query. Against the
// gate's figures it splits a decision into input parsing, output writing and policy logic.
func BenchmarkFloor(b *testing.B) {
	ctx := context.Background()
	allow := nodiff.GateAllow().Query
	for _, mod := range []string{"minimal", "floor"} {
		e, err := wasmengine.New(ctx, wasmengine.WithModule(testModule(b, mod)), wasmengine.WithPoolSize(1))
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range []struct {
			name  string
			query []byte
		}{{"tiny", []byte(`{"op":"x"}`)}, {"gate-allow", allow}} {
			b.Run("policy="+mod+"/query="+in.name, func(b *testing.B) {
				b.ReportMetric(float64(len(in.query)), "query-bytes")
				buf := make([]byte, 0, 4096)
				b.ReportAllocs()
				for b.Loop() {
					if buf, err = e.DecideJSON(ctx, buf[:0], in.query); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		e.Close(ctx)
	}
}

// BenchmarkNew measures an engine's cold start (compile the policy, instantiate, parse
// the catalog, evaluate the manifest, one instance) without a compilation cache, with a
// warm in-memory cache shared between engines, and with a warm directory cache opened
// afresh by each engine (a new process).
func BenchmarkNew(b *testing.B) {
	ctx := context.Background()
	data := nodiff.Scaled(10).Data
	// run measures New with opts, after WithData and WithPoolSize(1); a cache is warmed by
	// one engine first.
	run := func(b *testing.B, cache wasmengine.Option, opts ...wasmengine.Option) {
		if cache != nil {
			e, err := wasmengine.New(ctx, cache)
			if err != nil {
				b.Fatal(err)
			}
			e.Close(ctx)
			opts = append(opts, cache)
		}
		opts = append([]wasmengine.Option{wasmengine.WithData(data), wasmengine.WithPoolSize(1)}, opts...)
		b.ReportAllocs()
		for b.Loop() {
			e, err := wasmengine.New(ctx, opts...)
			if err != nil {
				b.Fatal(err)
			}
			e.Close(ctx)
		}
	}
	b.Run("cache=none", func(b *testing.B) { run(b, nil) })
	b.Run("cache=memory", func(b *testing.B) {
		cache := wazero.NewCompilationCache()
		defer cache.Close(ctx)
		run(b, wasmengine.WithCompilationCache(cache))
	})
	b.Run("cache=dir", func(b *testing.B) { run(b, wasmengine.WithCompilationCacheDir(b.TempDir())) })
	b.Run("cache=none/pool=2", func(b *testing.B) { run(b, nil, wasmengine.WithPoolSize(2)) })
}

// BenchmarkContext measures what cancellation costs: the gate's allow decision (real
// policy, 10-connector catalog) under a context that cannot end (the plain variant) and
// under one that can (the variant compiled WithCloseOnContextDone), on the compiler and
// on the interpreter.
func BenchmarkContext(b *testing.B) {
	allow := nodiff.GateAllow().Query
	data := nodiff.Scaled(10).Data
	for _, interp := range []bool{false, true} {
		opts := []wasmengine.Option{wasmengine.WithData(data), wasmengine.WithPoolSize(1)}
		mode := "compiler"
		if interp {
			opts, mode = append(opts, wasmengine.WithInterpreter()), "interpreter"
		}
		e, err := wasmengine.New(context.Background(), opts...)
		if err != nil {
			b.Fatal(err)
		}
		cancellable, cancel := context.WithCancel(context.Background())
		for _, c := range []struct {
			name string
			ctx  context.Context
		}{{"background", context.Background()}, {"cancellable", cancellable}} {
			b.Run("engine="+mode+"/ctx="+c.name, func(b *testing.B) {
				buf := make([]byte, 0, 4096)
				if _, err := e.DecideJSON(c.ctx, buf, allow); err != nil { // builds the variant
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if buf, err = e.DecideJSON(c.ctx, buf[:0], allow); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		cancel()
		e.Close(context.Background())
	}
}
