package python_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/canon"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

// corpusReport is what the Python corpus run (tests/test_corpus.py) writes to report.json.
type corpusReport struct {
	Shell     string `json:"shell"`
	Python    string `json:"python"`
	Scenarios []struct {
		ID        string   `json:"id"`
		Family    string   `json:"family"`
		Passed    bool     `json:"passed"`
		Failures  []string `json:"failures"`
		Exception *string  `json:"exception"`
		Note      string   `json:"note"`
	} `json:"scenarios"`
	Seen  map[string]int `json:"seen"`
	Files []struct {
		Name string `json:"name"`
		JSON string `json:"json"`
	} `json:"files"`
}

// pyQuery is one question the Python driver asked in the corpus run, with the decision the
// Python engine returned (both as the bytes Python sent and OPA wrote).
type pyQuery struct {
	Scenario string `json:"scenario"`
	DataID   int    `json:"data_id"`
	Query    string `json:"query"`
	Decision string `json:"decision"`
}

// readCorpus reads what the corpus run wrote into dir ("" when it is whole).
func (r *pytestRun) readCorpus(dir string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return fmt.Sprintf("the Python corpus run wrote no report: %v", err)
	}
	if err := json.Unmarshal(raw, &r.corpus); err != nil {
		return "report.json: " + err.Error()
	}
	f, err := os.Open(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	r.datas = map[int]json.RawMessage{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var l struct {
			pyQuery
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return "queries.jsonl: " + err.Error()
		}
		if l.Data != nil {
			r.datas[l.DataID] = l.Data
		} else {
			r.queries = append(r.queries, l.pyQuery)
		}
	}
	return ""
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
	c, err := canon.Append(nil, json.RawMessage(query))
	if err != nil {
		return dst, err
	}
	r.mu.Lock()
	*r.log = append(*r.log, string(c))
	r.mu.Unlock()
	return r.Engine.DecideJSON(ctx, dst, query)
}

// goQuestions runs the whole corpus on the Go memory host (native engine), recording per
// scenario every question it asks the core, in canonical JSON.
func goQuestions(t testing.TB) (map[string][]string, error) {
	ctx := context.Background()
	var log []string
	var mu sync.Mutex
	shell := memshell.New("native", func(ctx context.Context, data []byte) (core.Engine, error) {
		e, err := nativeengine.New(ctx, nativeengine.WithData(data))
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
			return nil, fmt.Errorf("%s on memhost/native: %w", s.ID(), err)
		}
		if len(rep.Failures) > 0 {
			return nil, fmt.Errorf("%s fails on memhost/native: %s", s.ID(), strings.Join(rep.Failures, "\n"))
		}
		out[s.ID()] = log
	}
	return out, nil
}

// TestPythonConformance runs the whole conformance corpus on the Python shell (pytest's
// tests/test_corpus.py: policy.wasm on wasmtime, the Python driver and host, a test world
// whose authorization server is the Go test worlds' one over HTTP) and reports each scenario
// as a subtest: the same scenarios as the Go shells, none left out.
func TestPythonConformance(t *testing.T) {
	r := runPytest(t)
	c, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range c.Scenarios() {
		want[s.ID()] = true
	}
	if len(r.corpus.Scenarios) == 0 {
		t.Fatal("the Python runner ran no scenario")
	}
	for _, cs := range r.cases { // a scenario that pytest could not even start has no report line
		if cs.scenarioCase() && cs.Error != nil {
			t.Errorf("pytest %s: %s\n%s", cs.Name, cs.Error.Message, cs.Error.Text)
		}
	}
	fam := map[string][2]int{}
	for _, s := range r.corpus.Scenarios {
		if !want[s.ID] {
			t.Errorf("the Python runner ran %s, which the Go corpus does not have", s.ID)
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
				t.Logf("known difference on %s: %s (%s)", r.corpus.Shell, *s.Exception, s.Note)
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
	for id := range want {
		t.Errorf("the Python runner did not run %s", id)
	}
	var families []string
	passed := 0
	for f, n := range fam {
		families = append(families, fmt.Sprintf("%s %d/%d", f, n[0], n[0]+n[1]))
		passed += n[0]
	}
	sort.Strings(families)
	t.Logf("conformance on %s (python %s): %d of %d scenarios passed (%s)", r.corpus.Shell, r.corpus.Python, passed,
		len(r.corpus.Scenarios), strings.Join(families, ", "))
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "family ") || strings.HasPrefix(line, "conformance on ") {
			t.Log(line)
		}
	}
}

