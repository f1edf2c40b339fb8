package nodiff_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
)

var writeSeeds = flag.Bool("write-fuzz-seeds", false, "rewrite the generated seeds of testdata/fuzz/FuzzEngines (files named gen-*)")

// episodes runs episodes of every operation on a set's reference engine and calls visit
// with each query and its outcome.
func episodes(ctx context.Context, set *engineSet, seed uint64, perOp int, visit func(op string, q []byte, outcome string)) {
	for fi, op := range nodiff.Ops {
		g := set.gen(seed, uint64(fi))
		for range perOp {
			ep := g.Episode(op)
			for {
				q := ep.Query()
				res, err := set.ref().DecideJSON(ctx, nil, q)
				visit(op, q, nodiff.Outcome(res, err))
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
}

// FuzzEngines feeds arbitrary bytes to every engine (on the synthetic catalog, the
// embedded one and the hostile one) and demands the same decision, byte for byte, or the
// same error. Its seeds are queries of the generator (a few episodes of every operation at
// each run, and testdata/fuzz/FuzzEngines: the smallest query per operation and outcome, written by
// -write-fuzz-seeds, beside what the fuzzer found). Run it with:
//
//	go test ./internal/testworld/nodiff -run '^$' -fuzz FuzzEngines -fuzztime 10m
func FuzzEngines(f *testing.F) {
	ctx := context.Background()
	sets := engineSets(f)
	episodes(ctx, sets[0], 1, 2, func(_ string, q []byte, _ string) { f.Add(q) })
	for _, s := range []string{
		``, `{}`, `[]`, `{"op":"status"}`, `{"op":"status","args":{},"x":set()}`,
		"{\"op\":\"agent_id\",\"args\":{\"source\":\"\xff\"}}",
		`{"op":"grant","args":{"connector":"google","agent":"builtin:chat\ud800","scopes":[]}}`,
		`{"op":"grant","args":{"connector":"google","agent":"builtin:chat","agent":"builtin:code","scopes":[]}}`,
		`{"op":"get_access_token","args":{"provider":"google","agent":"builtin:chat","scopes":["x"]},"attempt":2147483648}`,
		`{"op":"get_access_token","args":{"provider":"google","agent":"builtin:chat","scopes":[]},"facts":{"conn":{"found":true,"version":"v","json":{"connected_at":{"$number":"1.5e3"},"refresh_token":{"$ref":"conn#refresh_token","digest":"sha256:1"},"scopes":[]}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		for _, set := range sets[:3] {
			if _, _, div := nodiff.Diff(ctx, q, set.engines...); div != nil {
				div.Family = "catalog " + set.cat.Name
				t.Fatal(div)
			}
		}
	})
}

// TestWriteFuzzSeeds rewrites the generated seeds of FuzzEngines with -write-fuzz-seeds:
// from a fixed seed, the smallest query of every operation and outcome on the synthetic
// catalog (the fuzzer's own finds, files not named gen-*, are kept).
func TestWriteFuzzSeeds(t *testing.T) {
	if !*writeSeeds {
		t.Skip("run with -write-fuzz-seeds to rewrite testdata/fuzz/FuzzEngines/gen-*")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzEngines")
	old, _ := filepath.Glob(filepath.Join(dir, "gen-*"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	smallest := map[string][]byte{}
	episodes(context.Background(), engineSets(t)[0], 1, 200, func(op string, q []byte, outcome string) {
		k := op + " " + outcome
		if old, ok := smallest[k]; !strings.HasPrefix(outcome, "error") && (!ok || len(q) < len(old)) {
			smallest[k] = q
		}
	})
	written := 0
	for k, q := range smallest {
		sum := sha256.Sum256(q)
		op, _, _ := strings.Cut(k, " ")
		name := filepath.Join(dir, "gen-"+op+"-"+hex.EncodeToString(sum[:6]))
		if err := os.WriteFile(name, []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", q)), 0o644); err != nil {
			t.Fatal(err)
		}
		written++
	}
	t.Logf("wrote %d seeds", written)
}
