package audit

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/grantwire/grantwire/policy"
)

// The policy audit (`grantwire policy audit`, [Audit]) with OPA's own Go packages — the
// checks `make audit` runs with the OPA command line, in one implementation that the
// policy package's tests use too:
//
//  1. format: every module (tests included) is formatted as `opa fmt` formats it;
//  2. compile: the modules compile in strict mode against policy/capabilities.json, as
//     `opa check --strict --capabilities` does (only builtins the Wasm module implements:
//     no clock, randomness, network or host call);
//  3. tests: the Rego tests pass (OPA's tester), and there is at least one;
//  4. coverage: their line coverage of the policy (test files excluded, OPA's cover
//     package) reaches the threshold (95 %);
//  5. metadata: every package and every public rule has a METADATA title and description;
//  6. entrypoints: decide, manifest and every operation's decision rule are annotated
//     `entrypoint: true`, and decide routes exactly the operations the manifest lists.

// DefaultThreshold is the policy's minimum line coverage, in percent.
const DefaultThreshold = 95.0

// AuditOptions configures [Audit]. Zero values mean the defaults.
type AuditOptions struct {
	// Threshold is the minimum line coverage of the policy, test files excluded, in
	// percent (default [DefaultThreshold]).
	Threshold float64
	// TestTimeout bounds each Rego test (default 60 s: coverage tracing on a busy machine
	// can stretch a test past OPA's default of 5 s).
	TestTimeout time.Duration
	// Capabilities is the OPA capabilities JSON the policy must compile against (default
	// policy/capabilities.json).
	Capabilities []byte
	// Entrypoints are the rules policy.wasm is built with (default policy.Entrypoints).
	Entrypoints []string
	// Decide is the module that routes the operations, relative to the policy's root
	// (default "decide.rego").
	Decide string
}

// Check is the outcome of one check of the audit.
type Check struct {
	Name     string   `json:"name"`
	OK       bool     `json:"ok"`
	Summary  string   `json:"summary"`
	Problems []string `json:"problems,omitempty"`
}

// AuditReport is what [Audit] found.
type AuditReport struct {
	Policy    string  `json:"policy"`     // the directory audited, as its modules name it
	Modules   int     `json:"modules"`    // policy modules (tests excluded)
	TestFiles int     `json:"test_files"` // *_test.rego modules
	Tests     int     `json:"tests"`      // Rego tests run
	Failed    int     `json:"failed"`     // Rego tests that failed or errored
	Lines     int     `json:"lines"`      // policy lines that coverage counts
	Covered   int     `json:"covered"`    // of which covered by the tests
	Coverage  float64 `json:"coverage"`   // percent, rounded down to hundredths
	Threshold float64 `json:"threshold"`
	Checks    []Check `json:"checks"`
}

// OK reports whether every check passed.
func (r *AuditReport) OK() bool { return len(r.FailedChecks()) == 0 }

// FailedChecks names the checks that failed, in order.
func (r *AuditReport) FailedChecks() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

func (r *AuditReport) add(name string, problems []string, ok, bad string) {
	c := Check{Name: name, OK: len(problems) == 0, Summary: ok, Problems: problems}
	if !c.OK {
		c.Summary = bad
	}
	r.Checks = append(r.Checks, c)
}

// isTest reports whether a module file holds Rego tests only.
func isTest(file string) bool { return strings.HasSuffix(file, "_test.rego") }

// regoFiles lists the .rego files under root, sorted.
func regoFiles(fsys fs.FS, root string) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && path.Ext(p) == ".rego" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("audit: no Rego modules under %s", root)
	}
	sort.Strings(files)
	return files, nil
}

// ParseModules parses every .rego file under root of fsys (Rego v1, with annotations),
// keyed by path; tests says whether *_test.rego files are included. A file that does not
// parse is an error naming it.
func ParseModules(fsys fs.FS, root string, tests bool) (map[string]*ast.Module, error) {
	files, err := regoFiles(fsys, root)
	if err != nil {
		return nil, err
	}
	mods := map[string]*ast.Module{}
	for _, p := range files {
		if !tests && isTest(p) {
			continue
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, err
		}
		mods[p] = m
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("audit: no Rego modules under %s", root)
	}
	return mods, nil
}

func sortedModules(mods map[string]*ast.Module) []*ast.Module {
	names := slices.Sorted(maps.Keys(mods))
	out := make([]*ast.Module, 0, len(names))
	for _, n := range names {
		out = append(out, mods[n])
	}
	return out
}

// policyModules drops the test modules.
func policyModules(mods map[string]*ast.Module) map[string]*ast.Module {
	out := map[string]*ast.Module{}
	for p, m := range mods {
		if !isTest(p) {
			out[p] = m
		}
	}
	return out
}

