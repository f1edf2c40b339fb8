package audit

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/policy"
)

// needKinds and effectKinds are the kinds of the host ABI: an object literal with "kind" is
// a need or an effect only when its kind is one (the policy has other objects with a
// "kind", such as the classification of a token endpoint's failure).
var needKinds, effectKinds = kindSet(hostabi.NeedKinds), kindSet(hostabi.EffectKinds)

func kindSet(kinds []string) map[string]bool {
	m := make(map[string]bool, len(kinds))
	for _, k := range kinds {
		m[k] = true
	}
	return m
}

// DocsPath is where the generated policy reference lives in the repository.
const DocsPath = "docs/policy.md"

// EmbeddedDocs generates the policy reference of the embedded policy.
func EmbeddedDocs() ([]byte, error) {
	return Docs(prefixFS{prefix: "policy", fsys: policy.Sources}, EmbeddedPolicyPath)
}

// Docs generates the policy reference (docs/policy.md) from the Rego modules under root
// in fsys (tests excluded), with OPA's parser and compiler: every operation (decision)
// with its arguments, the facts it may ask for, the effects and events it may request and
// the error codes it can return, all derived from the rules it reaches; every error code
// with its REST status and CLI exit code; every setting; and every public rule with its
// METADATA. The output depends on the sources only (no time, no absolute path).
func Docs(fsys fs.FS, root string) ([]byte, error) {
	pol, err := loadPolicy(fsys, root)
	if err != nil {
		return nil, err
	}
	return pol.render(), nil
}

// ruleInfo is everything known about one rule path (all its definitions).
type ruleInfo struct {
	path     string // data.grantwire.gate.decision
	pkg      string // data.grantwire.gate
	name     string // decision
	file     string
	args     []string // function parameters (from the source, not the compiler's locals)
	value    string   // the value of a constant, as Rego
	ann      *ast.Annotations
	edges    map[string]bool // rule paths it refers to
	reads    map[string]bool // input.args members it reads
	codes    map[string]bool // error codes it builds with errors.error("CODE", ...)
	needs    map[string]bool
	effects  map[string]bool
	events   map[string]bool
	results  map[string]bool // members of object-literal results of step.done
	opaqueRs bool            // step.done with a computed result
	aliasOf  string          // "input.args" when the rule's value is exactly input.args
}

type opInfo struct {
	name string
	rule string
}

type policyModel struct {
	rules    map[string]*ruleInfo
	pkgs     map[string]*ast.Annotations
	pkgFiles map[string]string
	ops      []opInfo
	table    map[string][2]string // code → status, exit
	common   map[string]bool      // codes decide itself can return for any operation
}

var (
	inputArgs = ast.MustParseRef("input.args")
	dataRoot  = ast.MustParseRef("data.grantwire")
)

const (
	errorsPkg   = "data.grantwire.errors"
	errorFn     = "data.grantwire.errors.error"
	stepDone    = "data.grantwire.step.done"
	decideRule  = "data.grantwire.decide"
	routingRule = "data.grantwire._decision"
)

