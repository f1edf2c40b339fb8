package nodiff_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/internal/nodiff"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
)

var (
	seedFlag = flag.Uint64("seed", 0, "seed of the differential test (0: a fresh one, printed)")
	nFlag    = flag.Int("n", 0, "queries per operation (default 10000; 1000 with -short)")
	baseline = flag.String("baseline", "", "a policy.wasm (say, the previous commit's) whose decisions must not change either: for refactors of the policy")
)

// pair is the engines on one catalog.
type pair struct {
	cat                *nodiff.Catalog
	wasm, rego, native core.Engine
	base               core.Engine // the -baseline policy, or nil
}

var (
	pairsOnce sync.Once
	pairs     []*pair
	pairsErr  error
)

func embedded() *nodiff.Catalog {
	c, err := catalog.Load(nil)
	if err != nil {
		panic(err)
	}
	return nodiff.MustCatalog("embedded", c.Data())
}

// enginePairs builds, once per test binary, both engines on the synthetic catalog, on the
// embedded one and on a broken one (see pairOf for their shares of the episodes).
func enginePairs(t testing.TB) []*pair {
	t.Helper()
	pairsOnce.Do(func() {
		ctx := context.Background()
		for _, cat := range []*nodiff.Catalog{nodiff.Synthetic(), embedded(), nodiff.Broken()} {
			w, err := wasmengine.New(ctx, wasmengine.WithData(cat.Data))
			if err != nil {
				pairsErr = err
				return
			}
			r, err := regoengine.New(ctx, regoengine.WithData(cat.Data))
			if err != nil {
				pairsErr = err
				return
			}
			n, err := nativeengine.New(ctx, nativeengine.WithData(cat.Data))
			if err != nil {
				pairsErr = err
				return
			}
			p := &pair{cat: cat, wasm: w, rego: r, native: n}
			if *baseline != "" {
				mod, err := os.ReadFile(*baseline)
				if err != nil {
					pairsErr = err
					return
				}
				if p.base, err = wasmengine.New(ctx, wasmengine.WithModule(mod), wasmengine.WithData(cat.Data)); err != nil {
					pairsErr = err
					return
				}
			}
			pairs = append(pairs, p)
		}
	})
	if pairsErr != nil {
		t.Fatal(pairsErr)
	}
	return pairs
}

// pairOf spreads episodes over the catalogs: 70% synthetic, 25% embedded, 5% broken.
func pairOf(episode int) int {
	switch m := episode % 20; {
	case m < 14:
		return 0
	case m < 19:
		return 1
	}
	return 2
}

func seed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (reproduce with: go test ./core/internal/nodiff -run %s -args -seed=%d)", s, t.Name(), s)
	return s
}

func perOp() int {
	switch {
	case *nFlag > 0:
		return *nFlag
	case testing.Short():
		return 1000
	}
	return 10000
}

// TestNoDiff runs random episodes of every operation against the three engines (wasm, rego,
// native), on three catalogs, until each operation has been decided perOp() times, and
// demands byte-identical decisions and identical errors for every query.
func TestNoDiff(t *testing.T) {
	ps := enginePairs(t)
	s := seed(t)
	n := perOp()
	ctx := context.Background()
	start := time.Now()
	for fi, op := range nodiff.Ops {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			gens := make([]*nodiff.Gen, len(ps))
			for i, p := range ps {
				gens[i] = nodiff.NewGen(p.cat, s, uint64(fi)<<8|uint64(i))
			}
			tally := nodiff.Tally{}
			queries, failures := 0, 0
			for e := 0; queries < n; e++ {
				pi := pairOf(e)
				p, g := ps[pi], gens[pi]
				ep := g.Episode(op)
				for {
					q := ep.Query()
					out, err, div := nodiff.Diff(ctx, q, p.wasm, p.rego)
					if div == nil { // wasm's answer is rego's: the native engine must give it too
						div = nodiff.DiffWith(ctx, q, p.native, "rego", out, err)
					}
					if p.base != nil && div == nil {
						if _, _, div = nodiff.Diff(ctx, q, p.wasm, p.base); div != nil {
							div.Names[1] = "baseline"
						}
					}
					queries++
					if div != nil {
						div.Family = fmt.Sprintf("%s, catalog %s, episode %d", op, p.cat.Name, e)
						t.Error(div)
						if failures++; failures >= 5 {
							t.Fatalf("too many divergences; seed %d", s)
						}
					}
					tally[nodiff.Outcome(out, err)]++
					var d *core.Decision
					if err == nil {
						var perr error
						if d, perr = core.ParseDecision(out); perr != nil {
							t.Errorf("the policy's decision does not parse: %v\n query %s\n decision %s", perr, q, out)
						}
					}
					if !ep.Answer(d) {
						break
					}
				}
			}
			t.Logf("%d queries, outcomes:\n%s", queries, tally)
		})
	}
	t.Cleanup(func() { t.Logf("%d operations × %d queries in %v", len(nodiff.Ops), n, time.Since(start)) })
}
