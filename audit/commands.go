package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/decisionlog"
)

// What the `grantwire policy` commands (cmd/grantwire, OPA build) run: the policy's
// sources, a catalog file, the engine a replay evaluates with, the Rego tests, and the
// text reports. The commands themselves live in cmd/grantwire.

// PolicyFS returns the file system and the root to compile: the embedded sources (dir
// "") under EmbeddedPolicyPath, or the Rego of a directory.
func PolicyFS(dir string) (fs.FS, string, error) { return policyFS(dir) }

// ReadCatalogFile reads and validates a catalog JSON file (nil for "": the embedded one).
func ReadCatalogFile(file string) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if _, err := catalog.Load(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return raw, nil
}

// ErrCombined: a replay's bundle carries its own policy and catalog.
var ErrCombined = errors.New("--bundle carries its own policy and catalog: do not combine it with --policy or --catalog")

// ReplayEngine builds the engine a decision-log replay evaluates with — a bundle's
// policy.wasm (wasm engine), the Rego of a directory (rego engine) or the embedded policy
// — and names that policy.
func ReplayEngine(ctx context.Context, bundleFile, dir, catalogFile string) (core.Engine, string, error) {
	if bundleFile != "" && (dir != "" || catalogFile != "") {
		return nil, "", ErrCombined
	}
	if bundleFile != "" {
		b, err := bundle.Open(bundleFile)
		if err != nil {
			return nil, "", err
		}
		cat, err := catalog.Load(b.Catalog)
		if err != nil {
			return nil, "", err
		}
		if cat, err = cat.WithBuiltinAgents(b.Agents); err != nil { // the bundle's data, whole
			return nil, "", err
		}
		e, err := wasmengine.New(ctx, wasmengine.WithModule(b.Wasm), wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(1))
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", bundle.ErrRefused, err)
		}
		return e, fmt.Sprintf("bundle %s (revision %s)", bundleFile, b.Revision), nil
	}
	raw, err := ReadCatalogFile(catalogFile)
	if err != nil {
		return nil, "", err
	}
	cat, err := catalog.Load(raw)
	if err != nil {
		return nil, "", err
	}
	// A catalog file replaces the connectors; the built-in agents stay (as for --catalog).
	if cat, err = cat.WithBuiltinAgents(catalog.Default().BuiltinAgents()); err != nil {
		return nil, "", err
	}
	if dir != "" {
		e, err := regoengine.New(ctx, regoengine.WithModules(os.DirFS(dir)), regoengine.WithData(cat.Data()))
		if err != nil {
			return nil, "", err
		}
		return e, fmt.Sprintf("the Rego of %s (rego engine)", dir), nil
	}
	e, err := wasmengine.New(ctx, wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(1))
	if err != nil {
		return nil, "", err
	}
	return e, fmt.Sprintf("the embedded policy (revision %s)", bundle.EmbeddedRevision()), nil
}

// WriteReplay writes a replay report as text.
func WriteReplay(w io.Writer, log, against string, rep *decisionlog.Report) {
	fmt.Fprintf(w, "replayed %d of %d decisions of %s against %s\n", rep.Replayed, rep.Entries, log, against)
	revs := make([]string, 0, len(rep.Revisions))
	for r, n := range rep.Revisions {
		if r == "" {
			r = "(none)"
		}
		revs = append(revs, fmt.Sprintf("%s (%d)", r, n))
	}
	if len(revs) > 0 {
		sort.Strings(revs)
		fmt.Fprintf(w, "logged under: %s\n", strings.Join(revs, ", "))
	}
	if len(rep.Changes) == 0 {
		fmt.Fprintf(w, "no decision would change\n")
	} else {
		fmt.Fprintf(w, "%d decisions would change:\n", len(rep.Changes))
		for _, c := range rep.Changes {
			fmt.Fprintf(w, "  #%d %s %s: %s -> %s (%s differ)\n", c.Entry, c.DecisionID, c.Op, c.Before, c.After, strings.Join(c.What, ", "))
		}
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "%d entries skipped:\n", len(rep.Skipped))
		for _, s := range rep.Skipped {
			fmt.Fprintf(w, "  #%d %s: %s\n", s.Entry, s.DecisionID, s.Reason)
		}
	}
}

// ErrNoTests: no Rego test at all (an empty suite proves nothing).
var ErrNoTests = errors.New("no Rego tests")

// TestResult is one Rego test's outcome, as `policy test --json` lists it.
type TestResult struct {
	Package  string `json:"package"`
	Name     string `json:"name"`
	Location string `json:"location"`
	Pass     bool   `json:"pass"`
	Error    string `json:"error,omitempty"`
	Output   string `json:"output,omitempty"`
	Duration int64  `json:"duration_ns"`
}

// RunTests runs the Rego tests of the modules under root with OPA's test runner. No test
// at all is an error wrapping ErrNoTests.
func RunTests(ctx context.Context, fsys fs.FS, root string) ([]*tester.Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	mods := map[string]*ast.Module{}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" {
			return err
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			return err
		}
		mods[p] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	ch, err := tester.NewRunner().SetCompiler(ast.NewCompiler().WithEnablePrintStatements(true)).Run(ctx, mods)
	if err != nil {
		return nil, err
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("%w under %s", ErrNoTests, root)
	}
	return results, nil
}

// Failed counts the results that failed or erred.
func Failed(results []*tester.Result) int {
	n := 0
	for _, r := range results {
		if r.Fail || r.Error != nil {
			n++
		}
	}
	return n
}

// WriteTests reports results as `opa test` does.
func WriteTests(w io.Writer, results []*tester.Result, verbose bool) error {
	replay := make(chan *tester.Result, len(results))
	for _, r := range results {
		replay <- r
	}
	close(replay)
	return tester.PrettyReporter{Output: w, Verbose: verbose}.Report(replay)
}

// TestResults converts results for JSON output.
func TestResults(results []*tester.Result) []TestResult {
	out := make([]TestResult, 0, len(results))
	for _, r := range results {
		t := TestResult{Package: r.Package, Name: r.Name, Pass: r.Pass(), Output: string(r.Output), Duration: r.Duration.Nanoseconds()}
		if r.Location != nil {
			t.Location = r.Location.String()
		}
		if r.Error != nil {
			t.Error = r.Error.Error()
		}
		out = append(out, t)
	}
	return out
}
