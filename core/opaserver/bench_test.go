package opaserver_test

import (
	"context"
	"testing"

	"github.com/grantwire/grantwire/core/opaserver"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
	"github.com/grantwire/grantwire/internal/testworld/opatest"
)

// BenchmarkGate: the gate's decisions (BenchmarkGate of internal/testworld/nodiff) asked of an
// OPA server on 127.0.0.1 (the pinned OPA evaluating the Rego of the --rego-only bundle):
// what one question costs a client of a fleet, round trip included.
func BenchmarkGate(b *testing.B) {
	ctx := context.Background()
	size := nodiff.Sizes[0]
	url, _ := opatest.Serve(b, size.Catalog().Data)
	e, err := opaserver.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(ctx)
	for _, tc := range []struct {
		name string
		scs  []nodiff.Scenario
	}{{"allow", []nodiff.Scenario{nodiff.GateAllow()}}, {"mix", nodiff.GateMix()}} {
		b.Run("case="+tc.name+"/size="+size.Name()+"/engine=opa-server", func(b *testing.B) {
			for _, sc := range tc.scs {
				out, err := e.DecideJSON(ctx, nil, sc.Query)
				if got := nodiff.Outcome(out, err); got != sc.Want {
					b.Fatalf("%s: outcome %q, want %q", sc.Name, got, sc.Want)
				}
			}
			buf := make([]byte, 0, 1<<16)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if buf, err = e.DecideJSON(ctx, buf[:0], tc.scs[i%len(tc.scs)].Query); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
