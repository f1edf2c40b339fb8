package conformance_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/engines"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the wasm engine")

// goldens are scenarios whose host-call transcripts are committed, so that a change of the
// protocol (a need, a fact, an effect, their order) shows in review.
var goldens = []string{
	"gate/granted-agent-gets-a-token",
	"gate/ungranted-agent-is-refused",
	"tripwire/still-mismatched-is-cleared-under-the-lock",
	"refresh/a-late-rotation-never-overwrites-a-reconnection",
	"forwarded/failure-writing-the-connection-restores-both",
	"activations/declared-scopes-come-second",
	"device/slow-down-twice",
	"connect/an-issuer-that-differs-is-refused-before-the-code-is-exchanged",
	"disconnect/disconnect-revokes-at-the-provider",
}

// transcript runs a scenario and renders every host call of every process.
func transcript(t *testing.T, shell conformance.Shell, s *conformance.Scenario) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (%s)\n# %s\n", s.ID(), hostabi.ModuleName, s.Behaviour)
	hooks := &conformance.Hooks{
		Step: func(i int, st conformance.Step) {
			if st.World != nil {
				fmt.Fprintf(&b, "\n--- step %d: world action\n", i)
				return
			}
			p := st.Process
			if p == "" {
				p = "A"
			}
			fmt.Fprintf(&b, "\n--- step %d: %s %s (process %s)\n", i, st.Op, st.Args, p)
		},
		Trace: func(process, line string) { b.WriteString(line + "\n") },
	}
	rep, err := conformance.RunScenario(context.Background(), t, shell, s, hooks)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Error(f)
	}
	return b.String()
}

// TestGoldenTranscripts compares the host calls of a few scenarios with testdata/*.golden,
// on both engines (which must agree byte for byte). Regenerate with -update.
func TestGoldenTranscripts(t *testing.T) {
	c, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	shells := []conformance.Shell{memshell.New("wasm", engines.Wasm), memshell.New("rego", engines.Rego)}
	for _, id := range goldens {
		s := c.Find(id)
		if s == nil {
			t.Fatalf("golden scenario %s is not in the corpus", id)
		}
		path := filepath.Join("testdata", strings.ReplaceAll(id, "/", "__")+".golden")
		t.Run(id, func(t *testing.T) {
			for i, sh := range shells {
				got := transcript(t, sh, s)
				if *update && i == 0 {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s: the host calls differ from %s (run with -update if the change is intended):\n%s",
						sh.Name(), path, firstDiff(string(want), got))
				}
			}
		})
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n want %s\n got  %s", i+1, wl, gl)
		}
	}
	return "(equal)"
}
