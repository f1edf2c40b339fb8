package nodiff_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/internal/nodiff"
	"github.com/grantwire/grantwire/policy"
)

// uncoverable lists the rules of the policy the generator cannot reach, each with the
// reason. The coverage test fails on any other line that the generated queries never
// evaluate, so a new branch in the policy needs a generator that reaches it or a reason
// here.
var uncoverable = map[string]string{
	"data.grantwire.decide (default)":          "the else chain of decide always ends in a decision (INTERNAL or USAGE), so the default is never taken",
	"data.grantwire.facts.found":               "referenced by no rule",
	"data.grantwire.scopes.clean":              "referenced by no rule",
	"data.grantwire.scopes._escapes":           "used only by scopes.clean",
	"data.grantwire.scopes._escaped":           "used only by scopes.clean",
	"data.grantwire.scopes._word":              "used only by the valid_* helpers, which no rule references",
	"data.grantwire.scopes.valid_connector_id": "referenced by no rule",
	"data.grantwire.scopes.valid_agent_id":     "referenced by no rule",
	"data.grantwire.scopes.valid_scopes":       "referenced by no rule",
	"data.grantwire.scopes.valid_scope":        "referenced by no rule",
}

// uncoverableRows returns, per file, the rows of the rules listed in uncoverable.
func uncoverableRows(mods map[string]*ast.Module) map[string]map[int]bool {
	rows := map[string]map[int]bool{}
	for file, m := range mods {
		starts := []int{}
		for _, r := range m.Rules {
			starts = append(starts, r.Location.Row)
		}
		sort.Ints(starts)
		for _, r := range m.Rules {
			name := r.Ref().String()
			if !strings.HasPrefix(name, "data.") {
				name = m.Package.Path.String() + "." + name
			}
			if r.Default {
				name += " (default)"
			}
			if _, ok := uncoverable[name]; !ok {
				continue
			}
			if rows[file] == nil {
				rows[file] = map[int]bool{}
			}
			// A rule spans the rows up to the next rule (or the end of the file).
			end := 1 << 30
			if i := sort.SearchInts(starts, r.Location.Row+1); i < len(starts) {
				end = starts[i] - 1
			}
			for row := r.Location.Row; row <= end && row < r.Location.Row+1000; row++ {
				rows[file][row] = true
			}
		}
	}
	return rows
}

// coverageQueries is how many traced queries each operation gets per catalog (synthetic,
// embedded, broken).
var coverageQueries = []int{1500, 300, 30}

func policyModules(t *testing.T) map[string]*ast.Module {
	t.Helper()
	mods := map[string]*ast.Module{}
	err := fs.WalkDir(policy.Sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := fs.ReadFile(policy.Sources, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{ProcessAnnotation: true})
		if err != nil {
			return err
		}
		mods[p] = m
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

// TestCoverage evaluates generated episodes of every operation with OPA's coverage tracer
// and fails when a line of the policy is never evaluated (save the uncoverable list): it
// is how the generator is shown to drive every branch the differential test compares.
func TestCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("coverage tracing is slow; the differential test runs in -short mode")
	}
	ctx := context.Background()
	mods := policyModules(t)
	caps, err := ast.LoadCapabilitiesJSON(bytes.NewReader(policy.Capabilities))
	if err != nil {
		t.Fatal(err)
	}
	cov := cover.New()
	// A fixed seed (unless -seed is given): the coverage of a run must not depend on luck.
	s := uint64(1)
	if *seedFlag != 0 {
		s = *seedFlag
	}
	for ci, p := range enginePairs(t) {
		var data map[string]any
		if err := util.UnmarshalJSON(p.cat.Data, &data); err != nil {
			t.Fatal(err)
		}
		opts := []func(*rego.Rego){rego.Store(inmem.NewFromObject(data)), rego.Capabilities(caps), rego.StrictBuiltinErrors(false)}
		for _, m := range mods {
			opts = append(opts, rego.ParsedModule(m))
		}
		decide, err := rego.New(append(opts, rego.Query("data.grantwire.decide"))...).PrepareForEval(ctx)
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := rego.New(append(opts, rego.Query("data.grantwire.manifest"))...).PrepareForEval(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := manifest.Eval(ctx, rego.EvalQueryTracer(cov)); err != nil {
			t.Fatal(err)
		}
		for fi, op := range nodiff.Ops {
			g := nodiff.NewGen(p.cat, s, uint64(1000+fi)<<8|uint64(ci))
			limit := coverageQueries[ci]
			if op == "get_access_token" {
				limit *= 5 // the refresh and clearing branches sit deep in the gate
			}
			for n := 0; n < limit; {
				ep := g.Episode(op)
				for {
					q := ep.Query()
					n++
					out, qerr := p.wasm.DecideJSON(ctx, nil, q)
					if core.CheckQuery(q) == nil {
						input, err := ast.ValueFromReader(bytes.NewReader(q))
						if err != nil {
							t.Fatal(err)
						}
						if _, err := decide.Eval(ctx, rego.EvalParsedInput(input), rego.EvalQueryTracer(cov)); err != nil {
							t.Fatal(err)
						}
					}
					var d *core.Decision
					if qerr == nil {
						d, _ = core.ParseDecision(out)
					}
					if !ep.Answer(d) {
						break
					}
				}
			}
		}
	}
	report := cov.Report(mods)
	t.Logf("policy coverage %.1f%% (%d lines covered, %d not)", report.Coverage, report.CoveredLines, report.NotCoveredLines)
	files := make([]string, 0, len(report.Files))
	for f := range report.Files {
		files = append(files, f)
	}
	sort.Strings(files)
	skip := uncoverableRows(mods)
	var missed []string
	for _, f := range files {
		src, _ := fs.ReadFile(policy.Sources, f)
		lines := strings.Split(string(src), "\n")
		for _, r := range report.Files[f].NotCovered {
			for row := r.Start.Row; row <= r.End.Row; row++ {
				key := fmt.Sprintf("%s:%d", f, row)
				if skip[f][row] {
					continue
				}
				text := ""
				if row-1 < len(lines) {
					text = strings.TrimSpace(lines[row-1])
				}
				missed = append(missed, fmt.Sprintf("%s: %s", key, text))
			}
		}
	}
	if len(missed) > 0 {
		t.Errorf("%d policy lines are never evaluated by the generated queries:\n  %s", len(missed), strings.Join(missed, "\n  "))
	}
}
