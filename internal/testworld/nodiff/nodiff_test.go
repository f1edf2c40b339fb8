package nodiff_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

var (
	seedFlag = flag.Uint64("seed", 0, "seed of the differential test (0: a fixed one in make test, a fresh one with GRANTWIRE_SOAK=1; printed)")
	nFlag    = flag.Int("n", 0, "queries per operation (default 10000 with GRANTWIRE_SOAK=1, fewer for the costly operations, a tenth of that without; 1000 with -short)")
	baseline = flag.String("baseline", "", "a policy.wasm (say, the previous commit's) whose decisions must not change either: for refactors of the policy")
)

// engineMakers are the engines the differential tests compare, by name. The first is the
// reference: every other must give the same bytes for every query (the Go gate and the
// coverage test use the first).
var engineMakers = []struct {
	name string
	new  func(ctx context.Context, data []byte) (core.Engine, error)
}{
	{"wasm", func(ctx context.Context, data []byte) (core.Engine, error) {
		return wasmengine.New(ctx, wasmengine.WithData(data))
	}},
	{"rego", func(ctx context.Context, data []byte) (core.Engine, error) {
		return regoengine.New(ctx, regoengine.WithData(data))
	}},
	{"native", func(ctx context.Context, data []byte) (core.Engine, error) {
		return nativeengine.New(ctx, nativeengine.WithData(data))
	}},
}

// engineSet is every engine on one catalog.
type engineSet struct {
	cat     *nodiff.Catalog
	engines []core.Engine // in the order of engineMakers
	base    core.Engine   // the -baseline policy, or nil
}

// ref is the reference engine.
func (s *engineSet) ref() core.Engine { return s.engines[0] }

// gen returns a generator on the set's catalog that prefetches as a driver does.
func (s *engineSet) gen(seed, stream uint64) *nodiff.Gen {
	g := nodiff.NewGen(s.cat, seed, stream)
	g.Manifest = s.ref().Manifest()
	return g
}

var (
	setsOnce sync.Once
	sets     []*engineSet
	setsErr  error
)

func embedded() *nodiff.Catalog {
	c, err := catalog.Load(nil)
	if err != nil {
		panic(err)
	}
	return nodiff.MustCatalog("embedded", c.Data())
}

// engineSets builds, once per test binary, every engine on the synthetic catalog, the
// embedded one, the hostile one and the broken one (see setOf for their shares of the
// episodes).
func engineSets(t testing.TB) []*engineSet {
	t.Helper()
	setsOnce.Do(func() {
		ctx := context.Background()
		for _, cat := range []*nodiff.Catalog{nodiff.Synthetic(), embedded(), nodiff.Hostile(), nodiff.Broken()} {
			s := &engineSet{cat: cat}
			for _, m := range engineMakers {
				e, err := m.new(ctx, cat.Data)
				if err != nil {
					setsErr = fmt.Errorf("%s engine on catalog %s: %w", m.name, cat.Name, err)
					return
				}
				s.engines = append(s.engines, e)
			}
			if *baseline != "" {
				mod, err := os.ReadFile(*baseline)
				if err != nil {
					setsErr = err
					return
				}
				if s.base, err = wasmengine.New(ctx, wasmengine.WithModule(mod), wasmengine.WithData(cat.Data)); err != nil {
					setsErr = err
					return
				}
			}
			sets = append(sets, s)
		}
	})
	if setsErr != nil {
		t.Fatal(setsErr)
	}
	return sets
}

// setOf spreads episodes over the catalogs: 65% synthetic, 20% embedded, 10% hostile,
// 5% broken.
func setOf(episode int) int {
	switch m := episode % 20; {
	case m < 13:
		return 0
	case m < 17:
		return 1
	case m < 19:
		return 2
	}
	return 3
}

// fixedSeed is the differential tests' seed in make test (testenv.Seed): the same inputs
// every run; make soak (GRANTWIRE_SOAK=1) draws a fresh one, -seed gives one.
const fixedSeed = 20261202

func seed(t *testing.T) uint64 {
	if s := *seedFlag; s != 0 {
		t.Logf("seed %d (-seed); reproduce with: go test ./internal/testworld/nodiff -run %s -args -seed=%d", s, t.Name(), s)
		return s
	}
	return testenv.Seed(t, fixedSeed, "go test ./internal/testworld/nodiff -run "+t.Name()+" -args -seed=%d")
}

