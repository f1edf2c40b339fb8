package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/canon"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

// requireNode is set by `make test` (scripts/test.sh): there a missing Node fails the test
// instead of skipping it.
const requireNode = "GRANTWIRE_REQUIRE_NODE"

type report struct {
	Shell     string   `json:"shell"`
	Node      string   `json:"node"`
	MS        float64  `json:"ms"`
	Checks    []string `json:"checks"`
	Scenarios []struct {
		ID        string   `json:"id"`
		Family    string   `json:"family"`
		Passed    bool     `json:"passed"`
		Failures  []string `json:"failures"`
		Exception *string  `json:"exception"`
		Note      string   `json:"note"`
	} `json:"scenarios"`
	Files []struct {
		Name      string `json:"name"`
		Canonical string `json:"canonical"`
	} `json:"files"`
}

// nodeRun is one run of run.mjs on the whole corpus, shared by the tests of this package.
type nodeRun struct {
	report  report
	queries string // path of the JSON lines of recorded queries
	stdout  string
	elapsed time.Duration
}

var (
	cached   *nodeRun
	tempDirs []string
	servers  []*http.Server
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range servers {
		_ = s.Close()
	}
	for _, d := range tempDirs {
		_ = os.RemoveAll(d)
	}
	os.Exit(code)
}

// startWorlds serves the control API of the test worlds' authorization server on
// 127.0.0.1 for the Node runner (its world per scenario, over real HTTP).
func startWorlds(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: authserver.NewWorlds(), ReadHeaderTimeout: 10 * time.Second}
	servers = append(servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String()
}

