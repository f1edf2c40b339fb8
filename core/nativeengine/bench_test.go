package nativeengine_test

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
)

// The benchmarks of issue 15 on host ABI v2, measured on the questions a driver asks
// (captured on memhost, see episodes_test.go), beside the wasm engine and OPA's evaluator
// (the rego engine) on the same questions, in the same run. An operation is every
// question it asks; a warm engine answers each.

// compared returns the native engine and the wasm and rego engines on the same data.
func compared(b *testing.B, native core.Engine, data []byte) []core.Engine {
	b.Helper()
	ctx := context.Background()
	w, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(runtime.GOMAXPROCS(0)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close(ctx) })
	r, err := regoengine.New(ctx, regoengine.WithData(data))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close(ctx) })
	return []core.Engine{native, w, r}
}

// agree checks that an engine answers every question as the native engine did when it
// was captured, byte for byte.
func agree(b *testing.B, e core.Engine, eps []episode) {
	b.Helper()
	for _, ep := range eps {
		out, err := e.DecideJSON(context.Background(), nil, ep.Query)
		if err != nil || string(out) != string(ep.Decision) {
			b.Fatalf("%s on %s: %v\n got  %s\n want %s", e.Name(), ep.Name, err, out, ep.Decision)
		}
	}
}

// operation answers every question of eps once per iteration: ns/op is one operation's
// time in the engine.
func operation(b *testing.B, e core.Engine, eps []episode) {
	agree(b, e, eps)
	ctx := context.Background()
	buf := make([]byte, 0, 16384)
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, ep := range eps {
			if buf, err = e.DecideJSON(ctx, buf[:0], ep.Query); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkGate: get_access_token as the engine sees it. allow hands out a cached token
// (two questions: the prefetched grant, then the keyring read), not-granted refuses an
// agent (one question), refresh is an expired token's plan (four questions: the
// keyring, the lock, the refresh request, the save).
func BenchmarkGate(b *testing.B) {
	native, eps := gateEpisodes(b)
	cat, err := catalog.Load(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range compared(b, native, cat.Data()) {
		for _, name := range []string{"allow", "not-granted", "refresh"} {
			b.Run("case="+name+"/engine="+e.Name(), func(b *testing.B) { operation(b, e, eps[name]) })
		}
	}
	// The hand-out's two questions on typed queries, as the driver asks them: typed-json is
	// core.DecideTyped (before resident facts), typed the parts-built input, resident with
	// tokens on the ledger facts (what the host names), resident-all with tokens on every
	// fact (what tokens for keyring facts would add at most).
	for _, mode := range []string{"typed-json", "typed", "resident", "resident-all"} {
		b.Run("case=allow/engine=native-"+mode, func(b *testing.B) {
			var qs []*core.Query
			var want []*core.Decision
			for _, ep := range eps["allow"] {
				q := typed(b, ep.Query, benchTokens, false)
				for k := range q.Tokens {
					if mode == "typed" || mode == "typed-json" || (mode == "resident" && !strings.Contains(string(q.Facts[k]), `"ledger":`)) {
						delete(q.Tokens, k)
					}
				}
				d, _ := core.ParseDecision(ep.Decision)
				qs, want = append(qs, q), append(want, d)
			}
			decide := native.Decide
			if mode == "typed-json" {
				decide = func(ctx context.Context, q *core.Query) (*core.Decision, error) {
					return core.DecideTyped(ctx, native, q)
				}
			}
			ctx := context.Background()
			for i, q := range qs {
				if got, err := decide(ctx, q); err != nil || !reflect.DeepEqual(got, want[i]) {
					b.Fatalf("question %d: %v: the typed decision differs", i, err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, q := range qs {
					if _, err := decide(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkParallel: cached-token hand-outs (both questions) from GOMAXPROCS goroutines;
// decisions/s counts questions answered by the whole process.
func BenchmarkParallel(b *testing.B) {
	native, eps := gateEpisodes(b)
	cat, err := catalog.Load(nil)
	if err != nil {
		b.Fatal(err)
	}
	qs := eps["allow"]
	for _, e := range compared(b, native, cat.Data()) {
		b.Run("case=allow/engine="+e.Name(), func(b *testing.B) {
			agree(b, e, qs)
			nodiff.DecideParallel(b, e, func(i int) []byte { return qs[i%len(qs)].Query })
		})
	}
}

// BenchmarkListing: the last question of status and list_grants (every fact they read:
// the whole grants and activations ledgers, every connection) at 10 × 10 and
// 50 connectors × 1,000 agents.
func BenchmarkListing(b *testing.B) {
	for _, size := range []struct{ connectors, agents int }{{10, 10}, {50, 1000}} {
		native, eps := listingEpisodes(b, size.connectors, size.agents)
		engines := compared(b, native, scaledCatalog(b, size.connectors).Data())
		for _, op := range []string{"status", "list_grants"} {
			ep := eps[op]
			for _, e := range engines {
				b.Run("case="+op+"/size="+sizeName(size.connectors, size.agents)+"/engine="+e.Name(), func(b *testing.B) {
					operation(b, e, []episode{ep})
					b.ReportMetric(float64(len(ep.Query)), "query-bytes")
				})
			}
			// The native engine on typed queries (Decide, as a driver asks): typed-json is
			// core.DecideTyped (the query marshalled, the decision parsed: Decide before
			// resident facts); typed builds the input from the query's parts and parses
			// every fact per query; resident has tokens, so the facts were parsed by the
			// first call and every later one reuses them.
			for _, mode := range []string{"typed-json", "typed", "resident"} {
				b.Run("case="+op+"/size="+sizeName(size.connectors, size.agents)+"/engine=native-"+mode, func(b *testing.B) {
					q := typed(b, ep.Query, benchTokens, false)
					if mode != "resident" {
						q.Tokens = nil
					}
					decide := native.Decide
					if mode == "typed-json" {
						decide = func(ctx context.Context, q *core.Query) (*core.Decision, error) {
							return core.DecideTyped(ctx, native, q)
						}
					}
					want, _ := core.ParseDecision(ep.Decision)
					ctx := context.Background()
					if got, err := decide(ctx, q); err != nil || !reflect.DeepEqual(got, want) {
						b.Fatalf("%s: %v: the typed decision differs", op, err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						if _, err := decide(ctx, q); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

func sizeName(c, a int) string { return fmt.Sprintf("%dx%d", c, a) }

// BenchmarkEpisode measures each captured question of the gate and the refresh plan alone
// on the native engine.
func BenchmarkEpisode(b *testing.B) {
	e, eps := gateEpisodes(b)
	for _, name := range []string{"allow", "not-granted", "refresh"} {
		for _, ep := range eps[name] {
			b.Run(ep.Name, func(b *testing.B) { operation(b, e, []episode{ep}) })
		}
	}
}

// benchTokens issues the benchmarks' tokens: one issuer, so that a token never names two
// contents (the contract of core.Query.Tokens).
var benchTokens = &tokens{}