// FormatProblems lists the modules of fsys under root that `opa fmt` would change (or
// cannot parse), tests included, as `opa fmt --fail -l` does.
func FormatProblems(fsys fs.FS, root string) ([]string, error) {
	files, err := regoFiles(fsys, root)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, p := range files {
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		out, err := format.SourceWithOpts(p, src, format.Opts{RegoVersion: ast.RegoV1})
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: cannot be formatted: %v", p, firstLine(err.Error())))
		case !bytes.Equal(out, src):
			problems = append(problems, fmt.Sprintf("%s: not formatted (run: opa fmt -w %s)", p, p))
		}
	}
	return problems, nil
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// CompileStrict compiles mods in strict mode against the OPA capabilities JSON caps (nil:
// policy/capabilities.json), as `opa check --strict --capabilities` does, and returns the
// compiler's errors.
func CompileStrict(mods map[string]*ast.Module, caps []byte) (ast.Errors, error) {
	if caps == nil {
		caps = policy.Capabilities
	}
	c, err := ast.LoadCapabilitiesJSON(bytes.NewReader(caps))
	if err != nil {
		return nil, fmt.Errorf("audit: capabilities: %w", err)
	}
	cmp := ast.NewCompiler().WithCapabilities(c).WithStrict(true)
	cmp.Compile(mods)
	return cmp.Errors, nil
}

func documented(a *ast.Annotations) bool {
	return a != nil && strings.TrimSpace(a.Title) != "" && strings.TrimSpace(a.Description) != ""
}

// MetadataProblems lists every package and every public rule (a name not starting with
// "_") of the policy modules of mods (test files are skipped) without a METADATA block
// that has both a title and a description. One documented definition documents a rule
// with several (functions, incremental rules).
func MetadataProblems(mods map[string]*ast.Module) ([]string, error) {
	sorted := sortedModules(policyModules(mods))
	as, errs := ast.BuildAnnotationSet(sorted)
	if len(errs) > 0 {
		return nil, errs
	}
	var problems []string
	for _, m := range sorted {
		file := m.Package.Location.File
		if !documented(as.GetPackageScope(m.Package)) {
			problems = append(problems, fmt.Sprintf("%s: package %v has no METADATA with title and description", file, m.Package.Path))
		}
		type rule struct {
			row int
			ok  bool
		}
		rules := map[string]*rule{}
		var order []string
		for _, r := range m.Rules {
			name := r.Head.Ref().String()
			if strings.HasPrefix(name, "_") {
				continue
			}
			ok := documented(as.GetDocumentScope(r.Ref().GroundPrefix()))
			for _, a := range as.GetRuleScope(r) {
				ok = ok || documented(a)
			}
			if rules[name] == nil {
				rules[name] = &rule{row: r.Location.Row}
				order = append(order, name)
			}
			rules[name].ok = rules[name].ok || ok
		}
		for _, name := range order {
			if !rules[name].ok {
				problems = append(problems, fmt.Sprintf("%s:%d: rule %v.%s has no METADATA with title and description", file, rules[name].row, m.Package.Path, name))
			}
		}
	}
	return problems, nil
}

// resolve turns a rule reference written in a module (gate.decision, with gate imported)
// into its full path.
func resolve(m *ast.Module, ref ast.Ref) ast.Ref {
	head, ok := ref[0].Value.(ast.Var)
	if !ok {
		return ref
	}
	for _, imp := range m.Imports {
		p, ok := imp.Path.Value.(ast.Ref)
		if !ok {
			continue
		}
		alias := imp.Alias
		if alias == "" {
			if s, ok := p[len(p)-1].Value.(ast.String); ok {
				alias = ast.Var(string(s))
			}
		}
		if alias == head {
			return p.Concat(ref[1:])
		}
	}
	return m.Package.Path.Concat(ref)
}

