package nodiff_test

// Benchmarks of grantwire's decisions on every engine in the same run, so their ratios are
// measured under the same conditions: the native engine (Go generated from the policy) and
// the Wasm engine on bytes (DecideJSON), the Wasm engine on types (Decide: encoding/json
// both ways), the rego engine, and the hand-written Go gate (the floor: go-logic on a
// decoded query, go-json with encoding/json around it). See BENCHMARKS.md and
// scripts/bench.sh.

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/internal/nodiff"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
)

type benchSet struct {
	size   nodiff.Size
	wasm   *wasmengine.Engine
	rego   *regoengine.Engine
	native *nativeengine.Engine
	gate   *goGate
}

var (
	benchMu   sync.Mutex
	benchSets = map[string]*benchSet{}
)

// engines returns, once per size, both engines and the Go gate on the size's catalog.
func engines(b *testing.B, size nodiff.Size) *benchSet {
	benchMu.Lock()
	defer benchMu.Unlock()
	if s, ok := benchSets[size.Name()]; ok {
		return s
	}
	ctx := context.Background()
	cat := size.Catalog()
	w, err := wasmengine.New(ctx, wasmengine.WithData(cat.Data))
	if err != nil {
		b.Fatal(err)
	}
	r, err := regoengine.New(ctx, regoengine.WithData(cat.Data))
	if err != nil {
		b.Fatal(err)
	}
	n, err := nativeengine.New(ctx, nativeengine.WithData(cat.Data))
	if err != nil {
		b.Fatal(err)
	}
	s := &benchSet{size: size, wasm: w, rego: r, native: n, gate: newGoGate(cat.Data)}
	benchSets[size.Name()] = s
	return s
}

// check decides every scenario once on the engine and fails unless the outcome is the
// expected one, so a benchmark never measures an error path by mistake.
func check(b *testing.B, e core.Engine, scs []nodiff.Scenario) {
	b.Helper()
	for _, sc := range scs {
		out, err := e.DecideJSON(context.Background(), nil, sc.Query)
		if got := nodiff.Outcome(out, err); got != sc.Want {
			b.Fatalf("%s on %s: outcome %q, want %q\n%s", sc.Name, e.Name(), got, sc.Want, out)
		}
	}
}

