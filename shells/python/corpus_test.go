package python_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/internal/testworld/engines"
	"github.com/grantwire/grantwire/internal/testworld/foreign"
)

// corpusReport is what the Python corpus run (tests/test_corpus.py) writes to report.json.
type corpusReport struct {
	Shell     string             `json:"shell"`
	Python    string             `json:"python"`
	Scenarios []foreign.Scenario `json:"scenarios"`
	Seen      map[string]int     `json:"seen"`
	Files     []struct {
		Name string `json:"name"`
		JSON string `json:"json"`
	} `json:"files"`
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
	if r.run, err = foreign.ReadQueries(filepath.Join(dir, "queries.jsonl")); err != nil {
		return err.Error()
	}
	return ""
}

// goQuestions are the Go memory host's questions on the whole corpus (native engine).
func goQuestions(t testing.TB) (map[string][]string, error) {
	return foreign.GoQuestions(t, engines.Native)
}

// TestPythonConformance runs the whole conformance corpus on the Python shell (pytest's
// tests/test_corpus.py: policy.wasm on wasmtime, the Python driver and host, a test world
// whose authorization server is the Go test worlds' one over HTTP) and reports each scenario
// as a subtest: the same scenarios as the Go shells, none left out.
func TestPythonConformance(t *testing.T) {
	r := runPytest(t)
	for _, c := range r.cases { // a scenario pytest could not even start has no report line
		if c.scenarioCase() && c.Error != nil {
			t.Errorf("pytest %s: %s\n%s", c.Name, c.Error.Message, c.Error.Text)
		}
	}
	foreign.Conformance(t, r.corpus.Shell+" (python "+r.corpus.Python+")", r.corpus.Scenarios)
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "family ") || strings.HasPrefix(line, "conformance on ") {
			t.Log(line)
		}
	}
}

// TestPythonReadsTheCorpusAsGo compares each corpus file as Python's YAML library (ruamel.yaml,
// YAML 1.2) read it with Go's reading, in canonical JSON.
func TestPythonReadsTheCorpusAsGo(t *testing.T) {
	r := runPytest(t)
	files := map[string]string{}
	for _, f := range r.corpus.Files {
		files[f.Name] = f.JSON
	}
	foreign.ReadsCorpus(t, "Python", files)
}

// TestPythonAsksWhatGoAsks demands that in every scenario the Python shell asked the core
// the questions the Go memory host asked on the same corpus: the same facts, byte for byte in
// canonical JSON, in the same order (the Python host answers every need as the Go host does),
// and that every query, decision and fact of the run validated against hostabi/schema.
func TestPythonAsksWhatGoAsks(t *testing.T) {
	r := runPytest(t)
	same, total := foreign.AsksWhatGoAsks(t, "Python", r.goAsked, r.run)
	if r.corpus.Seen["query"] != len(r.run.Queries) || r.corpus.Seen["fact:keyring.get"] == 0 {
		t.Errorf("the corpus run validated %d of its %d queries (%v)", r.corpus.Seen["query"], len(r.run.Queries), r.corpus.Seen)
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
	foreign.Decisions(t, "Python", r.run, engines.Native, engines.WasmCompiledOnce(t))
}

func seenLine(seen map[string]int) string {
	kinds := make([]string, 0, len(seen))
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, seen[k]))
	}
	return strings.Join(kinds, ", ")
}
