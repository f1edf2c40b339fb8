package conformance_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/internal/fixes"
	"github.com/grantwire/grantwire/internal/testworld/engines"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

// TestEveryCorpusFixIsKnown runs the corpus and requires every fix its outcomes carry
// (an error's fix, a command a result's warning names) to be of a kind internal/fixes
// lists, which cmd/grantwire's TestEveryFixRuns runs with the binary (issue 10, item 10).
func TestEveryCorpusFixIsKnown(t *testing.T) {
	c, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	sh := memshell.New("wasm", engines.Wasm)
	defer sh.Close(context.Background())
	seen := map[string]string{} // fix → scenario
	for _, s := range c.Scenarios() {
		rep, err := conformance.RunScenario(context.Background(), t, sh, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range rep.Steps {
			switch {
			case o == nil:
			case o.Error != nil:
				if o.Error.Fix != "" {
					seen[o.Error.Fix] = s.ID()
				}
				for _, f := range fixes.Commands(o.Error.Message) {
					seen[f] = s.ID()
				}
			default:
				var r struct {
					Warnings []string `json:"warnings"`
				}
				_ = json.Unmarshal(o.Result, &r)
				for _, w := range r.Warnings {
					for _, f := range fixes.Commands(w) {
						seen[f] = s.ID()
					}
				}
			}
		}
	}
	kinds := map[string]int{}
	var list []string
	for f := range seen {
		list = append(list, f)
	}
	sort.Strings(list)
	for _, f := range list {
		k, ok := fixes.Match(f)
		if !ok {
			t.Errorf("%s prints a fix of no kind internal/fixes lists (add the kind and a run to cmd/grantwire's TestEveryFixRuns): %s", seen[f], f)
			continue
		}
		kinds[k.Name]++
	}
	if len(list) < 20 {
		t.Errorf("the corpus produced only %d distinct fixes: the collection is broken", len(list))
	}
	t.Logf("%d distinct fixes in the corpus, by kind: %v", len(list), kinds)
}