// routes reads decide.rego's routing: the chain `_decision := X if { _op == "name" } else
// := ...`, as operation name → full path of its decision rule.
func routes(m *ast.Module) (map[string]string, error) {
	out := map[string]string{}
	for _, r := range m.Rules {
		if r.Head.Ref().String() != "_decision" {
			continue
		}
		for e := r; e != nil; e = e.Else {
			ref, ok := e.Head.Value.Value.(ast.Ref)
			if !ok || len(e.Body) != 1 || !e.Body[0].IsCall() || e.Body[0].Operator().String() != "equal" {
				return nil, fmt.Errorf("%v: a _decision branch must be `:= rule if { _op == \"name\" }`", e.Location)
			}
			var op string
			for _, t := range e.Body[0].Operands() {
				if s, ok := t.Value.(ast.String); ok {
					op = string(s)
				}
			}
			if op == "" {
				return nil, fmt.Errorf("%v: no operation name in %v", e.Location, e.Body)
			}
			out[op] = resolve(m, ref).String()
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no _decision routing found", m.Package.Location.File)
	}
	return out, nil
}

// manifestOps reads the operation names of decide.rego's manifest.
func manifestOps(m *ast.Module) ([]string, error) {
	for _, r := range m.Rules {
		if r.Head.Ref().String() != "manifest" {
			continue
		}
		obj, ok := r.Head.Value.Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("%v: manifest is not an object", r.Location)
		}
		t := obj.Get(ast.StringTerm("ops"))
		if t == nil {
			return nil, fmt.Errorf("%v: manifest has no ops", r.Location)
		}
		ops, ok := t.Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("%v: manifest.ops is not an object", r.Location)
		}
		var names []string
		for _, k := range ops.Keys() {
			if s, ok := k.Value.(ast.String); ok {
				names = append(names, string(s))
			}
		}
		sort.Strings(names)
		return names, nil
	}
	return nil, fmt.Errorf("%s: no manifest found", m.Package.Location.File)
}

// EntrypointProblems checks that every operation routed by the module decide (a key of
// mods) — and every rule of wanted, the entrypoints policy.wasm is built with
// ("grantwire/decide") — is a rule annotated `entrypoint: true`, and that the routed
// operations are exactly the ones the manifest lists. A routing it cannot read is a
// problem too.
func EntrypointProblems(mods map[string]*ast.Module, decide string, wanted []string) ([]string, error) {
	pm := policyModules(mods)
	as, errs := ast.BuildAnnotationSet(sortedModules(pm))
	if len(errs) > 0 {
		return nil, errs
	}
	dm := pm[decide]
	if dm == nil {
		return []string{fmt.Sprintf("%s not found: it routes the operations", decide)}, nil
	}
	ops, err := routes(dm)
	if err != nil {
		return []string{err.Error()}, nil
	}
	listed, err := manifestOps(dm)
	if err != nil {
		return []string{err.Error()}, nil
	}
	var problems []string
	routed := slices.Sorted(maps.Keys(ops))
	if !slices.Equal(routed, listed) {
		problems = append(problems, fmt.Sprintf("decide routes %v but the manifest lists %v", routed, listed))
	}
	paths := map[string]string{}
	for _, op := range routed {
		paths[ops[op]] = "the decision rule of " + op
	}
	for _, w := range wanted {
		paths["data."+strings.ReplaceAll(w, "/", ".")] = "an entrypoint of policy.wasm"
	}
	names := slices.Sorted(maps.Keys(paths))
	for _, p := range names {
		ref, err := ast.ParseRef(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s) is not a rule reference", p, paths[p]))
			continue
		}
		a := as.GetDocumentScope(ref)
		if a == nil || !a.Entrypoint {
			problems = append(problems, fmt.Sprintf("%s (%s) has no METADATA with entrypoint: true", p, paths[p]))
		}
	}
	return problems, nil
}