func runNode(t *testing.T) *nodeRun {
	t.Helper()
	if cached != nil {
		return cached
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv(requireNode) == "1" {
			t.Fatalf("%s=1 but node is not on PATH: install Node.js 20 or later (the foreign shell's conformance run needs it)", requireNode)
		}
		t.Skipf("node is not on PATH: the foreign shell is not tested. Install Node.js 20+, then run "+
			"`%s=1 go test ./shells/wasm/node` (or `cd shells/wasm/node && npm ci && node run.mjs`)", requireNode)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	if m := regexp.MustCompile(`^v(\d+)\.`).FindSubmatch(out); m == nil {
		t.Fatalf("node --version printed %q", out)
	} else if major, _ := strconv.Atoi(string(m[1])); major < 20 {
		t.Fatalf("node %s is too old: the foreign shell needs Node.js 20 or later", bytes.TrimSpace(out))
	}
	if _, err := os.Stat("node_modules/@open-policy-agent/opa-wasm/package.json"); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("node_modules is missing and npm is not on PATH: run `npm ci` in shells/wasm/node")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, b)
		}
		t.Log("installed the Node shell's packages with npm ci (package-lock.json)")
	}
	// One directory for the whole package run (a test's TempDir goes with that test).
	dir, err := os.MkdirTemp("", "grantwire-node-")
	if err != nil {
		t.Fatal(err)
	}
	tempDirs = append(tempDirs, dir)
	r := &nodeRun{queries: filepath.Join(dir, "queries.jsonl")}
	rep := filepath.Join(dir, "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run.mjs", "--quiet", "--authserver", startWorlds(t), "--report", rep, "--queries", r.queries)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	r.elapsed = time.Since(start)
	r.stdout = stdout.String()
	// Exit 1 means failing scenarios (reported below, one subtest each); anything else is a
	// runner that could not run.
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
		t.Fatalf("node run.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	raw, err := os.ReadFile(rep)
	if err != nil {
		t.Fatalf("node run.mjs wrote no report: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(raw, &r.report); err != nil {
		t.Fatalf("report: %v", err)
	}
	cached = r
	return r
}

// TestNodeConformance runs the whole corpus on Node and reports each scenario as a subtest:
// the same scenarios as the Go shells, none left out.
func TestNodeConformance(t *testing.T) {
	r := runNode(t)
	c, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range c.Scenarios() {
		want[s.ID()] = true
	}
	if len(r.report.Scenarios) == 0 {
		t.Fatal("the Node runner ran no scenario")
	}
	type count struct{ passed, failed int }
	fam := map[string]*count{}
	// The runner's own checks: stored JSON read as the Go host reads it
	// (hostabi/testdata/stored-json.json), and the kinds no scenario uses.
	for _, f := range r.report.Checks {
		t.Error(f)
	}
	for _, s := range r.report.Scenarios {
		if !want[s.ID] {
			t.Errorf("the Node runner ran %s, which the Go corpus does not have", s.ID)
		}
		delete(want, s.ID)
		if fam[s.Family] == nil {
			fam[s.Family] = &count{}
		}
		if s.Passed {
			fam[s.Family].passed++
		} else {
			fam[s.Family].failed++
		}
		t.Run(s.ID, func(t *testing.T) {
			if s.Exception != nil {
				t.Logf("known difference on %s: %s (%s)", r.report.Shell, *s.Exception, s.Note)
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
		t.Errorf("the Node runner did not run %s", id)
	}
	var families []string
	passed := 0
	for f, n := range fam {
		families = append(families, fmt.Sprintf("%s %d/%d", f, n.passed, n.passed+n.failed))
		passed += n.passed
	}
	sort.Strings(families)
	t.Logf("conformance on %s (node %s): %d of %d scenarios passed in %.2f s (%s)",
		r.report.Shell, r.report.Node, passed, len(r.report.Scenarios), r.report.MS/1000, strings.Join(families, ", "))
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.HasPrefix(line, "family ") {
			t.Log(line)
		}
	}
}

// TestNodeReadsTheCorpusAsGo compares each corpus file as Node's YAML library read it with
// Go's reading (conformance.ToJSON), in canonical JSON.
func TestNodeReadsTheCorpusAsGo(t *testing.T) {
	r := runNode(t)
	fsys := conformance.CorpusFS()
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range r.report.Files {
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
		if string(want) != f.Canonical {
			t.Errorf("%s: Node read the YAML differently from Go:\n%s", f.Name, firstDiff(string(want), f.Canonical))
		}
	}
	for _, n := range names {
		if n != "exceptions.yaml" && !seen[n] {
			t.Errorf("%s: not in the Node report", n)
		}
	}
}

// TestNodeDecisionsMatchGoEngines replays the queries the Node driver sent during the
// corpus run through both Go engines: every decision must be byte-identical (canonical
// JSON) to what the npm loader returned. All of them are replayed (about 540 queries, well
// under a second on both engines).
func TestNodeDecisionsMatchGoEngines(t *testing.T) {
	r := runNode(t)
	f, err := os.Open(r.queries)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type line struct {
		DataID   *int            `json:"data_id"`
		Data     json.RawMessage `json:"data"`
		Scenario string          `json:"scenario"`
		Query    string          `json:"query"`
		Decision string          `json:"decision"`
	}
	ctx := context.Background()
	type engines struct{ wasm, rego core.Engine }
	byData := map[int]*engines{}
	var queries []line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("queries.jsonl: %v", err)
		}
		if l.DataID == nil {
			t.Fatalf("queries.jsonl: a line without data_id: %.200s", sc.Bytes())
		}
		if l.Data != nil {
			checkData(t, l.Scenario, l.Data)
			w, err := wasmengine.New(ctx, wasmengine.WithData(l.Data), wasmengine.WithPoolSize(1))
			if err != nil {
				t.Fatal(err)
			}
			rg, err := regoengine.New(ctx, regoengine.WithData(l.Data))
			if err != nil {
				t.Fatal(err)
			}
			byData[*l.DataID] = &engines{w, rg}
			t.Cleanup(func() { _ = w.Close(ctx); _ = rg.Close(ctx) })
			continue
		}
		queries = append(queries, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(queries) == 0 {
		t.Fatal("the Node runner recorded no query")
	}
	start := time.Now()
	mismatches := 0
	for i, q := range queries {
		e := byData[*q.DataID]
		if e == nil {
			t.Fatalf("query %d names data %d, which was never recorded", i, *q.DataID)
		}
		for _, eng := range []core.Engine{e.wasm, e.rego} {
			got, err := eng.DecideJSON(ctx, nil, []byte(q.Query))
			if err != nil {
				t.Fatalf("%s: %s engine: %v on %s", q.Scenario, eng.Name(), err, q.Query)
			}
			if string(got) != q.Decision {
				mismatches++
				if mismatches <= 5 {
					t.Errorf("%s: the %s engine decided differently from Node's loader on\n %s\n go   %s\n node %s",
						q.Scenario, eng.Name(), q.Query, got, q.Decision)
				}
			}
		}
	}
	if mismatches > 5 {
		t.Errorf("... %d mismatches in all", mismatches)
	}
	t.Logf("%d queries sent by the Node driver (%d catalogs) replayed on wasm and rego in %v",
		len(queries), len(byData), time.Since(start).Round(time.Millisecond))
}

// recorder is a Go engine that records the canonical form of every query it is asked.
type recorder struct {
	core.Engine
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
	*r.log = append(*r.log, string(c))
	return r.Engine.DecideJSON(ctx, dst, query)
}

// TestNodeAsksWhatGoAsks runs the corpus on the Go memhost shell too, recording every
// query, and demands that in every scenario the Node shell asked the core the same
// questions, with the same facts, in the same order: the JavaScript host answers every need
// as the Go host does (canonical JSON, so only key order and escaping may differ).
func TestNodeAsksWhatGoAsks(t *testing.T) {
	r := runNode(t)
	node := map[string][]string{}
	f, err := os.Open(r.queries)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var l struct {
			Scenario string          `json:"scenario"`
			Query    string          `json:"query"`
			Data     json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Data != nil {
			continue
		}
		c, err := canon.Append(nil, json.RawMessage(l.Query))
		if err != nil {
			t.Fatal(err)
		}
		node[l.Scenario] = append(node[l.Scenario], string(c))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var log []string
	shell := memshell.New("wasm", func(ctx context.Context, data []byte) (core.Engine, error) {
		e, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1))
		if err != nil {
			return nil, err
		}
		return &recorder{Engine: e, log: &log}, nil
	})
	defer shell.Close(ctx)
	c, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	same, total := 0, 0
	for _, s := range c.Scenarios() {
		log = nil
		rep, err := conformance.RunScenario(ctx, t, shell, s, nil)
		if err != nil {
			t.Fatalf("%s: %v", s.ID(), err)
		}
		if len(rep.Failures) > 0 {
			t.Errorf("%s fails on memhost/wasm: %s", s.ID(), strings.Join(rep.Failures, "\n"))
			continue
		}
		total += len(log)
		got := node[s.ID()]
		if len(got) != len(log) {
			t.Errorf("%s: Node asked %d questions, Go %d", s.ID(), len(got), len(log))
			continue
		}
		differs := false
		for i := range log {
			if got[i] != log[i] {
				t.Errorf("%s: question %d differs:\n%s", s.ID(), i, firstDiff(log[i], got[i]))
				differs = true
				break
			}
		}
		if !differs {
			same++
		}
	}
	t.Logf("%d scenarios: Node asked the same %d questions as the Go host, in the same order", same, total)
}

// checkData demands that the data Node set for a scenario is the data the Go runner builds
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
		t.Errorf("%s: Node set other policy data than the Go runner:\n%s", id, firstDiff(string(want), string(got)))
	}
}

func firstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf(" go   …%.200s\n node …%.200s", want[from:], got[from:])
}