// costly are the operations whose queries cost the most to decide three times over
// (listings whose facts are whole ledgers and every provider's slots, the catalog's
// validation, mcp_auth's long discovery episodes, connect's authorizations): in full mode
// they run fewer queries, so that the package stays within its share of the CI budget
// (`make test`, 2 cores). Every other operation, the gate paths among them
// (get_access_token, credential, launch, mcp_token), runs 10,000.
var costly = map[string]int{
	"connections": 2500, "status": 2500, "connector_view": 2500, "validate_catalog": 2500,
	"mcp_auth": 4000, "connect": 5000,
}

// share is the part of the full run that make test decides (testenv.Share): the same
// checks on a tenth of the queries, on a fixed seed; make soak (GRANTWIRE_SOAK=1) decides
// them all on a fresh one.
const share = 10

// perOp is how many queries of op the differential test decides: -n, else 1,000 with
// -short, else 10,000 (fewer for the costly operations) under make soak and a tenth of
// that in make test.
func perOp(op string) int {
	switch {
	case *nFlag > 0:
		return *nFlag
	case testing.Short():
		return 1000
	}
	if n, ok := costly[op]; ok {
		return testenv.Share(n, share)
	}
	return testenv.Share(10000, share)
}

// TestOpsMatchManifest: the generator knows every operation the policy publishes, and
// no other.
func TestOpsMatchManifest(t *testing.T) {
	for _, s := range engineSets(t)[:1] {
		var ops []string
		for op := range s.ref().Manifest().Ops {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		mine := slices.Clone(nodiff.Ops)
		sort.Strings(mine)
		if !slices.Equal(ops, mine) {
			t.Fatalf("the manifest's operations %v are not the generator's %v", ops, mine)
		}
	}
}

// TestNoDiff runs random episodes of every operation against every engine, on four
// catalogs, until each operation has been decided perOp(op) times, and demands
// byte-identical decisions and identical errors for every query. Every query must pass
// core.CheckQuery: the generator speaks the host ABI, it does not probe the boundary
// (FuzzEngines does).
func TestNoDiff(t *testing.T) {
	ss := engineSets(t)
	s := seed(t)
	ctx := context.Background()
	start := time.Now()
	total := 0
	for fi, op := range nodiff.Ops {
		n := perOp(op)
		total += n
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			gens := make([]*nodiff.Gen, len(ss))
			for i, set := range ss {
				gens[i] = set.gen(s, uint64(fi)<<8|uint64(i))
			}
			tally := nodiff.Tally{}
			queries, failures := 0, 0
			// validate_catalog decides on the catalog, which no query can vary: its queries
			// differ only in what every operation shares (arguments, host failures, ledger
			// facts, attempts), tested by every other operation, and each costs a whole
			// validation of the catalog. Each distinct one (by JSON value) is decided once
			// per catalog.
			memo := map[string]nodiff.Memo{}
			decided := 0
			for e := 0; queries < n; e++ {
				si := setOf(e)
				set, g := ss[si], gens[si]
				ep := g.Episode(op)
				for {
					q := ep.Query()
					if err := core.CheckQuery(q); err != nil {
						t.Fatalf("the generator made a query the engines refuse: %v\n%s", err, q)
					}
					var out []byte
					var err error
					var div *nodiff.Divergence
					key := ""
					if op == "validate_catalog" {
						key = set.cat.Name + "\x00" + nodiff.Canonical(q)
					}
					if m, ok := memo[key]; ok && key != "" {
						out, err = m.Out, m.Err
					} else {
						out, err, div = nodiff.Diff(ctx, q, set.engines...)
						decided++
						if key != "" && div == nil {
							memo[key] = nodiff.Memo{Out: out, Err: err}
						}
					}
					if set.base != nil && div == nil {
						if _, _, div = nodiff.Diff(ctx, q, set.ref(), set.base); div != nil {
							div.Names[1] = "baseline"
						}
					}
					queries++
					if div != nil {
						if failures < 2 {
							if min, mdiv := nodiff.Minimise(ctx, q, set.engines...); mdiv != nil {
								div.Note = fmt.Sprintf("minimised: %s\n %s: %s (err %v)\n %s: %s (err %v)", min,
									mdiv.Names[0], mdiv.Outs[0], mdiv.Errs[0], mdiv.Names[1], mdiv.Outs[1], mdiv.Errs[1])
							}
						}
						div.Family = fmt.Sprintf("%s, catalog %s, episode %d", op, set.cat.Name, e)
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
			t.Logf("%d queries (%d decided), outcomes:\n%s", queries, decided, tally)
		})
	}
	t.Cleanup(func() { t.Logf("%d operations, %d queries in %v", len(nodiff.Ops), total, time.Since(start)) })
}