func benchBytes(b *testing.B, e core.Engine, scs []nodiff.Scenario) {
	check(b, e, scs)
	ctx := context.Background()
	buf := make([]byte, 0, 1<<16)
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if buf, err = e.DecideJSON(ctx, buf[:0], scs[i%len(scs)].Query); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTyped(b *testing.B, e core.Engine, scs []nodiff.Scenario) {
	check(b, e, scs)
	ctx := context.Background()
	qs := make([]*core.Query, len(scs))
	for i, sc := range scs {
		qs[i] = new(core.Query)
		if err := json.Unmarshal(sc.Query, qs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := e.Decide(ctx, qs[i%len(qs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchGoJSON(b *testing.B, gg *goGate, e core.Engine, scs []nodiff.Scenario) {
	ctx := context.Background()
	for _, sc := range scs {
		want, _ := e.DecideJSON(ctx, nil, sc.Query)
		if got, ok := gg.DecideJSON(nil, sc.Query); !ok || string(got) != string(want) {
			b.Fatalf("%s: the Go gate says %s, the engine %s", sc.Name, got, want)
		}
	}
	buf := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		buf, _ = gg.DecideJSON(buf[:0], scs[i%len(scs)].Query)
	}
}

func benchGoLogic(b *testing.B, gg *goGate, scs []nodiff.Scenario) {
	ins := make([]any, len(scs))
	for i, sc := range scs {
		var err error
		if ins[i], err = decodeQuery(sc.Query); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d, _ := gg.decide(ins[i%len(ins)])
		buf = appendJSON(buf[:0], d)
	}
}

// benchEngines runs the scenarios on every engine; gate adds the Go gate.
func benchEngines(b *testing.B, s *benchSet, scs []nodiff.Scenario, gate bool) {
	if gate {
		b.Run("engine=go-logic", func(b *testing.B) { benchGoLogic(b, s.gate, scs) })
		b.Run("engine=go-json", func(b *testing.B) { benchGoJSON(b, s.gate, s.wasm, scs) })
	}
	b.Run("engine=native", func(b *testing.B) { benchBytes(b, s.native, scs) })
	b.Run("engine=wasm-bytes", func(b *testing.B) { benchBytes(b, s.wasm, scs) })
	b.Run("engine=wasm-typed", func(b *testing.B) { benchTyped(b, s.wasm, scs) })
	b.Run("engine=rego", func(b *testing.B) { benchBytes(b, s.rego, scs) })
}

// BenchmarkGate: get_access_token after the prefetch round. allow is the hot path (grant
// held, connection and client unchanged, cached token valid); mix rotates over seven
// outcomes (allow, not granted, not connected, missing scopes, tripwire, expired, usage).
func BenchmarkGate(b *testing.B) {
	for _, size := range nodiff.Sizes {
		s := engines(b, size)
		b.Run("case=first/size="+size.Name(), func(b *testing.B) {
			benchEngines(b, s, []nodiff.Scenario{nodiff.GateFirst()}, true)
		})
		b.Run("case=allow/size="+size.Name(), func(b *testing.B) {
			benchEngines(b, s, []nodiff.Scenario{nodiff.GateAllow()}, true)
		})
		b.Run("case=mix/size="+size.Name(), func(b *testing.B) { benchEngines(b, s, nodiff.GateMix(), true) })
	}
}

// BenchmarkTripwire: the gate's client-hash tripwire, step by step (detect → fresh read;
// still mismatched → take the lock; under the lock → clear the connection).
func BenchmarkTripwire(b *testing.B) {
	for _, size := range nodiff.Sizes {
		s := engines(b, size)
		for _, sc := range nodiff.Tripwire() {
			b.Run("case="+sc.Name+"/size="+size.Name(), func(b *testing.B) {
				benchEngines(b, s, []nodiff.Scenario{sc}, true)
			})
		}
	}
}

// BenchmarkRefresh: the refresh plan (expired token → lock; under the lock → refresh;
// rotated token → result and effects).
func BenchmarkRefresh(b *testing.B) {
	for _, size := range nodiff.Sizes {
		s := engines(b, size)
		for _, sc := range nodiff.Refresh() {
			b.Run("case="+sc.Name+"/size="+size.Name(), func(b *testing.B) {
				benchEngines(b, s, []nodiff.Scenario{sc}, true)
			})
		}
	}
}

// BenchmarkListing: status, list_grants and connections with every fact they ask for.
// Their queries carry whole ledgers, so they grow with the world.
func BenchmarkListing(b *testing.B) {
	for _, size := range nodiff.Sizes {
		s := engines(b, size)
		for _, sc := range size.Listings() {
			b.Run("case="+sc.Name+"/size="+size.Name(), func(b *testing.B) {
				b.ReportMetric(float64(len(sc.Query)), "query-bytes")
				benchEngines(b, s, []nodiff.Scenario{sc}, false)
			})
		}
	}
}

// BenchmarkParallel: gate decisions from GOMAXPROCS goroutines (b.RunParallel); the Wasm
// engine has one instance per P, the native engine one evaluation state per goroutine in
// flight. decisions/s is the throughput of the whole process.
func BenchmarkParallel(b *testing.B) {
	s := engines(b, nodiff.Sizes[0])
	for _, tc := range []struct {
		name string
		scs  []nodiff.Scenario
	}{{"allow", []nodiff.Scenario{nodiff.GateAllow()}}, {"mix", nodiff.GateMix()}} {
		for _, e := range []core.Engine{s.native, s.wasm, s.rego} {
			b.Run("case="+tc.name+"/engine="+e.Name(), func(b *testing.B) {
				check(b, e, tc.scs)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					buf := make([]byte, 0, 4096)
					var err error
					for i := 0; pb.Next(); i++ {
						if buf, err = e.DecideJSON(ctx, buf[:0], tc.scs[i%len(tc.scs)].Query); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			})
		}
		b.Run("case="+tc.name+"/engine=go-logic", func(b *testing.B) {
			ins := make([]any, len(tc.scs))
			for i, sc := range tc.scs {
				ins[i], _ = decodeQuery(sc.Query)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 0, 4096)
				for i := 0; pb.Next(); i++ {
					d, _ := s.gate.decide(ins[i%len(ins)])
					buf = appendJSON(buf[:0], d)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