func loadPolicy(fsys fs.FS, root string) (*policyModel, error) {
	caps, err := ast.LoadCapabilitiesJSON(bytes.NewReader(policy.Capabilities))
	if err != nil {
		return nil, fmt.Errorf("audit: capabilities: %w", err)
	}
	opts := ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1, Capabilities: caps}
	parsed := map[string]*ast.Module{}
	err = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), opts)
		if err != nil {
			return err
		}
		parsed[p] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if len(parsed) == 0 {
		return nil, fmt.Errorf("audit: no Rego modules under %s", root)
	}
	files := slices.Sorted(maps.Keys(parsed))
	as, errs := ast.BuildAnnotationSet(sortedModules(parsed))
	if len(errs) > 0 {
		return nil, fmt.Errorf("audit: annotations: %w", errs)
	}

	pm := &policyModel{rules: map[string]*ruleInfo{}, pkgs: map[string]*ast.Annotations{}, pkgFiles: map[string]string{},
		table: map[string][2]string{}, common: map[string]bool{}}
	// Signatures, values and annotations come from the parsed source, before the compiler
	// renames function parameters.
	for _, f := range files {
		m := parsed[f]
		pkg := m.Package.Path.String()
		if a := as.GetPackageScope(m.Package); a != nil {
			pm.pkgs[pkg] = a
		}
		if _, ok := pm.pkgFiles[pkg]; !ok {
			pm.pkgFiles[pkg] = f
		}
		for _, r := range m.Rules {
			p := r.Ref().String()
			ri := pm.rules[p]
			if ri == nil {
				ri = newRuleInfo(p, pkg, f)
				pm.rules[p] = ri
				for _, a := range r.Head.Args {
					ri.args = append(ri.args, a.String())
				}
				if len(r.Head.Args) == 0 && r.Body.Equal(ast.NewBody(ast.NewExpr(ast.BooleanTerm(true)))) && r.Else == nil &&
					r.Head.Value != nil && r.Head.Value.IsGround() {
					ri.value = r.Head.Value.String()
				}
			}
			if ri.ann == nil {
				if anns := as.GetRuleScope(r); len(anns) > 0 {
					ri.ann = anns[0]
				} else if a := as.GetDocumentScope(r.Ref()); a != nil {
					ri.ann = a // entrypoint: true implies scope document
				}
			}
			if p == errorsPkg+".table" {
				pm.readTable(r)
			}
		}
	}

	comp := ast.NewCompiler().WithCapabilities(caps)
	compiled := map[string]*ast.Module{}
	for f, m := range parsed {
		compiled[f] = m.Copy()
	}
	if comp.Compile(compiled); comp.Failed() {
		return nil, fmt.Errorf("audit: compile: %w", comp.Errors)
	}
	for _, f := range files {
		for _, r := range comp.Modules[f].Rules {
			if ri := pm.rules[r.Ref().String()]; ri != nil {
				if ref, ok := headValue(r).(ast.Ref); ok && ref.Equal(inputArgs) {
					ri.aliasOf = "input.args"
				}
			}
		}
	}
	for _, f := range files {
		for _, r := range comp.Modules[f].Rules {
			ri := pm.rules[r.Ref().String()]
			if ri == nil {
				continue // a rule the compiler generated
			}
			pm.analyse(ri, r)
			if ri.path == routingRule {
				pm.readRouting(r)
			}
		}
	}
	if len(pm.ops) == 0 {
		return nil, fmt.Errorf("audit: %s routes no operation", routingRule)
	}
	// Codes decide returns for any operation: its own rules, without the routing.
	for p := range pm.reach(decideRule, routingRule) {
		for c := range pm.rules[p].codes {
			pm.common[c] = true
		}
	}
	return pm, nil
}

func newRuleInfo(p, pkg, file string) *ruleInfo {
	return &ruleInfo{path: p, pkg: pkg, name: strings.TrimPrefix(p, pkg+"."), file: file,
		edges: map[string]bool{}, reads: map[string]bool{}, codes: map[string]bool{},
		needs: map[string]bool{}, effects: map[string]bool{}, events: map[string]bool{}, results: map[string]bool{}}
}

func (pm *policyModel) readTable(r *ast.Rule) {
	obj, ok := r.Head.Value.Value.(ast.Object)
	if !ok {
		return
	}
	obj.Foreach(func(k, v *ast.Term) {
		code, ok := k.Value.(ast.String)
		vo, ok2 := v.Value.(ast.Object)
		if !ok || !ok2 {
			return
		}
		var st, ex string
		if t := vo.Get(ast.StringTerm("status")); t != nil {
			st = t.String()
		}
		if t := vo.Get(ast.StringTerm("exit")); t != nil {
			ex = t.String()
		}
		pm.table[string(code)] = [2]string{st, ex}
	})
}

// readRouting reads decide's routing chain: `_decision := pkg.rule if { _op == "name" }`.
func (pm *policyModel) readRouting(r *ast.Rule) {
	for ; r != nil; r = r.Else {
		target, ok := headValue(r).(ast.Ref)
		if !ok {
			continue
		}
		var op string
		for _, e := range r.Body {
			if !e.IsCall() || len(e.Operands()) != 2 {
				continue
			}
			a, b := e.Operand(0), e.Operand(1)
			if ref, ok := a.Value.(ast.Ref); ok && strings.HasSuffix(ref.String(), "._op") {
				if s, ok := b.Value.(ast.String); ok {
					op = string(s)
				}
			}
		}
		if op != "" {
			pm.ops = append(pm.ops, opInfo{name: op, rule: target.String()})
		}
	}
}

// headValue is a compiled rule's value: the compiler moves `:=` values into the body as
// `__localN__ = value`.
func headValue(r *ast.Rule) ast.Value {
	if r.Head.Value == nil {
		return nil
	}
	v, ok := r.Head.Value.Value.(ast.Var)
	if !ok {
		return r.Head.Value.Value
	}
	for _, e := range r.Body {
		if !e.IsEquality() {
			continue
		}
		a, b := e.Operand(0), e.Operand(1)
		if a.Value.Compare(v) == 0 {
			return b.Value
		}
		if b.Value.Compare(v) == 0 {
			return a.Value
		}
	}
	return v
}