// coverage runs the Rego tests of mods with OPA's coverage tracer and returns the
// results and the coverage report.
func runCoverage(ctx context.Context, mods map[string]*ast.Module, timeout time.Duration) ([]*tester.Result, cover.Report, error) {
	cov := cover.New()
	ch, err := tester.NewRunner().
		SetCompiler(ast.NewCompiler().WithEnablePrintStatements(true)).
		SetCoverageQueryTracer(cov).
		SetCoverageRuns(nil).
		SetTimeout(timeout).
		SetModules(mods).
		RunTests(ctx, nil)
	if err != nil {
		return nil, cover.Report{}, err
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	sort.Slice(results, func(i, j int) bool {
		if results[i].Package != results[j].Package {
			return results[i].Package < results[j].Package
		}
		return results[i].Name < results[j].Name
	})
	return results, cov.Report(mods), nil
}

// pct is c/n in percent, rounded down to hundredths (94.999 never reads as 95.00).
func pct(c, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(c*10000/n) / 100
}

func lineRanges(rs []cover.Range) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		p := fmt.Sprint(r.Start.Row)
		if r.Start.Row != r.End.Row {
			p = fmt.Sprintf("%d-%d", r.Start.Row, r.End.Row)
		}
		if len(parts) == 0 || parts[len(parts)-1] != p {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

// Audit runs the policy audit on the Rego modules under root of fsys (see the checks
// above) and reports every check. An error means the audit could not run at all (no
// modules, an unreadable directory); a check that fails is reported, not returned.
func Audit(ctx context.Context, fsys fs.FS, root string, o AuditOptions) (*AuditReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.TestTimeout <= 0 {
		o.TestTimeout = 60 * time.Second
	}
	if o.Entrypoints == nil {
		o.Entrypoints = policy.Entrypoints
	}
	if o.Decide == "" {
		o.Decide = "decide.rego"
	}
	rep := &AuditReport{Policy: root, Threshold: o.Threshold}

	fmtProblems, err := FormatProblems(fsys, root)
	if err != nil {
		return nil, err
	}
	rep.add("format", fmtProblems, "every module is formatted as opa fmt formats it", "modules are not formatted")

	mods, err := ParseModules(fsys, root, true)
	if err != nil {
		// Nothing else can run on modules that do not parse.
		rep.add("parse", []string{firstLine(err.Error())}, "", "a module does not parse; the other checks did not run")
		return rep, nil
	}
	for p := range mods {
		if isTest(p) {
			rep.TestFiles++
		} else {
			rep.Modules++
		}
	}

	errs, err := CompileStrict(mods, o.Capabilities)
	if err != nil {
		return nil, err
	}
	var compileProblems []string
	for _, e := range errs {
		compileProblems = append(compileProblems, e.Error())
	}
	rep.add("compile", compileProblems, "strict, against the capabilities of policy.wasm (no clock, randomness, network or host calls)",
		"the modules do not compile in strict mode against the capabilities")

	results, cov, err := runCoverage(ctx, mods, o.TestTimeout)
	if err != nil {
		rep.add("tests", []string{firstLine(err.Error())}, "", "the Rego tests could not run")
	} else {
		var testProblems []string
		for _, r := range results {
			if r.Skip {
				continue
			}
			rep.Tests++
			if r.Fail || r.Error != nil {
				rep.Failed++
				what := "failed"
				if r.Error != nil {
					what = "error: " + firstLine(r.Error.Error())
				}
				testProblems = append(testProblems, fmt.Sprintf("%s: %s.%s %s", r.Location, r.Package, r.Name, what))
			}
		}
		if rep.Tests == 0 {
			testProblems = append(testProblems, "no Rego tests (test_* rules in *_test.rego): an empty suite proves nothing")
		}
		rep.add("tests", testProblems, fmt.Sprintf("%d of %d Rego tests passed", rep.Tests-rep.Failed, rep.Tests),
			fmt.Sprintf("%d of %d Rego tests failed", rep.Failed, rep.Tests))

		var uncovered []string
		files := slices.Sorted(maps.Keys(cov.Files))
		for _, f := range files {
			if isTest(f) {
				continue
			}
			fr := cov.Files[f]
			rep.Covered += fr.CoveredLines
			rep.Lines += fr.CoveredLines + fr.NotCoveredLines
			if fr.NotCoveredLines > 0 {
				uncovered = append(uncovered, fmt.Sprintf("not covered in %s: lines %s", f, lineRanges(fr.NotCovered)))
			}
		}
		rep.Coverage = pct(rep.Covered, rep.Lines)
		var covProblems []string
		switch {
		case rep.Lines == 0:
			covProblems = []string{"the tests cover no policy line at all"}
		case rep.Coverage < o.Threshold:
			covProblems = append([]string{fmt.Sprintf("%.2f%% is below the %g%% threshold: add tests for the lines below", rep.Coverage, o.Threshold)}, uncovered...)
		}
		summary := fmt.Sprintf("%.2f%% of %d policy lines (threshold %g%%)", rep.Coverage, rep.Lines, o.Threshold)
		c := Check{Name: "coverage", OK: len(covProblems) == 0, Summary: summary, Problems: covProblems}
		if c.OK && len(uncovered) > 0 {
			c.Summary += "; " + strings.Join(uncovered, "; ")
		}
		rep.Checks = append(rep.Checks, c)
	}

	metaProblems, err := MetadataProblems(mods)
	if err != nil {
		metaProblems = []string{firstLine(err.Error())}
	}
	rep.add("metadata", metaProblems, "every package and public rule has a METADATA title and description",
		"packages or public rules lack METADATA")

	decide := path.Join(root, o.Decide)
	epProblems, err := EntrypointProblems(mods, decide, o.Entrypoints)
	if err != nil {
		epProblems = []string{firstLine(err.Error())}
	}
	rep.add("entrypoints", epProblems,
		fmt.Sprintf("%s and every routed operation's decision rule are entrypoints; decide routes exactly the manifest's operations", strings.Join(o.Entrypoints, ", ")),
		"entrypoints are missing or the routing disagrees with the manifest")
	return rep, nil
}
