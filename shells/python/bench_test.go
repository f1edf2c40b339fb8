package python_test

import (
	"context"
	"os"
	"testing"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/wasmengine"
)

// BenchmarkPythonHotQuery decides the Python shell's hot-path query (written by
// `bench.py --query FILE`, named by GRANTWIRE_PY_QUERY) on the Go Wasm and native engines, for
// BENCHMARKS.md's side-by-side of one gate decision in Python and in Go:
//
//	GRANTWIRE_PY_QUERY=/tmp/q.json go test ./shells/python -run '^$' -bench PythonHotQuery -benchmem
func BenchmarkPythonHotQuery(b *testing.B) {
	path := os.Getenv("GRANTWIRE_PY_QUERY")
	if path == "" {
		b.Skip("GRANTWIRE_PY_QUERY names no query: run shells/python/bench.py --query FILE first")
	}
	query, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	data := catalog.Default().Data()
	w, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1))
	if err != nil {
		b.Fatal(err)
	}
	n, err := nativeengine.New(ctx, nativeengine.WithData(data))
	if err != nil {
		b.Fatal(err)
	}
	for name, e := range map[string]core.Engine{"wasm": w, "native": n} {
		b.Run("engine="+name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				if buf, err = e.DecideJSON(ctx, buf[:0], query); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
