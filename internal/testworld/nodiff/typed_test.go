package nodiff_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// TestTypedDecision: the native engine's Decide, which builds the *core.Decision from the
// policy's result value without its JSON text, gives exactly what core.ParseDecision gives
// for DecideJSON's bytes of the same query (or the same error), over random episodes of
// every operation on the four catalogs. The query is the generator's, decoded into a
// core.Query (those that do not decode are not typed queries: skipped) and encoded again,
// so that both paths answer the same question.
func TestTypedDecision(t *testing.T) {
	ss := engineSets(t)
	s := seed(t)
	ctx := context.Background()
	native := len(engineMakers) - 1
	if engineMakers[native].name != "native" {
		t.Fatal("the native engine is not the last of engineMakers")
	}
	per := testenv.Share(400, 4) // make test: 100 per operation on the fixed seed; make soak: 400
	if testing.Short() {
		per = 100
	}
	statuses := map[string]int{}
	for fi, op := range nodiff.Ops {
		gens := make([]*nodiff.Gen, len(ss))
		for i, set := range ss {
			gens[i] = set.gen(s, uint64(fi)<<8|uint64(i)|1<<40)
		}
		compared := 0
		for e := 0; compared < per; e++ {
			si := setOf(e)
			set, g := ss[si], gens[si]
			eng := set.engines[native]
			ep := g.Episode(op)
			for {
				var q core.Query
				if err := json.Unmarshal(ep.Query(), &q); err != nil {
					if !ep.Answer(nil) {
						break
					}
					continue
				}
				raw, err := json.Marshal(&q)
				if err != nil {
					t.Fatal(err)
				}
				out, jerr := eng.DecideJSON(ctx, nil, raw)
				var want *core.Decision
				if jerr == nil {
					if want, jerr = core.ParseDecision(out); jerr != nil {
						t.Fatalf("the policy's decision does not parse: %v\n%s", jerr, out)
					}
				}
				got, terr := eng.Decide(ctx, &q)
				compared++
				switch {
				case (jerr == nil) != (terr == nil) || (jerr != nil && jerr.Error() != terr.Error()):
					t.Fatalf("%s, catalog %s: typed error %v, JSON error %v\n query %s", op, set.cat.Name, terr, jerr, raw)
				case !reflect.DeepEqual(got, want):
					t.Fatalf("%s, catalog %s: typed decision\n %#v\nis not ParseDecision's\n %#v\n query %s\n decision %s", op, set.cat.Name, got, want, raw, out)
				}
				if want != nil {
					statuses[want.Status]++
					if want.Error != nil {
						statuses["error"]++
					}
					if len(want.Effects) > 0 {
						statuses["effects"]++
					}
				}
				if !ep.Answer(want) {
					break
				}
			}
		}
	}
	t.Logf("compared: %v", statuses)
	for _, k := range []string{core.StatusNeed, core.StatusDone, "error", "effects"} {
		if statuses[k] == 0 {
			t.Errorf("no decision with %s was compared: the test does not cover it", k)
		}
	}
}