// TestPythonReadsTheCorpusAsGo compares each corpus file as Python's YAML library (ruamel.yaml,
// YAML 1.2) read it with Go's reading (conformance.ToJSON), in canonical JSON.
func TestPythonReadsTheCorpusAsGo(t *testing.T) {
	r := runPytest(t)
	fsys := conformance.CorpusFS()
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range r.corpus.Files {
		seen[f.Name] = true
		data, err := fs.ReadFile(fsys, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		j, err := conformance.ToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		want, err := canon.Append(nil, json.RawMessage(j))
		if err != nil {
			t.Fatal(err)
		}
		got, err := canon.Append(nil, json.RawMessage(f.JSON))
		if err != nil {
			t.Fatalf("%s: Python's reading is not JSON: %v", f.Name, err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s: Python read the YAML differently from Go:\n%s", f.Name, firstDiff(string(want), string(got)))
		}
	}
	for _, n := range names {
		if n != "exceptions.yaml" && !seen[n] {
			t.Errorf("%s: not in the Python report", n)
		}
	}
}

// TestPythonAsksWhatGoAsks demands that in every scenario the Python shell asked the core
// the questions the Go memory host asked on the same corpus: the same facts, byte for byte in
// canonical JSON, in the same order (the Python host answers every need as the Go host does),
// and that every query, decision and fact of the run validated against hostabi/schema.
func TestPythonAsksWhatGoAsks(t *testing.T) {
	r := runPytest(t)
	py := map[string][]string{}
	for _, q := range r.queries {
		c, err := canon.Append(nil, json.RawMessage(q.Query))
		if err != nil {
			t.Fatalf("%s: a query that is not JSON: %v", q.Scenario, err)
		}
		py[q.Scenario] = append(py[q.Scenario], string(c))
	}
	same, total := 0, 0
	for _, id := range slices.Sorted(maps.Keys(r.goAsked)) {
		goQ, pyQ := r.goAsked[id], py[id]
		total += len(goQ)
		if len(goQ) != len(pyQ) {
			t.Errorf("%s: Python asked %d questions, Go %d", id, len(pyQ), len(goQ))
			continue
		}
		differs := false
		for i := range goQ {
			if goQ[i] != pyQ[i] {
				t.Errorf("%s: question %d differs:\n%s", id, i, firstDiff(goQ[i], pyQ[i]))
				differs = true
				break
			}
		}
		if !differs {
			same++
		}
	}
	if len(r.goAsked) == 0 || r.corpus.Seen["query"] != len(r.queries) || r.corpus.Seen["fact:keyring.get"] == 0 {
		t.Errorf("Go recorded %d scenarios; the corpus run validated %d queries of %d (%v)", len(r.goAsked), r.corpus.Seen["query"], len(r.queries), r.corpus.Seen)
	}
	t.Logf("%d of %d scenarios: Python asked the same %d questions as the Go host (recorded in %.1f s meanwhile), in the same order; validated against hostabi/schema: %s",
		same, len(r.goAsked), total, r.goElapsed.Seconds(), seenLine(r.corpus.Seen))
}

// TestPythonDecisionsMatchGoEngines replays every query the Python driver sent in the corpus
// run through the Go native and Wasm engines (built from the policy data Python set, which must
// be the data the Go runner builds): every decision must be byte-identical (canonical JSON) to
// what wasmtime returned.
func TestPythonDecisionsMatchGoEngines(t *testing.T) {
	r := runPytest(t)
	if len(r.queries) == 0 {
		t.Fatal("the Python runner recorded no query")
	}
	ctx := context.Background()
	engines, cache := map[int][]core.Engine{}, wazero.NewCompilationCache() // the policy compiled once for every catalog
	defer cache.Close(ctx)
	for id, data := range r.datas {
		w, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1), wasmengine.WithCompilationCache(cache))
		if err != nil {
			t.Fatal(err)
		}
		n, err := nativeengine.New(ctx, nativeengine.WithData(data))
		if err != nil {
			t.Fatal(err)
		}
		engines[id] = []core.Engine{n, w}
		t.Cleanup(func() { _ = w.Close(ctx); _ = n.Close(ctx) })
	}
	checked := map[int]bool{}
	start, mismatches := time.Now(), 0
	for _, q := range r.queries {
		e := engines[q.DataID]
		if e == nil {
			t.Fatalf("%s: a query of data %d, which was never recorded", q.Scenario, q.DataID)
		}
		if !checked[q.DataID] {
			checkData(t, q.Scenario, r.datas[q.DataID])
			checked[q.DataID] = true
		}
		py, err := canon.Append(nil, json.RawMessage(q.Decision))
		if err != nil {
			t.Fatalf("%s: the Python engine's decision is not JSON: %v", q.Scenario, err)
		}
		for _, eng := range e {
			got, err := eng.DecideJSON(ctx, nil, []byte(q.Query))
			if err != nil {
				t.Fatalf("%s: %s engine: %v on %s", q.Scenario, eng.Name(), err, q.Query)
			}
			if !bytes.Equal(got, py) {
				if mismatches++; mismatches <= 5 {
					t.Errorf("%s: the Go %s engine decided differently from wasmtime on\n %s\n go %s\n py %s", q.Scenario, eng.Name(), q.Query, got, py)
				}
			}
		}
	}
	if mismatches > 5 {
		t.Errorf("... %d mismatches in all", mismatches)
	}
	t.Logf("%d queries sent by the Python driver (%d catalogs) decided byte-identically by wasmtime and the Go native and wasm engines (replayed in %v)",
		len(r.queries), len(r.datas), time.Since(start).Round(time.Millisecond))
}

// checkData demands that the data Python set for a scenario is the data the Go runner builds
// for it: the embedded catalog patched with the scenario's catalog.
func checkData(t *testing.T, id string, data json.RawMessage) {
	t.Helper()
	c, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	s := c.Find(id)
	if s == nil {
		t.Fatalf("queries.jsonl names unknown scenario %q", id)
	}
	var w struct {
		Catalog json.RawMessage `json:"catalog"`
	}
	if err := json.Unmarshal(s.MergedWorld(), &w); err != nil {
		t.Fatal(err)
	}
	raw, err := conformance.MergePatch(conformance.BaseCatalog, w.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := canon.Append(nil, json.RawMessage(cat.Data()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := canon.Append(nil, data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s: Python set other policy data than the Go runner:\n%s", id, firstDiff(string(want), string(got)))
	}
}

func seenLine(seen map[string]int) string {
	kinds := make([]string, 0, len(seen))
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, seen[k]))
	}
	return strings.Join(kinds, ", ")
}

func firstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf(" go …%.200s\n py …%.200s", want[from:], got[from:])
}
