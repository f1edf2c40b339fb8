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

	"github.com/grantwire/grantwire/core/internal/nodiff"
	"github.com/grantwire/grantwire/core/wasmengine"
)

// callCounter counts calls by function name while on.
type callCounter struct {
	on    bool
	depth int
	calls map[string]int
	total int
}

type ccl struct {
	c    *callCounter
	name string
}

func (l ccl) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	if l.c.on {
		l.c.calls[l.name]++
		l.c.total++
	}
}
func (l ccl) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}
func (l ccl) Abort(context.Context, api.Module, api.FunctionDefinition, error)    {}

// TestWasmCalls counts the Wasm function calls (OPA's runtime and the policy's rules,
// through a wazero function listener) that each benchmark scenario takes: a measure of
// the work a decision does that, unlike time, does not depend on the machine's load. Run
// it with WASMCALLS=1 (or WASMCALLS=<scenario> to list that scenario's busiest functions)
// and MOD=<policy.wasm> to measure another build of the policy.
func TestWasmCalls(t *testing.T) {
	if os.Getenv("WASMCALLS") == "" {
		t.Skip()
	}
	cc := &callCounter{calls: map[string]int{}}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), experimental.FunctionListenerFactoryFunc(func(d api.FunctionDefinition) experimental.FunctionListener {
		return ccl{c: cc, name: strings.TrimPrefix(d.DebugName(), "opa.wasm.")}
	}))
	opts := []wasmengine.Option{wasmengine.WithData(nodiff.Scaled(10).Data), wasmengine.WithPoolSize(1)}
	if m := os.Getenv("MOD"); m != "" {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, wasmengine.WithModule(b))
	}
	e, err := wasmengine.New(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	scs := append(append(append(nodiff.GateMix(), nodiff.Tripwire()...), nodiff.Refresh()...), nodiff.Size{10, 10}.Listings()...)
	total := 0
	for _, sc := range scs {
		cc.calls, cc.total = map[string]int{}, 0
		cc.on = true
		out, err := e.DecideJSON(ctx, nil, sc.Query)
		cc.on = false
		if got := nodiff.Outcome(out, err); got != sc.Want {
			t.Errorf("%s: %s", sc.Name, got)
		}
		total += cc.total
		fmt.Printf("%-14s %6d calls  (%d bytes in, %d out)\n", sc.Name, cc.total, len(sc.Query), len(out))
		if os.Getenv("WASMCALLS") == sc.Name {
			type kv struct {
				k string
				v int
			}
			var kvs []kv
			for k, v := range cc.calls {
				kvs = append(kvs, kv{k, v})
			}
			sort.Slice(kvs, func(i, j int) bool { return kvs[i].v > kvs[j].v })
			for _, x := range kvs[:min(40, len(kvs))] {
				fmt.Printf("    %6d %s\n", x.v, x.k)
			}
		}
	}
	fmt.Printf("total %d\n", total)
}
