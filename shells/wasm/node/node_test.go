package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/engines"
	"github.com/grantwire/grantwire/internal/testworld/foreign"
)

// requireNode is set by `make test` (scripts/test.sh): there a missing Node fails the test
// instead of skipping it.
const requireNode = "GRANTWIRE_REQUIRE_NODE"

type report struct {
	Shell     string             `json:"shell"`
	Node      string             `json:"node"`
	MS        float64            `json:"ms"`
	Checks    []string           `json:"checks"`
	Scenarios []foreign.Scenario `json:"scenarios"`
	Files     []struct {
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
	stops    []func() // the control APIs startWorlds serves
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, stop := range stops {
		stop()
	}
	for _, d := range tempDirs {
		_ = os.RemoveAll(d)
	}
	os.Exit(code)
}

// startWorlds serves the control API of the test worlds' authorization server on
// 127.0.0.1 for the Node runner (its world per scenario, over real HTTP).
func startWorlds(t *testing.T) string {
	url, stop, err := authserver.ServeWorlds()
	if err != nil {
		t.Fatal(err)
	}
	stops = append(stops, stop)
	return url
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
	// The runner's own checks: stored JSON read as the Go host reads it
	// (hostabi/testdata/stored-json.json), and the kinds no scenario uses.
	for _, f := range r.report.Checks {
		t.Error(f)
	}
	foreign.Conformance(t, fmt.Sprintf("%s (node %s, %.2f s)", r.report.Shell, r.report.Node, r.report.MS/1000), r.report.Scenarios)
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
	files := map[string]string{}
	for _, f := range r.report.Files {
		files[f.Name] = f.Canonical
	}
	foreign.ReadsCorpus(t, "Node", files)
}

// TestNodeDecisionsMatchGoEngines replays the queries the Node driver sent during the
// corpus run through both Go engines (wasm and rego, built from the policy data Node set,
// which must be the data the Go runner builds): every decision must be byte-identical
// (canonical JSON) to what the npm loader returned.
func TestNodeDecisionsMatchGoEngines(t *testing.T) {
	run, err := foreign.ReadQueries(runNode(t).queries)
	if err != nil {
		t.Fatal(err)
	}
	foreign.Decisions(t, "Node", run, engines.WasmCompiledOnce(t), engines.Rego)
}

// TestNodeAsksWhatGoAsks runs the corpus on the Go memhost shell too (native engine), recording every
// query, and demands that in every scenario the Node shell asked the core the same
// questions, with the same facts, in the same order: the JavaScript host answers every need
// as the Go host does (canonical JSON, so only key order and escaping may differ).
func TestNodeAsksWhatGoAsks(t *testing.T) {
	run, err := foreign.ReadQueries(runNode(t).queries)
	if err != nil {
		t.Fatal(err)
	}
	goAsked, err := foreign.GoQuestions(t, engines.Native) // the questions are the host's: any engine asks them
	if err != nil {
		t.Fatal(err)
	}
	same, total := foreign.AsksWhatGoAsks(t, "Node", goAsked, run)
	t.Logf("%d scenarios: Node asked the same %d questions as the Go host, in the same order", same, total)
}
