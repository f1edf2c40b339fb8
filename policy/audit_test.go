package policy_test

// The policy's audit with OPA's own Go packages: every package and every public rule carries
// a METADATA title and description, every operation's decision rule is an entrypoint, and
// the modules compile in strict mode against capabilities.json (so no clock, randomness,
// network or host call can creep in). `make audit` runs these tests beside `opa fmt`,
// `opa check` and `opa test --coverage`. Each check is also run against a module that must
// fail it, so a check that cannot fail would be noticed.

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/policy"
)

// modules parses every policy module (tests excluded) of fsys, with their annotations.
func modules(fsys fs.FS) (map[string]*ast.Module, error) {
	mods := map[string]*ast.Module{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			return err
		}
		mods[p] = m
		return nil
	})
	if err == nil && len(mods) == 0 {
		err = fmt.Errorf("no Rego modules found")
	}
	return mods, err
}

func sortedModules(mods map[string]*ast.Module) []*ast.Module {
	names := make([]string, 0, len(mods))
	for n := range mods {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*ast.Module, 0, len(names))
	for _, n := range names {
		out = append(out, mods[n])
	}
	return out
}

func documented(a *ast.Annotations) bool {
	return a != nil && strings.TrimSpace(a.Title) != "" && strings.TrimSpace(a.Description) != ""
}

// metadataProblems lists every package and every public rule (a name not starting with
// "_") without a METADATA block that has both a title and a description.
func metadataProblems(fsys fs.FS) ([]string, error) {
	mods, err := modules(fsys)
	if err != nil {
		return nil, err
	}
	as, errs := ast.BuildAnnotationSet(sortedModules(mods))
	if len(errs) > 0 {
		return nil, errs
	}
	var problems []string
	for _, m := range sortedModules(mods) {
		file := m.Package.Location.File
		if !documented(as.GetPackageScope(m.Package)) {
			problems = append(problems, fmt.Sprintf("%s: package %v has no METADATA with title and description", file, m.Package.Path))
		}
		// A rule may have several definitions (functions, incremental rules): one
		// documented definition documents the rule.
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
			alias = ast.Var(string(p[len(p)-1].Value.(ast.String)))
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
		return nil, fmt.Errorf("no _decision routing found")
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
		ops, ok := obj.Get(ast.StringTerm("ops")).Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("%v: manifest.ops is not an object", r.Location)
		}
		var names []string
		for _, k := range ops.Keys() {
			names = append(names, string(k.Value.(ast.String)))
		}
		sort.Strings(names)
		return names, nil
	}
	return nil, fmt.Errorf("no manifest found")
}

// entrypointProblems checks that every operation routed by decide (and decide and manifest
// themselves, and policy.Entrypoints) is a rule annotated `entrypoint: true`, and that the
// routed operations are exactly the manifest's.
func entrypointProblems(fsys fs.FS, root string, wanted []string) ([]string, error) {
	mods, err := modules(fsys)
	if err != nil {
		return nil, err
	}
	as, errs := ast.BuildAnnotationSet(sortedModules(mods))
	if len(errs) > 0 {
		return nil, errs
	}
	decide := mods[root]
	if decide == nil {
		return nil, fmt.Errorf("%s not found", root)
	}
	ops, err := routes(decide)
	if err != nil {
		return nil, err
	}
	listed, err := manifestOps(decide)
	if err != nil {
		return nil, err
	}
	var problems []string
	var routed []string
	for op := range ops {
		routed = append(routed, op)
	}
	sort.Strings(routed)
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
	var names []string
	for p := range paths {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		a := as.GetDocumentScope(ast.MustParseRef(p))
		if a == nil || !a.Entrypoint {
			problems = append(problems, fmt.Sprintf("%s (%s) has no METADATA with entrypoint: true", p, paths[p]))
		}
	}
	return problems, nil
}

