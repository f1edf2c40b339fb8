package nodiff_test

import (
	"context"
	"testing"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/internal/nodiff"
)

// fuzzSeeds are queries the generator makes from a fixed seed: a few episodes of every
// operation, so the fuzzer starts from every branch's neighbourhood.
func fuzzSeeds(ctx context.Context, p *pair) [][]byte {
	var out [][]byte
	for fi, op := range nodiff.Ops {
		g := nodiff.NewGen(p.cat, 1, uint64(fi))
		for range 4 {
			ep := g.Episode(op)
			for {
				q := ep.Query()
				out = append(out, q)
				res, err := p.wasm.DecideJSON(ctx, nil, q)
				var d *core.Decision
				if err == nil {
					d, _ = core.ParseDecision(res)
				}
				if !ep.Answer(d) {
					break
				}
			}
		}
	}
	return out
}

// FuzzEngines feeds arbitrary bytes to the three engines (on the synthetic catalog and on
// the embedded one) and demands the same decision, byte for byte, or the same error. Run it
// with: go test ./core/internal/nodiff -run '^$' -fuzz FuzzEngines -fuzztime 10m
func FuzzEngines(f *testing.F) {
	ctx := context.Background()
	ps := enginePairs(f)
	for _, q := range fuzzSeeds(ctx, ps[0]) {
		f.Add(q)
	}
	for _, s := range []string{
		``, `{}`, `[]`, `{"op":"status"}`, `{"op":"status","args":{},"x":set()}`,
		"{\"op\":\"check_url\",\"args\":{\"url\":\"\xff\"}}",
		`{"op":"grant","args":{"connector":"google","agent":"a\ud800","scopes":[]}}`,
		`{"op":"grant","args":{"connector":"google","agent":"a","agent":"b","scopes":[]}}`,
		`{"op":"get_access_token","args":{"provider":"google","agent":"a","scopes":["x"]},"attempt":2147483648}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		for _, p := range ps[:2] {
			out, err, div := nodiff.Diff(ctx, q, p.wasm, p.rego)
			if div == nil {
				div = nodiff.DiffWith(ctx, q, p.native, "rego", out, err)
			}
			if div != nil {
				div.Family = "catalog " + p.cat.Name
				t.Fatal(div)
			}
		}
	})
}
