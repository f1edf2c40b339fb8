// Package foreign holds what the Go tests of a foreign shell's corpus run check (the Node
// shell's run.mjs, the Python shell's tests/corpus.py): every scenario reported as a subtest
// with the pass count per family, every corpus file read as Go reads it, every scenario's
// policy data the Go runner's, the same questions to the core as the Go memory host asked,
// and every decision the Go engines' byte for byte. The foreign runner writes a report and
// a file of JSON lines with the policy data of each catalog and every query it sent with the
// decision it got; these functions read and judge them.
//
// It imports conformance, memshell, catalog (through conformance), core and internal/jsonx;
// never an engine (the tests choose them).
package foreign

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

// Scenario is one scenario's outcome in a foreign runner's report.
type Scenario struct {
	ID        string   `json:"id"`
	Family    string   `json:"family"`
	Passed    bool     `json:"passed"`
	Failures  []string `json:"failures"`
	Exception *string  `json:"exception"`
	Note      string   `json:"note"`
}

// Query is one question a foreign driver asked the core, with the decision its engine
// returned (any JSON form: it is compared canonically).
type Query struct {
	Scenario string `json:"scenario"`
	DataID   int    `json:"data_id"`
	Query    string `json:"query"`
	Decision string `json:"decision"`
}

// Run is what a foreign runner recorded: its queries in order, and the policy data of each
// data_id.
type Run struct {
	Queries []Query
	Data    map[int]json.RawMessage
}

// ReadQueries reads a runner's JSON lines: {data_id, scenario, data} once per catalog, then
// {scenario, data_id, query, decision} per question.
func ReadQueries(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &Run{Data: map[int]json.RawMessage{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var l struct {
			Query
			DataID *int            `json:"data_id"`
			Data   json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if l.DataID == nil {
			return nil, fmt.Errorf("%s: a line without data_id: %.200s", path, sc.Bytes())
		}
		if l.Data != nil {
			r.Data[*l.DataID] = l.Data
		} else {
			l.Query.DataID = *l.DataID
			r.Queries = append(r.Queries, l.Query)
		}
	}
	return r, sc.Err()
}

// Conformance reports each scenario of a foreign run as a subtest (a known difference must
// fail there, which the runner has already turned into a pass) and logs the pass count of
// each family; the run must have every scenario of the corpus and no other.
func Conformance(t *testing.T, shell string, scenarios []Scenario) {
	t.Helper()
	c, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range c.Scenarios() {
		want[s.ID()] = true
	}
	if len(scenarios) == 0 {
		t.Fatalf("the %s runner ran no scenario", shell)
	}
	fam := map[string][2]int{}
	for _, s := range scenarios {
		if !want[s.ID] {
			t.Errorf("the %s runner ran %s, which the Go corpus does not have", shell, s.ID)
		}
		delete(want, s.ID)
		n := fam[s.Family]
		if s.Passed {
			n[0]++
		} else {
			n[1]++
		}
		fam[s.Family] = n
		t.Run(s.ID, func(t *testing.T) {
			if s.Exception != nil {
				t.Logf("known difference on %s: %s (%s)", shell, *s.Exception, s.Note)
			}
			if !s.Passed {
				for _, f := range s.Failures {
					t.Error(f)
				}
				if s.Note != "" {
					t.Error(s.Note)
				}
			}
		})
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		t.Errorf("the %s runner did not run %s", shell, id)
	}
	var families []string
	passed := 0
	for _, f := range slices.Sorted(maps.Keys(fam)) {
		families = append(families, fmt.Sprintf("%s %d/%d", f, fam[f][0], fam[f][0]+fam[f][1]))
		passed += fam[f][0]
	}
	t.Logf("conformance on %s: %d of %d scenarios passed (%s)", shell, passed, len(scenarios), strings.Join(families, ", "))
}

// ReadsCorpus compares each corpus file as the foreign runner's YAML library read it
// (files: name → that reading as JSON) with Go's reading (conformance.ToJSON), in canonical
// JSON; every file must be there.
func ReadsCorpus(t *testing.T, who string, files map[string]string) {
	t.Helper()
	corpus, err := conformance.CorpusJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(corpus)) {
		got, ok := files[name]
		if !ok {
			t.Errorf("%s: not in the %s report", name, who)
			continue
		}
		if msg := Differ(corpus[name], []byte(got)); msg != "" {
			t.Errorf("%s: %s read the YAML differently from Go: %s", name, who, msg)
		}
	}
}

// Differ compares two JSON texts canonically: "" when they are the same, else where they
// first differ (or why one is not JSON).
func Differ(want, got []byte) string {
	w, err := jsonx.Append(nil, json.RawMessage(want))
	if err != nil {
		return "go: " + err.Error()
	}
	g, err := jsonx.Append(nil, json.RawMessage(got))
	if err != nil {
		return "not JSON: " + err.Error()
	}
	if bytes.Equal(w, g) {
		return ""
	}
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("\n go    …%.200s\n other …%.200s", w[from:], g[from:])
}

// recorder is a Go engine that records the canonical form of every query it is asked.
type recorder struct {
	core.Engine
	mu  *sync.Mutex
	log *[]string
}

func (r *recorder) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	return core.DecideTyped(ctx, r, q)
}