// compile compiles the modules of fsys, plus extra ones, in strict mode against the
// policy's capabilities, as `opa check --strict --capabilities` does.
func compile(t *testing.T, fsys fs.FS, extra map[string]string) ast.Errors {
	t.Helper()
	caps, err := ast.LoadCapabilitiesJSON(bytes.NewReader(policy.Capabilities))
	require.NoError(t, err)
	mods, err := modules(fsys)
	require.NoError(t, err)
	for name, src := range extra {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: caps})
		require.NoError(t, err)
		mods[name] = m
	}
	c := ast.NewCompiler().WithCapabilities(caps).WithStrict(true)
	c.Compile(mods)
	return c.Errors
}

func TestPolicyMetadata(t *testing.T) {
	problems, err := metadataProblems(policy.Sources)
	require.NoError(t, err)
	require.Empty(t, problems, "every package and public rule needs # METADATA with title and description")
}

func TestPolicyEntrypoints(t *testing.T) {
	problems, err := entrypointProblems(policy.Sources, "grantwire/decide.rego", policy.Entrypoints)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestPolicyCompilesAgainstCapabilities(t *testing.T) {
	require.Empty(t, compile(t, policy.Sources, nil))
}

// The negative tests: each check must fail on a module that breaks its rule.

func TestMetadataCheckReportsWhatIsMissing(t *testing.T) {
	fsys := fstest.MapFS{
		"p/ok.rego": {Data: []byte(`# METADATA
# title: ok
# description: A documented package.
package p.ok

# METADATA
# title: answer
# description: A documented rule.
answer := 42

# METADATA
# title: f
# description: A documented function with two definitions.
f(1) := "one"

f(2) := "two"

_private := 1
`)},
		"p/bare.rego": {Data: []byte(`package p.bare

# A comment is not METADATA.
undocumented := 1

# METADATA
# title: only a title
half := 2

_private := 3
`)},
		"p/bare_test.rego": {Data: []byte(`package p.bare_test

test_x if true
`)},
	}
	problems, err := metadataProblems(fsys)
	require.NoError(t, err)
	require.Equal(t, []string{
		"p/bare.rego: package data.p.bare has no METADATA with title and description",
		"p/bare.rego:4: rule data.p.bare.undocumented has no METADATA with title and description",
		"p/bare.rego:8: rule data.p.bare.half has no METADATA with title and description",
	}, problems)
}

func TestEntrypointCheckReportsWhatIsMissing(t *testing.T) {
	fsys := fstest.MapFS{
		"p/decide.rego": {Data: []byte(`# METADATA
# title: p
# description: Routes.
package p

import data.p.ops

_decision := ops.a if {
	input.op == "a"
} else := ops.b if {
	input.op == "b"
}

# METADATA
# title: decide
# description: The decision.
# entrypoint: true
decide := _decision

# METADATA
# title: manifest
# description: Lists a and c.
manifest := {"ops": {"a": {}, "c": {}}}
`)},
		"p/ops.rego": {Data: []byte(`# METADATA
# title: ops
# description: Two operations.
package p.ops

# METADATA
# title: a
# description: An entrypoint.
# entrypoint: true
a := 1

# METADATA
# title: b
# description: Not an entrypoint.
b := 2
`)},
	}
	problems, err := entrypointProblems(fsys, "p/decide.rego", []string{"p/decide", "p/manifest"})
	require.NoError(t, err)
	require.Equal(t, []string{
		"decide routes [a b] but the manifest lists [a c]",
		"data.p.manifest (an entrypoint of policy.wasm) has no METADATA with entrypoint: true",
		"data.p.ops.b (the decision rule of b) has no METADATA with entrypoint: true",
	}, problems)
}

func TestCapabilitiesRejectImpureBuiltins(t *testing.T) {
	for _, call := range []string{
		"time.now_ns()",
		`http.send({"method": "get", "url": "https://example.com"})`,
		`rand.intn("x", 10)`,
		"opa.runtime()",
		`uuid.rfc4122("x")`,
		`crypto.x509.parse_certificates("")`,
	} {
		t.Run(call, func(t *testing.T) {
			src := fmt.Sprintf("package grantwire.impure\n\nx := %s\n", call)
			errs := compile(t, policy.Sources, map[string]string{"impure.rego": src})
			require.NotEmpty(t, errs, "%s must be refused by capabilities.json", call)
			name := call[:strings.Index(call, "(")]
			require.Contains(t, errs.Error(), "undefined function "+name)
		})
	}
}
