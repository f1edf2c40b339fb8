package nodiff_test

// Benchmarks of grantwire's decisions on every engine in the same run, so their ratios are
// measured under the same conditions: the Wasm engine on bytes (DecideJSON), on types
// (Decide: encoding/json both ways) and on types with resident facts (wasm-resident: a
// Wasm engine of its own whose queries carry version tokens for the facts that stay the
// same call after call), the rego engine, and the hand-written Go gate (the floor:
// go-logic on a decoded query, go-json with encoding/json around it). See BENCHMARKS.md
// and scripts/bench.sh.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
)

type benchSet struct {
	size     nodiff.Size
	engines  []core.Engine // in the order of engineMakers
	wasm     core.Engine   // the Wasm engine among them (for wasm-typed and go-json's check)
	resident core.Engine   // a Wasm engine of its own for wasm-resident (its memory measured apart)
	gate     *goGate
}

var (
	benchMu   sync.Mutex
	benchSets = map[string]*benchSet{}
)

// engines returns, once per size, every engine and the Go gate on the size's catalog.
func engines(b *testing.B, size nodiff.Size) *benchSet {
	benchMu.Lock()
	defer benchMu.Unlock()
	if s, ok := benchSets[size.Name()]; ok {
		return s
	}
	ctx := context.Background()
	cat := size.Catalog()
	s := &benchSet{size: size, gate: newGoGate(cat.Data)}
	for _, m := range engineMakers {
		e, err := m.new(ctx, cat.Data)
		if err != nil {
			b.Fatal(err)
		}
		s.engines = append(s.engines, e)
		if m.name == "wasm" {
			s.wasm = e
		}
	}
	var err error
	if s.resident, err = wasmengine.New(ctx, wasmengine.WithData(cat.Data)); err != nil {
		b.Fatal(err)
	}
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
	reportMemory(b, e)
}

// reportMemory reports a Wasm engine's linear memory per instance (it never shrinks: the
// peak of everything the engine decided so far).
func reportMemory(b *testing.B, e core.Engine) {
	if we, ok := e.(*wasmengine.Engine); ok {
		st := we.Stats()
		n := float64(max(st.Instances, 1))
		b.ReportMetric(float64(st.MemoryBytes)/n/(1<<20), "wasm-MiB/inst")
		if st.ResidentFacts > 0 {
			b.ReportMetric(float64(st.ResidentBytes)/n/(1<<20), "resident-MiB/inst")
		}
	}
}

// stableTokens names by version, as a host does, the facts of q that stay the same call
// after call: ledger answers and keyring answers (secret descriptions), not the clock,
// the environment, locks, HTTP answers or the arguments. The token is a hash of the
// fact's bytes, so a fact that changes gets a new token.
func stableTokens(q *core.Query) {
	q.Tokens = map[string]string{}
	for k, v := range q.Facts {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || strings.Contains(k, "@env_") {
			continue
		}
		_, ledger := m["ledger"]
		_, found := m["found"]
		if ledger || found {
			h := sha256.Sum256(v)
			q.Tokens[k] = hex.EncodeToString(h[:8])
		}
	}
}

func benchTyped(b *testing.B, e core.Engine, scs []nodiff.Scenario, tokens bool) {
	if !tokens {
		check(b, e, scs)
	}
	ctx := context.Background()
	qs := make([]*core.Query, len(scs))
	for i, sc := range scs {
		qs[i] = new(core.Query)
		if err := json.Unmarshal(sc.Query, qs[i]); err != nil {
			b.Fatal(err)
		}
		if tokens {
			stableTokens(qs[i])
			b.ReportMetric(float64(len(qs[i].Tokens)), "tokened-facts")
		}
	}
	if tokens {
		// Every instance of the pool (one per P) parses the facts once: what is measured
		// is the steady state, where they are resident. The outcomes are checked on Decide
		// (DecideJSON would parse the whole query above the resident facts, and the
		// memory reported would be that of both paths).
		for range 2 * runtime.GOMAXPROCS(0) {
			for i, q := range qs {
				d, err := e.Decide(ctx, q)
				var out []byte
				if err == nil {
					out, _ = json.Marshal(d)
				}
				if got := nodiff.Outcome(out, err); got != scs[i].Want {
					b.Fatalf("%s on %s: outcome %q, want %q\n%s", scs[i].Name, e.Name(), got, scs[i].Want, out)
				}
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := e.Decide(ctx, qs[i%len(qs)]); err != nil {
			b.Fatal(err)
		}
	}
	reportMemory(b, e)
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

// benchEngines runs the scenarios on every engine (the Wasm engine on bytes and on
// types); gate adds the Go gate.
func benchEngines(b *testing.B, s *benchSet, scs []nodiff.Scenario, gate bool) {
	if gate {
		b.Run("engine=go-logic", func(b *testing.B) { benchGoLogic(b, s.gate, scs) })
		b.Run("engine=go-json", func(b *testing.B) { benchGoJSON(b, s.gate, s.wasm, scs) })
	}
	for _, e := range s.engines {
		name := e.Name()
		if name == "wasm" {
			name = "wasm-bytes"
		}
		b.Run("engine="+name, func(b *testing.B) { benchBytes(b, e, scs) })
		if e == s.wasm {
			b.Run("engine=wasm-typed", func(b *testing.B) { benchTyped(b, s.wasm, scs, false) })
			b.Run("engine=wasm-resident", func(b *testing.B) { benchTyped(b, s.resident, scs, true) })
		}
	}
}

// BenchmarkGate: get_access_token. first is the first question (the prefetched grant and
// clock → the keyring reads); allow is the hot path's second (grant held, connection and
// client unchanged, cached token valid); mix rotates over seven outcomes (allow, not
// granted, not connected, missing scopes, tripwire, expired, usage).
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
func BenchmarkTripwire(b *testing.B) { benchEach(b, nodiff.Tripwire) }

// BenchmarkRefresh: the refresh plan (expired token → lock; under the lock → refresh;
// rotated token → result and effects).
func BenchmarkRefresh(b *testing.B) { benchEach(b, nodiff.Refresh) }

// benchEach benchmarks each of the scenarios apart, on every size, with the Go gate.
func benchEach(b *testing.B, scenarios func() []nodiff.Scenario) {
	for _, size := range nodiff.Sizes {
		s := engines(b, size)
		for _, sc := range scenarios() {
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
// engine has one instance per P. decisions/s is the throughput of the whole process.
func BenchmarkParallel(b *testing.B) {
	s := engines(b, nodiff.Sizes[0])
	for _, tc := range []struct {
		name string
		scs  []nodiff.Scenario
	}{{"allow", []nodiff.Scenario{nodiff.GateAllow()}}, {"mix", nodiff.GateMix()}} {
		for _, e := range s.engines {
			b.Run("case="+tc.name+"/engine="+e.Name(), func(b *testing.B) {
				check(b, e, tc.scs)
				nodiff.DecideParallel(b, e, func(i int) []byte { return tc.scs[i%len(tc.scs)].Query })
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