// analyse records what one (compiled) definition of a rule refers to and builds.
func (pm *policyModel) analyse(ri *ruleInfo, r *ast.Rule) {
	ast.WalkRefs(r, func(ref ast.Ref) bool {
		switch {
		case ref.HasPrefix(inputArgs) && len(ref) > len(inputArgs):
			if k, ok := ref[len(inputArgs)].Value.(ast.String); ok {
				ri.reads[string(k)] = true
			}
		case ref.HasPrefix(dataRoot):
			target, n := pm.ruleOf(ref)
			if target == "" {
				break
			}
			if target != ri.path {
				ri.edges[target] = true
			}
			if pm.rules[target].aliasOf != "" && len(ref) > n {
				if k, ok := ref[n].Value.(ast.String); ok {
					ri.reads[string(k)] = true
				}
			}
		}
		return false
	})
	ast.WalkExprs(r, func(e *ast.Expr) bool {
		if !e.IsCall() {
			return false
		}
		switch e.Operator().String() {
		case errorFn:
			if len(e.Operands()) > 0 {
				if s, ok := e.Operand(0).Value.(ast.String); ok {
					ri.codes[string(s)] = true
				}
			}
		case stepDone:
			if len(e.Operands()) > 0 {
				if obj, ok := e.Operand(0).Value.(ast.Object); ok {
					for _, k := range obj.Keys() {
						if s, ok := k.Value.(ast.String); ok {
							ri.results[string(s)] = true
						}
					}
				} else {
					ri.opaqueRs = true
				}
			}
		}
		return false
	})
	ast.WalkTerms(r, func(t *ast.Term) bool {
		obj, ok := t.Value.(ast.Object)
		if !ok {
			return false
		}
		// An error written as a literal ({"code": "INTERNAL", "message": ...}).
		if ct := obj.Get(ast.StringTerm("code")); ct != nil && obj.Get(ast.StringTerm("message")) != nil {
			if s, ok := ct.Value.(ast.String); ok {
				ri.codes[string(s)] = true
			}
		}
		kt := obj.Get(ast.StringTerm("kind"))
		if kt == nil {
			return false
		}
		kind, ok := kt.Value.(ast.String)
		if !ok {
			return false
		}
		switch {
		case needKinds[string(kind)] && obj.Get(ast.StringTerm("key")) != nil:
			ri.needs[string(kind)] = true
		case effectKinds[string(kind)]:
			ri.effects[string(kind)] = true
			if typ := obj.Get(ast.StringTerm("type")); kind == "event.emit" && typ != nil {
				if s, ok := typ.Value.(ast.String); ok {
					ri.events[string(s)] = true
				}
			}
		}
		return false
	})
}

// ruleOf returns the rule path a data ref refers to (its longest prefix naming a rule)
// and that prefix's length.
func (pm *policyModel) ruleOf(ref ast.Ref) (string, int) {
	for n := len(ref); n > 1; n-- {
		if _, ok := pm.rules[ref[:n].String()]; ok {
			return ref[:n].String(), n
		}
	}
	return "", 0
}

// reach returns every rule reachable from start, not following stop.
func (pm *policyModel) reach(start, stop string) map[string]bool {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		if seen[p] || p == stop {
			return
		}
		ri, ok := pm.rules[p]
		if !ok {
			return
		}
		seen[p] = true
		for q := range ri.edges {
			visit(q)
		}
	}
	visit(start)
	return seen
}

type opFacts struct {
	args, needs, effects, events, codes, results map[string]bool
	opaque                                       bool
	producers                                    map[string]map[string]bool // code → errors functions
}

func (pm *policyModel) opFacts(rule string) opFacts {
	f := opFacts{args: map[string]bool{}, needs: map[string]bool{}, effects: map[string]bool{}, events: map[string]bool{},
		codes: map[string]bool{}, results: map[string]bool{}, producers: map[string]map[string]bool{}}
	reached := pm.reach(rule, "")
	for p := range reached {
		ri := pm.rules[p]
		for k := range ri.reads {
			f.args[k] = true
		}
		for k := range ri.needs {
			f.needs[k] = true
		}
		for k := range ri.effects {
			f.effects[k] = true
		}
		for k := range ri.events {
			f.events[k] = true
		}
		for k := range ri.codes {
			f.codes[k] = true
			if ri.pkg == errorsPkg && ri.name != "error" {
				if f.producers[k] == nil {
					f.producers[k] = map[string]bool{}
				}
				f.producers[k][p] = true
			}
		}
		if p != stepDone {
			for k := range ri.results {
				f.results[k] = true
			}
			f.opaque = f.opaque || ri.opaqueRs
		}
	}
	return f
}
