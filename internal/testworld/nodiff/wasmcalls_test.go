package nodiff_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
)

// callCounter counts Wasm function calls by function name.
type callCounter struct {
	calls map[string]int
	total int
}

type countingListener struct {
	c    *callCounter
	name string
}

func (l countingListener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	l.c.calls[l.name]++
	l.c.total++
}
func (l countingListener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}
func (l countingListener) Abort(context.Context, api.Module, api.FunctionDefinition, error)    {}

// BenchmarkWasmCalls counts the Wasm function calls (OPA's runtime and the policy's rules,
// through a wazero function listener) that each benchmark scenario takes on the 10×10
// catalog, reported as the metric wasm-calls/op: a measure of the work a decision does
// that, unlike time, does not depend on the machine's load (its ns/op includes the
// listener and is not a figure to quote). WASMCALLS_TOP=<scenario> logs that scenario's
// 40 busiest functions; MOD=<policy.wasm> measures another build of the policy:
//
//	go test ./internal/testworld/nodiff -run '^$' -bench WasmCalls -benchtime 1x
//	WASMCALLS_TOP=allow go test ./internal/testworld/nodiff -run '^$' -bench 'WasmCalls/case=allow' -benchtime 1x -v
func BenchmarkWasmCalls(b *testing.B) {
	cc := &callCounter{calls: map[string]int{}}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), experimental.FunctionListenerFactoryFunc(func(d api.FunctionDefinition) experimental.FunctionListener {
		return countingListener{c: cc, name: strings.TrimPrefix(d.DebugName(), "opa.wasm.")}
	}))
	opts := []wasmengine.Option{wasmengine.WithData(nodiff.Scaled(10).Data), wasmengine.WithPoolSize(1)}
	if m := os.Getenv("MOD"); m != "" {
		mod, err := os.ReadFile(m)
		if err != nil {
			b.Fatal(err)
		}
		opts = append(opts, wasmengine.WithModule(mod))
	}
	e, err := wasmengine.New(ctx, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(ctx)
	prefix := func(p string, scs []nodiff.Scenario) []nodiff.Scenario {
		out := make([]nodiff.Scenario, len(scs))
		for i, sc := range scs {
			out[i], out[i].Name = sc, p+sc.Name
		}
		return out
	}
	scs := append(append(append(nodiff.GateMix(), prefix("tripwire-", nodiff.Tripwire())...),
		prefix("refresh-", nodiff.Refresh())...), nodiff.Size{Connectors: 10, Agents: 10}.Listings()...)
	scs = append([]nodiff.Scenario{nodiff.GateFirst()}, scs...)
	for _, sc := range scs {
		b.Run("case="+sc.Name, func(b *testing.B) {
			cc.calls, cc.total = map[string]int{}, 0
			out, err := e.DecideJSON(ctx, nil, sc.Query)
			if got := nodiff.Outcome(out, err); got != sc.Want {
				b.Fatalf("%s: outcome %q, want %q", sc.Name, got, sc.Want)
			}
			calls := cc.total
			if os.Getenv("WASMCALLS_TOP") == sc.Name {
				b.Log(busiest(cc.calls, 40))
			}
			for b.Loop() {
				if _, err := e.DecideJSON(ctx, nil, sc.Query); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(calls), "wasm-calls/op")
			b.ReportMetric(float64(len(sc.Query)), "query-bytes")
		})
	}
}

// busiest lists the n functions called most often.
func busiest(calls map[string]int, n int) string {
	names := make([]string, 0, len(calls))
	for k := range calls {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return calls[names[i]] > calls[names[j]] || calls[names[i]] == calls[names[j]] && names[i] < names[j]
	})
	var b strings.Builder
	for _, k := range names[:min(n, len(names))] {
		fmt.Fprintf(&b, "\n%8d %s", calls[k], k)
	}
	return b.String()
}