func (r *recorder) DecideJSON(ctx context.Context, dst, query []byte) ([]byte, error) {
	c, err := jsonx.Append(nil, json.RawMessage(query))
	if err != nil {
		return dst, err
	}
	r.mu.Lock()
	*r.log = append(*r.log, string(c))
	r.mu.Unlock()
	return r.Engine.DecideJSON(ctx, dst, query)
}

// GoQuestions runs the whole corpus on the Go memory host with engines of factory, recording
// per scenario every question asked of the core, in canonical JSON. It calls no Fatal, so a
// test may run it in a goroutine of its own while the foreign runner runs.
func GoQuestions(t testing.TB, factory memshell.EngineFactory) (map[string][]string, error) {
	ctx := context.Background()
	var log []string
	var mu sync.Mutex
	shell := memshell.New("go", func(ctx context.Context, data []byte) (core.Engine, error) {
		e, err := factory(ctx, data)
		return &recorder{Engine: e, mu: &mu, log: &log}, err
	})
	defer shell.Close(ctx)
	c, err := conformance.DefaultCorpus()
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, s := range c.Scenarios() {
		log = nil
		rep, err := conformance.RunScenario(ctx, t, shell, s, nil)
		if err != nil {
			return nil, fmt.Errorf("%s on the Go memory host: %w", s.ID(), err)
		}
		if len(rep.Failures) > 0 {
			return nil, fmt.Errorf("%s fails on the Go memory host: %s", s.ID(), strings.Join(rep.Failures, "\n"))
		}
		out[s.ID()] = log
	}
	return out, nil
}

// AsksWhatGoAsks demands that in every scenario the foreign driver asked the core the
// questions the Go memory host asked (goAsked, from GoQuestions): the same facts, byte for
// byte in canonical JSON, in the same order. It returns how many scenarios and questions
// matched.
func AsksWhatGoAsks(t *testing.T, who string, goAsked map[string][]string, run *Run) (same, total int) {
	t.Helper()
	theirs := map[string][]string{}
	for _, q := range run.Queries {
		c, err := jsonx.Append(nil, json.RawMessage(q.Query))
		if err != nil {
			t.Fatalf("%s: a query that is not JSON: %v", q.Scenario, err)
		}
		theirs[q.Scenario] = append(theirs[q.Scenario], string(c))
	}
	if len(goAsked) == 0 {
		t.Fatal("the Go memory host recorded no scenario")
	}
	for _, id := range slices.Sorted(maps.Keys(goAsked)) {
		goQ, q := goAsked[id], theirs[id]
		total += len(goQ)
		if len(goQ) != len(q) {
			t.Errorf("%s: %s asked %d questions, Go %d", id, who, len(q), len(goQ))
			continue
		}
		i := 0
		for i < len(goQ) && goQ[i] == q[i] {
			i++
		}
		if i < len(goQ) {
			t.Errorf("%s: question %d differs: %s", id, i, Differ([]byte(goQ[i]), []byte(q[i])))
			continue
		}
		same++
	}
	return same, total
}

// Decisions replays every query of a foreign run through Go engines made by each factory
// from the policy data the run set (which must be the data the Go runner builds for the
// scenario: conformance's Scenario.Catalog): every decision must be byte-identical
// (canonical JSON) to the foreign engine's.
func Decisions(t *testing.T, who string, run *Run, factories ...memshell.EngineFactory) {
	t.Helper()
	if len(run.Queries) == 0 {
		t.Fatalf("the %s runner recorded no query", who)
	}
	c, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	engines := map[int][]core.Engine{}
	checked := map[int]bool{}
	start, mismatches := time.Now(), 0
	for _, q := range run.Queries {
		data, ok := run.Data[q.DataID]
		if !ok {
			t.Fatalf("%s: a query of data %d, which was never recorded", q.Scenario, q.DataID)
		}
		if !checked[q.DataID] {
			checked[q.DataID] = true
			s := c.Find(q.Scenario)
			if s == nil {
				t.Fatalf("the %s run names unknown scenario %q", who, q.Scenario)
			}
			cat, err := s.Catalog()
			if err != nil {
				t.Fatal(err)
			}
			if msg := Differ(cat.Data(), data); msg != "" {
				t.Errorf("%s: %s set other policy data than the Go runner: %s", q.Scenario, who, msg)
			}
			for _, f := range factories {
				e, err := f(ctx, data)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = e.Close(ctx) })
				engines[q.DataID] = append(engines[q.DataID], e)
			}
		}
		for _, e := range engines[q.DataID] {
			got, err := e.DecideJSON(ctx, nil, []byte(q.Query))
			if err != nil {
				t.Fatalf("%s: %s engine: %v on %s", q.Scenario, e.Name(), err, q.Query)
			}
			if msg := Differ(got, []byte(q.Decision)); msg != "" {
				if mismatches++; mismatches <= 5 {
					t.Errorf("%s: the Go %s engine decided differently from %s on\n %s%s", q.Scenario, e.Name(), who, q.Query, msg)
				}
			}
		}
	}
	if mismatches > 5 {
		t.Errorf("... %d mismatches in all", mismatches)
	}
	t.Logf("%d queries sent by the %s driver (%d catalogs) decided byte-identically by %d Go engines (replayed in %v)",
		len(run.Queries), who, len(run.Data), len(factories), time.Since(start).Round(time.Millisecond))
}
