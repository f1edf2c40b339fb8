package nativegen

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ir"
)

// Config says what to generate.
type Config struct {
	Package    string
	Builtins   map[string]Builtin // what the runtime implements
	Source     string             // what the plan was built from (header)
	PlanSHA256 string
	// Prefix is prepended to every package-level name of the output (genPlans, sc, the
	// functions…), so that many plans can share one Go package, one file each.
	Prefix string
}

const rtImport = "github.com/grantwire/grantwire/core/nativeengine/internal/rt"

// Generate compiles the plan to Go source. It fails, naming them, on statements it does
// not know and on built-in functions the runtime does not implement.
func Generate(pol *ir.Policy, cfg Config) ([]byte, error) {
	g := &gen{pol: pol, cfg: cfg, funcIdx: map[string]int{}, nums: map[int]bool{}}
	if pol.Static == nil {
		pol.Static = &ir.Static{}
	}
	if pol.Funcs == nil {
		pol.Funcs = &ir.Funcs{}
	}
	for i, fn := range pol.Funcs.Funcs {
		if _, dup := g.funcIdx[fn.Name]; dup {
			return nil, fmt.Errorf("function %s is defined twice", fn.Name)
		}
		if len(fn.Params) == 0 {
			return nil, fmt.Errorf("function %s has no parameters (input and data are the first two)", fn.Name)
		}
		g.funcIdx[fn.Name] = i
	}
	if err := g.checkBuiltins(); err != nil {
		return nil, err
	}
	g.analyse()
	src, err := g.emit()
	if err != nil {
		return nil, err
	}
	out, ferr := format.Source(src)
	if ferr != nil {
		return src, fmt.Errorf("the generated code does not parse (a generator bug): %w", ferr)
	}
	return out, nil
}

type gen struct {
	pol       *ir.Policy
	cfg       Config
	funcIdx   map[string]int
	builtins  map[string]builtinUse // the plan's built-ins
	usesParam [][]bool              // usesParam[f][i]: function f reads its i-th parameter
	cacheable []bool
	nums      map[int]bool // string constants used as numbers
	dynamic   bool
	out       bytes.Buffer
	errs      []string
}

type builtinUse struct {
	Builtin
	void bool
}

// MissingBuiltinsError refuses a plan that calls built-in functions the runtime does not
// implement.
type MissingBuiltinsError struct {
	Names []string // sorted
}

func (e *MissingBuiltinsError) Error() string {
	return fmt.Sprintf("the policy uses built-in functions the native engine does not implement: %s (implement them in %s with a //rego:builtin comment, or keep them out of the policy)",
		strings.Join(e.Names, ", "), rtImport)
}

// checkBuiltins refuses a plan that calls built-in functions the runtime does not
// implement (or implements with another arity), and calls of functions that exist nowhere.
func (g *gen) checkBuiltins() error {
	g.builtins = map[string]builtinUse{}
	called := map[string]bool{}
	g.walkAll(func(s ir.Stmt) {
		if c, ok := s.(*ir.CallStmt); ok {
			called[c.Func] = true
		}
	})
	var missing []string
	for _, bf := range g.pol.Static.BuiltinFuncs {
		b, ok := g.cfg.Builtins[bf.Name]
		if !ok {
			// A built-in function the plan declares and never calls (a `with` replaced
			// every call) needs no implementation.
			if called[bf.Name] {
				missing = append(missing, bf.Name)
			}
			continue
		}
		if bf.Decl != nil && bf.Decl.Arity() != b.Arity {
			return fmt.Errorf("built-in function %s takes %d arguments in the plan, %d in the runtime (%s)", bf.Name, bf.Decl.Arity(), b.Arity, b.GoName)
		}
		g.builtins[bf.Name] = builtinUse{Builtin: b, void: bf.Decl != nil && bf.Decl.Result() == nil}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return &MissingBuiltinsError{Names: missing}
	}
	var unknown []string
	g.walkAll(func(s ir.Stmt) {
		if c, ok := s.(*ir.CallStmt); ok {
			if _, ok := g.funcIdx[c.Func]; ok {
				return
			}
			if _, ok := g.builtins[c.Func]; !ok {
				unknown = append(unknown, c.Func)
			}
		}
	})
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("the plan calls functions it neither defines nor declares as built-ins: %s", strings.Join(unknown, ", "))
	}
	return nil
}

func (g *gen) walkAll(f func(ir.Stmt)) {
	for _, p := range g.pol.Plans.Plans {
		walkBlocks(p.Blocks, f)
	}
	for _, fn := range g.pol.Funcs.Funcs {
		walkBlocks(fn.Blocks, f)
	}
}

func walkBlocks(bs []*ir.Block, f func(ir.Stmt)) {
	for _, b := range bs {
		walkBlock(b, f)
	}
}

func walkBlock(b *ir.Block, f func(ir.Stmt)) {
	if b == nil {
		return
	}
	for _, s := range b.Stmts {
		f(s)
		switch s := s.(type) {
		case *ir.BlockStmt:
			walkBlocks(s.Blocks, f)
		case *ir.ScanStmt:
			walkBlock(s.Block, f)
		case *ir.NotStmt:
			walkBlock(s.Block, f)
		case *ir.WithStmt:
			walkBlock(s.Block, f)
		}
	}
}

// evaluationBuiltins are the built-in functions whose result depends on the evaluation
// beyond its input and data (its time): a function calling them is never cached.
var evaluationBuiltins = map[string]bool{"time.now_ns": true}

// analyse finds the functions whose result depends on data only: they take input and
// data, and never read the input (nor pass it to a function that reads it, nor call one
// of the evaluationBuiltins). The engine computes those once and keeps them (the data
// document does not change).
func (g *gen) analyse() {
	fns := g.pol.Funcs.Funcs
	g.usesParam = make([][]bool, len(fns))
	for i, fn := range fns {
		g.usesParam[i] = make([]bool, len(fn.Params))
	}
	for changed := true; changed; {
		changed = false
		for i, fn := range fns {
			pos := map[ir.Local]int{}
			for j, p := range fn.Params {
				pos[p] = j
			}
			use := func(l ir.Local) {
				if j, ok := pos[l]; ok && !g.usesParam[i][j] {
					g.usesParam[i][j] = true
					changed = true
				}
			}
			walkBlocks(fn.Blocks, func(s ir.Stmt) {
				if c, ok := s.(*ir.CallStmt); ok {
					if evaluationBuiltins[c.Func] && len(fn.Params) > 0 {
						use(fn.Params[0]) // as if it read the input: never cached
					}
					if callee, ok := g.funcIdx[c.Func]; ok {
						for k, a := range c.Args {
							if l, ok := a.Value.(ir.Local); ok && (k >= len(g.usesParam[callee]) || g.usesParam[callee][k]) {
								use(l)
							}
						}
						return
					}
				}
				for _, l := range readsOf(s) {
					use(l)
				}
			})
		}
	}
	g.cacheable = make([]bool, len(fns))
	for i, fn := range fns {
		g.cacheable[i] = len(fn.Params) == 2 && !g.usesParam[i][0]
	}
}

// readsOf lists the locals a statement reads (not those of nested blocks), counting the
// targets whose definedness the generated code tests.
func readsOf(s ir.Stmt) []ir.Local {
	var out []ir.Local
	op := func(o ir.Operand) {
		if l, ok := o.Value.(ir.Local); ok {
			out = append(out, l)
		}
	}
	switch s := s.(type) {
	case *ir.ArrayAppendStmt:
		out = append(out, s.Array)
		op(s.Value)
	case *ir.AssignVarOnceStmt:
		out = append(out, s.Target)
		op(s.Source)
	case *ir.AssignVarStmt:
		op(s.Source)
	case *ir.CallDynamicStmt:
		out = append(out, s.Args...)
		out = append(out, s.Result)
		for _, p := range s.Path {
			op(p)
		}
	case *ir.CallStmt:
		for _, a := range s.Args {
			op(a)
		}
		out = append(out, s.Result)
	case *ir.DotStmt:
		op(s.Source)
		op(s.Key)
		if _, ok := s.Source.Value.(ir.Local); ok {
			out = append(out, s.Target)
		}
	case *ir.EqualStmt:
		op(s.A)
		op(s.B)
	case *ir.NotEqualStmt:
		op(s.A)
		op(s.B)
	case *ir.IsArrayStmt:
		op(s.Source)
	case *ir.IsObjectStmt:
		op(s.Source)
	case *ir.IsSetStmt:
		op(s.Source)
	case *ir.IsDefinedStmt:
		out = append(out, s.Source)
	case *ir.IsUndefinedStmt:
		out = append(out, s.Source)
	case *ir.LenStmt:
		op(s.Source)
	case *ir.ObjectInsertStmt:
		out = append(out, s.Object)
		op(s.Key)
		op(s.Value)
	case *ir.ObjectInsertOnceStmt:
		out = append(out, s.Object)
		op(s.Key)
		op(s.Value)
	case *ir.ObjectMergeStmt:
		out = append(out, s.A, s.B)
	case *ir.ResultSetAddStmt:
		out = append(out, s.Value)
	case *ir.ReturnLocalStmt:
		out = append(out, s.Source)
	case *ir.ScanStmt:
		out = append(out, s.Source, s.Key)
	case *ir.SetAddStmt:
		out = append(out, s.Set)
		op(s.Value)
	case *ir.WithStmt:
		out = append(out, s.Local)
		op(s.Value)
	}
	return out
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.out, format, args...) }

func (g *gen) emit() ([]byte, error) {
	src := g.cfg.Source
	if src == "" {
		src = "a plan"
	}
	g.p("// Code generated by internal/tools/nativegen from %s (plan sha256 %s). DO NOT EDIT.\n\n", src, g.cfg.PlanSHA256)
	g.p("package %s\n\nimport %q\n\n", g.cfg.Package, rtImport)

	plans := g.pol.Plans.Plans
	g.p("// %s are the policy's entrypoints: each returns its result set.\n", g.id("genPlans"))
	g.p("var %s = map[string]func(*rt.Eval, *rt.V, *rt.V) *rt.V{\n", g.id("genPlans"))
	for i, p := range plans {
		g.p("%q: %s,\n", p.Name, g.planName(i, p))
	}
	g.p("}\n\n")
	g.p("// %[1]s is the number of the policy's functions.\nconst %[1]s = %[2]d\n\n", g.id("genFuncCount"), len(g.pol.Funcs.Funcs))
	names := slices.Sorted(maps.Keys(g.builtins))
	g.p("// %[1]s lists the built-in functions the policy calls.\nvar %[1]s = []string{", g.id("genBuiltins"))
	for _, n := range names {
		g.p("%q,", n)
	}
	g.p("}\n\n")
	used := map[string]bool{}
	g.walkAll(func(s ir.Stmt) { used[strings.TrimPrefix(fmt.Sprintf("%T", s), "*ir.")] = true })
	stmts := slices.Sorted(maps.Keys(used))
	g.p("// %[1]s lists the IR statement types of the plan.\nvar %[1]s = []string{", g.id("genStatements"))
	for _, n := range stmts {
		g.p("%q,", n)
	}
	g.p("}\n\n")
	g.p("// %[1]s lists the functions computed once per engine (they read data, not input).\nvar %[1]s = []string{", g.id("genCached"))
	for i, fn := range g.pol.Funcs.Funcs {
		if g.cacheable[i] {
			g.p("%q,", fn.Name)
		}
	}
	g.p("}\n\n")

	var body bytes.Buffer
	for i, p := range plans {
		fg := g.newFunc()
		fg.plan(i, p)
		if err := fg.err(); err != nil {
			return nil, fmt.Errorf("plan %s: %w", p.Name, err)
		}
		body.Write(fg.out.Bytes())
	}
	for i, fn := range g.pol.Funcs.Funcs {
		fg := g.newFunc()
		fg.function(i, fn)
		if err := fg.err(); err != nil {
			return nil, fmt.Errorf("function %s: %w", fn.Name, err)
		}
		body.Write(fg.out.Bytes())
	}

	strs := g.pol.Static.Strings
	g.p("// %[1]s are the policy's string constants.\nvar %[1]s = [...]*rt.V{\n", g.id("sc"))
	for _, s := range strs {
		g.p("rt.StrConst(%s),\n", strconv.Quote(s.Value))
	}
	g.p("}\n\n")
	idx := make([]int, 0, len(g.nums))
	for i := range g.nums {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		if i < 0 || i >= len(strs) {
			return nil, fmt.Errorf("number constant %d is not a string constant of the plan", i)
		}
		g.p("var %s%d = rt.NumConst(%q)\n", g.id("nc"), i, strs[i].Value)
	}
	g.p("\n")
	if g.dynamic {
		g.p("// %s resolves the path of a dynamic call to a function of input and data.\n", g.id("genDynamic"))
		g.p("func %s(path string, ok bool) func(*rt.Eval, *rt.V, *rt.V) *rt.V {\nif !ok {\nreturn nil\n}\nswitch path {\n", g.id("genDynamic"))
		for i, fn := range g.pol.Funcs.Funcs {
			if len(fn.Path) > 0 && len(fn.Params) == 2 {
				g.p("case %q:\nreturn %s\n", strings.Join(fn.Path, "\x00"), g.funcName(i, fn))
			}
		}
		g.p("}\nreturn nil\n}\n\n")
	}
	g.out.Write(body.Bytes())
	return g.out.Bytes(), nil
}

// ruleOf names what an IR function computes as OPA's evaluator names it in a conflict:
// "rule data.a.b" for a rule (a function of input and data), "function data.a.f" for a
// function.
func ruleOf(fnc *ir.Func) string {
	var path []string // under data
	switch rest, ok := strings.CutPrefix(fnc.Name, "g0.data."); {
	case len(fnc.Path) > 1 && fnc.Path[0] == "g0": // the exact path, when the plan gives it
		path = fnc.Path[1:]
	case ok:
		path = strings.Split(rest, ".")
	default:
		return ""
	}
	var b strings.Builder
	b.WriteString("data")
	for _, p := range path {
		if isIdent(p) {
			b.WriteString("." + p)
		} else {
			b.WriteString("[" + strconv.Quote(p) + "]")
		}
	}
	if len(fnc.Params) > 2 {
		return "function " + b.String()
	}
	return "rule " + b.String()
}

func isIdent(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// id is a package-level name of the output.
func (g *gen) id(name string) string { return g.cfg.Prefix + name }

func (g *gen) planName(i int, p *ir.Plan) string {
	return fmt.Sprintf("%sp%d_%s", g.cfg.Prefix, i, ident(p.Name))
}

func (g *gen) funcName(i int, f *ir.Func) string {
	return fmt.Sprintf("%sf%d_%s", g.cfg.Prefix, i, ident(strings.TrimPrefix(f.Name, "g0.data.")))
}

// ident makes a readable Go identifier fragment of a Rego name.
func ident(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// fn generates one function or plan. Every IR block ends at a label; an undefined
// statement jumps to the label of the innermost block, a BreakStmt to that of the block
// it names. A ScanStmt is a loop that counts as two blocks, as in OPA's Wasm compiler: its
// body (jumping there continues with the next element) and the scan itself.
type fn struct {
	g       *gen
	emitted map[ir.Local]bool // locals read by the statements generated (reachable ones)
	out     bytes.Buffer
	stack   []string
	used    map[string]bool
	reach   bool
	n       int
	reads   map[ir.Local]bool
	decls   []string
	errs    []string
	files   []*ir.StringConst
	retFmt  string // how to return a local
	rule    string // what a conflict of AssignVarOnceStmt names: "rule data.a.b", "function data.a.f"
}

func (g *gen) newFunc() *fn {
	return &fn{g: g, used: map[string]bool{}, reach: true, reads: map[ir.Local]bool{}, files: g.pol.Static.Files}
}

func (f *fn) err() error {
	if len(f.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(f.errs, "; "))
}

func (f *fn) fail(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *fn) line(format string, args ...any) {
	if !f.reach {
		return
	}
	fmt.Fprintf(&f.out, format, args...)
	f.out.WriteByte('\n')
}

func (f *fn) raw(s string) { f.out.WriteString(s); f.out.WriteByte('\n') }

func (f *fn) label(prefix string) string {
	f.n++
	return fmt.Sprintf("%s%d", prefix, f.n)
}

func (f *fn) push(l string) { f.stack = append(f.stack, l) }
func (f *fn) pop()          { f.stack = f.stack[:len(f.stack)-1] }

func (f *fn) jumpTo(l string) string {
	f.used[l] = true
	return "goto " + l
}

// undef is what an undefined statement does: leave the innermost block.
func (f *fn) undef() string { return f.jumpTo(f.stack[len(f.stack)-1]) }

// place puts a label where control arrives when it is jumped to.
func (f *fn) place(l string) {
	if f.used[l] {
		f.raw(l + ":")
		f.reach = true
	}
}

func (f *fn) collectReads(blocks []*ir.Block) {
	walkBlocks(blocks, func(s ir.Stmt) {
		for _, l := range readsOf(s) {
			f.reads[l] = true
		}
	})
}

func (f *fn) local(l ir.Local) string { return "l" + strconv.Itoa(int(l)) }

// target names a local written by a statement ("" when nothing reads it).
// assign writes "t = rhs" (rhs formatted from args) for the statement's target t, unless
// nothing reads t.
func (f *fn) assign(target ir.Local, rhs string, args ...any) {
	if t := f.target(target); t != "" {
		f.line("%s = "+rhs, append([]any{t}, args...)...)
	}
}

func (f *fn) target(l ir.Local) string {
	if !f.reads[l] {
		return ""
	}
	return f.local(l)
}

func (f *fn) op(o ir.Operand) string {
	switch v := o.Value.(type) {
	case ir.Local:
		return f.local(v)
	case ir.Bool:
		if v {
			return "rt.True"
		}
		return "rt.False"
	case ir.StringIndex:
		if int(v) < 0 || int(v) >= len(f.g.pol.Static.Strings) {
			f.fail("string constant %d out of range", v)
			return "nil"
		}
		return fmt.Sprintf("%s[%d]", f.g.id("sc"), v)
	}
	f.fail("unknown operand %T", o.Value)
	return "nil"
}

// strConst returns the Go literal of a string-constant operand.
func (f *fn) strConst(o ir.Operand) (string, bool) {
	if v, ok := o.Value.(ir.StringIndex); ok && int(v) >= 0 && int(v) < len(f.g.pol.Static.Strings) {
		return strconv.Quote(f.g.pol.Static.Strings[v].Value), true
	}
	return "", false
}

func (f *fn) at(loc ir.Location) string {
	file := "?"
	if loc.File >= 0 && loc.File < len(f.files) {
		file = f.files[loc.File].Value
	}
	return strconv.Quote(fmt.Sprintf("%s:%d", file, loc.Row))
}

// declare writes the declarations of the function's locals (params excluded).
func (f *fn) declare(params []ir.Local, body []byte) {
	isParam := map[ir.Local]bool{}
	for _, p := range params {
		isParam[p] = true
	}
	var ls []int
	for l := range f.reads {
		if !isParam[l] {
			ls = append(ls, int(l))
		}
	}
	sort.Ints(ls)
	var names []string
	for _, l := range ls {
		names = append(names, f.local(ir.Local(l)))
	}
	var out bytes.Buffer
	if len(names) > 0 {
		fmt.Fprintf(&out, "var %s *rt.V\n", strings.Join(names, ", "))
	}
	for _, d := range f.decls {
		fmt.Fprintf(&out, "var %s\n", d)
	}
	out.Write(body)
	f.out = out
}

// twice generates a body until the locals it reads are stable: each time, only the
// locals read by the statements it generated (reachable ones, whose result is used) count
// as read, so that no local is declared and left unused.
func (f *fn) twice(gen func()) {
	for range 20 {
		f.emitted = map[ir.Local]bool{}
		gen()
		if len(f.emitted) == len(f.reads) {
			return
		}
		reads := f.emitted
		*f = fn{g: f.g, used: map[string]bool{}, reach: true, reads: reads, files: f.files}
	}
	f.fail("the locals read do not settle")
}

// dropped reports a statement that writes only a local nothing reads (it generates nothing).
func (f *fn) dropped(s ir.Stmt) bool {
	switch s := s.(type) {
	case *ir.AssignVarStmt:
		return !f.reads[s.Target]
	case *ir.LenStmt:
		return !f.reads[s.Target]
	case *ir.ObjectMergeStmt:
		return !f.reads[s.Target]
	}
	return false
}

func (f *fn) plan(i int, p *ir.Plan) {
	f.collectReads(p.Blocks)
	f.twice(func() { f.planBody(i, p) })
}

func (f *fn) planBody(i int, p *ir.Plan) {
	header := fmt.Sprintf("// %s\nfunc %s(ev *rt.Eval, l0, l1 *rt.V) *rt.V {\nrs := ev.Set(0)\n", p.Name, f.g.planName(i, p))
	f.retFmt = ""
	f.finish(header, p.Blocks, "return rs", []ir.Local{ir.Input, ir.Data})
}

// finish generates the blocks of a plan or function after its header, then its last
// return, and declares its locals but params.
func (f *fn) finish(header string, blocks []*ir.Block, ret string, params []ir.Local) {
	for _, b := range blocks {
		if !f.reach {
			break
		}
		f.wrapped(b)
	}
	f.line("%s", ret)
	body := f.out.Bytes()
	f.out = bytes.Buffer{}
	f.declare(params, body)
	b := f.out.Bytes()
	var out bytes.Buffer
	out.WriteString(header)
	out.Write(b)
	out.WriteString("}\n\n")
	f.out = out
}

func (f *fn) function(i int, fnc *ir.Func) {
	f.collectReads(fnc.Blocks)
	f.twice(func() { f.functionBody(i, fnc) })
}

func (f *fn) functionBody(i int, fnc *ir.Func) {
	name := f.g.funcName(i, fnc)
	f.rule = ruleOf(fnc)
	var params []string
	for _, p := range fnc.Params {
		params = append(params, f.local(p))
	}
	var header strings.Builder
	fmt.Fprintf(&header, "// %s", fnc.Name)
	if f.g.cacheable[i] {
		header.WriteString(" (data only: computed once per engine)")
	}
	fmt.Fprintf(&header, "\nfunc %s(ev *rt.Eval, %s *rt.V) *rt.V {\n", name, strings.Join(params, ", "))
	memo := len(fnc.Params) == 2
	switch {
	case f.g.cacheable[i]:
		fmt.Fprintf(&header, "if r, ok := ev.Cached(%d, %s); ok {\nreturn r\n}\n", i, name)
		f.retFmt = fmt.Sprintf("ev.SetCached(%d, ev.SetMemo(%d, %%s))", i, i)
	case memo:
		f.retFmt = fmt.Sprintf("ev.SetMemo(%d, %%s)", i)
	default:
		f.retFmt = "%s"
	}
	if memo {
		fmt.Fprintf(&header, "if r, ok := ev.Memo(%d); ok {\nreturn r\n}\n", i)
	}
	f.finish(header.String(), fnc.Blocks, "return nil", fnc.Params)
}

func (f *fn) wrapped(b *ir.Block) {
	l := f.label("b")
	f.push(l)
	f.block(b)
	f.pop()
	f.place(l)
}

func (f *fn) block(b *ir.Block) {
	if b == nil {
		return
	}
	for _, s := range b.Stmts {
		if !f.reach {
			return
		}
		f.stmt(s)
	}
}

func (f *fn) breakTarget(index int) (string, bool) {
	if index < 0 || index >= len(f.stack) {
		f.fail("a break out of %d blocks where %d enclose it", index+1, len(f.stack))
		return "", false
	}
	return f.stack[len(f.stack)-1-index], true
}

func (f *fn) stmt(s ir.Stmt) {
	if !f.dropped(s) {
		for _, l := range readsOf(s) {
			f.emitted[l] = true
		}
	}
	switch s := s.(type) {
	case *ir.NopStmt:
	case *ir.BlockStmt:
		for _, b := range s.Blocks {
			if !f.reach {
				break
			}
			f.wrapped(b)
		}
	case *ir.BreakStmt:
		if l, ok := f.breakTarget(int(s.Index)); ok {
			f.line("%s", f.jumpTo(l))
			f.reach = false
		}
	case *ir.ReturnLocalStmt:
		if f.retFmt == "" {
			f.fail("ReturnLocalStmt in a plan")
			return
		}
		f.line("return "+f.retFmt, f.local(s.Source))
		f.reach = false
	case *ir.ResultSetAddStmt:
		f.line("rt.ResultSetAdd(rs, %s)", f.local(s.Value))
	case *ir.CallStmt:
		f.call(s)
	case *ir.CallDynamicStmt:
		f.callDynamic(s)
	case *ir.WithStmt:
		f.with(s)
	case *ir.ScanStmt:
		f.scan(s)
	case *ir.NotStmt:
		l := f.label("n")
		f.push(l)
		f.block(s.Block)
		f.pop()
		if f.reach {
			f.line("%s", f.undef()) // the negated block held: not is undefined
			f.reach = false
		}
		f.place(l)
	case *ir.AssignVarStmt:
		if t := f.target(s.Target); t != "" {
			if src := f.op(s.Source); src != t {
				f.line("%s = %s", t, src)
			}
		}
	case *ir.AssignVarOnceStmt:
		t := f.local(s.Target)
		f.line("%s = rt.AssignOnce(%s, %s, %s, %q)", t, t, f.op(s.Source), f.at(s.Location), f.rule)
	case *ir.AssignIntStmt:
		f.assign(s.Target, "ev.Int(%d)", s.Value)
	case *ir.ResetLocalStmt:
		f.assign(s.Target, "nil")
	case *ir.MakeNullStmt:
		f.assign(s.Target, "rt.Null")
	case *ir.MakeNumberIntStmt:
		f.assign(s.Target, "ev.Int(%d)", s.Value)
	case *ir.MakeNumberRefStmt:
		if t := f.target(s.Target); t != "" {
			f.g.nums[s.Index] = true
			f.line("%s = %s%d", t, f.g.id("nc"), s.Index)
		}
	case *ir.MakeArrayStmt:
		f.assign(s.Target, "ev.Array(%d)", max(s.Capacity, 0))
	case *ir.MakeObjectStmt:
		f.assign(s.Target, "ev.Object(0)")
	case *ir.MakeSetStmt:
		f.assign(s.Target, "ev.Set(0)")
	case *ir.ArrayAppendStmt:
		f.line("rt.ArrayAppend(%s, %s)", f.local(s.Array), f.op(s.Value))
	case *ir.ObjectInsertStmt:
		f.line("rt.ObjectInsert(%s, %s, %s)", f.local(s.Object), f.op(s.Key), f.op(s.Value))
	case *ir.ObjectInsertOnceStmt:
		f.line("rt.ObjectInsertOnce(%s, %s, %s, %s)", f.local(s.Object), f.op(s.Key), f.op(s.Value), f.at(s.Location))
	case *ir.ObjectMergeStmt:
		if t := f.target(s.Target); t != "" {
			f.line("%s = ev.Merge(%s, %s)", t, f.local(s.A), f.local(s.B))
		}
	case *ir.SetAddStmt:
		f.line("rt.SetAdd(%s, %s)", f.local(s.Set), f.op(s.Value))
	case *ir.LenStmt:
		if t := f.target(s.Target); t != "" {
			f.line("%s = ev.Length(%s)", t, f.op(s.Source))
		}
	case *ir.DotStmt:
		if _, ok := s.Source.Value.(ir.Local); !ok {
			f.line("%s", f.undef()) // a constant has no members (OPA's Wasm compiler: br 0)
			f.reach = false
			return
		}
		t, src := f.local(s.Target), f.op(s.Source)
		if k, ok := f.strConst(s.Key); ok {
			f.line("if %s = rt.DotStr(%s, %s); %s == nil {\n%s\n}", t, src, k, t, f.undef())
		} else {
			f.line("if %s = rt.Dot(%s, %s); %s == nil {\n%s\n}", t, src, f.op(s.Key), t, f.undef())
		}
	case *ir.EqualStmt:
		f.line("if !%s {\n%s\n}", f.eq(s.A, s.B), f.undef())
	case *ir.NotEqualStmt:
		f.line("if %s {\n%s\n}", f.eq(s.A, s.B), f.undef())
	case *ir.IsArrayStmt:
		f.isType("IsArray", s.Source)
	case *ir.IsObjectStmt:
		f.isType("IsObject", s.Source)
	case *ir.IsSetStmt:
		f.isType("IsSet", s.Source)
	case *ir.IsDefinedStmt:
		f.line("if %s == nil {\n%s\n}", f.local(s.Source), f.undef())
	case *ir.IsUndefinedStmt:
		f.line("if %s != nil {\n%s\n}", f.local(s.Source), f.undef())
	default:
		var buf bytes.Buffer
		_ = ir.Pretty(&buf, s)
		f.fail("unsupported IR statement %T (%s) at %s", s, strings.TrimSpace(buf.String()), f.at(*s.GetLocation()))
	}
}

func (f *fn) eq(a, b ir.Operand) string {
	if k, ok := f.strConst(b); ok {
		if _, isConst := a.Value.(ir.Local); isConst {
			return fmt.Sprintf("rt.EqStr(%s, %s)", f.op(a), k)
		}
	}
	if k, ok := f.strConst(a); ok {
		if _, isConst := b.Value.(ir.Local); isConst {
			return fmt.Sprintf("rt.EqStr(%s, %s)", f.op(b), k)
		}
	}
	if v, ok := b.Value.(ir.Bool); ok {
		if _, isLocal := a.Value.(ir.Local); isLocal {
			return fmt.Sprintf("rt.EqBool(%s, %v)", f.op(a), bool(v))
		}
	}
	if v, ok := a.Value.(ir.Bool); ok {
		if _, isLocal := b.Value.(ir.Local); isLocal {
			return fmt.Sprintf("rt.EqBool(%s, %v)", f.op(b), bool(v))
		}
	}
	return fmt.Sprintf("rt.Equal(%s, %s)", f.op(a), f.op(b))
}

func (f *fn) isType(check string, src ir.Operand) {
	if _, ok := src.Value.(ir.Local); !ok {
		f.line("%s", f.undef()) // a constant operand is a string or a boolean
		f.reach = false
		return
	}
	f.line("if !rt.%s(%s) {\n%s\n}", check, f.op(src), f.undef())
}

func (f *fn) call(s *ir.CallStmt) {
	var args []string
	for _, a := range s.Args {
		args = append(args, f.op(a))
	}
	t := f.local(s.Result)
	if idx, ok := f.g.funcIdx[s.Func]; ok {
		callee := f.g.pol.Funcs.Funcs[idx]
		if len(s.Args) != len(callee.Params) {
			f.fail("call of %s with %d arguments, it takes %d", s.Func, len(s.Args), len(callee.Params))
			return
		}
		f.line("if %s = %s(ev, %s); %s == nil {\n%s\n}", t, f.g.funcName(idx, callee), strings.Join(args, ", "), t, f.undef())
		return
	}
	b := f.g.builtins[s.Func]
	if len(s.Args) != b.Arity {
		f.fail("call of built-in %s with %d arguments, it takes %d", s.Func, len(s.Args), b.Arity)
		return
	}
	// The string operands: a constant is passed as its Go literal; any other is checked
	// (undefined unless a string) in an if-else chain whose last branch makes the call
	// with its text.
	var checks []string
	operands, checked := slices.Clone(args), slices.Clone(b.Strings)
	for i, str := range b.Strings {
		if lit, ok := f.strConst(s.Args[i]); str && ok {
			args[i], checked[i] = lit, false
		} else if str {
			s := fmt.Sprintf("s%d", i)
			checks = append(checks, fmt.Sprintf("if %s, ok := rt.Str(%s); !ok {\n%s\n} else ", s, args[i], f.undef()))
			args[i] = s
		}
	}
	call := fmt.Sprintf("rt.%s(%s)", b.GoName, strings.Join(args, ", "))
	if b.Method {
		call = fmt.Sprintf("ev.%s(%s)", b.GoName, strings.Join(args, ", "))
	}
	if b.void { // a result nobody reads: an operand of another type skips the call
		call = "_ = " + call
		for i := len(checked) - 1; i >= 0; i-- {
			if checked[i] {
				call = fmt.Sprintf("if s%d, ok := rt.Str(%s); ok {\n%s\n}", i, operands[i], call)
			}
		}
		f.line("%s", call)
		return
	}
	f.line("%sif %s = %s; %s == nil {\n%s\n}", strings.Join(checks, ""), t, call, t, f.undef())
}

// callDynamic resolves a path to a function of input and data at run time. As in OPA's
// Wasm compiler, a path that names no function is undefined, and an undefined result of
// the function leaves three blocks more (the planner's block structure around the call).
func (f *fn) callDynamic(s *ir.CallDynamicStmt) {
	f.g.dynamic = true
	if len(s.Args) != 2 {
		f.fail("dynamic call with %d arguments (OPA's Wasm ABI calls with input and data)", len(s.Args))
		return
	}
	out, ok := f.breakTarget(3)
	if !ok {
		return
	}
	var path []string
	for _, p := range s.Path {
		path = append(path, f.op(p))
	}
	t := f.local(s.Result)
	f.line("if dyn := %s(rt.PathKey(%s)); dyn == nil {\n%s\n} else if %s = dyn(ev, %s, %s); %s == nil {\n%s\n}",
		f.g.id("genDynamic"), strings.Join(path, ", "), f.undef(), t, f.local(s.Args[0]), f.local(s.Args[1]), t, f.jumpTo(out))
}

func (f *fn) with(s *ir.WithStmt) {
	n := f.label("")
	ws, sv, wu := "ws"+n, "sv"+n, "wu"+n
	f.decls = append(f.decls, ws+" uint64", sv+" *rt.V", wu+" bool")
	loc := f.local(s.Local)
	f.line("%s = ev.PushWith()", ws)
	f.line("%s = %s", sv, loc)
	if len(s.Path) == 0 {
		f.line("%s = %s", loc, f.op(s.Value))
	} else {
		var path []string
		for _, p := range s.Path {
			if p < 0 || p >= len(f.g.pol.Static.Strings) {
				f.fail("with path element %d is not a string constant", p)
				return
			}
			path = append(path, fmt.Sprintf("%s[%d]", f.g.id("sc"), p))
		}
		f.line("%s = ev.Upsert(%s, []*rt.V{%s}, %s)", loc, loc, strings.Join(path, ", "), f.op(s.Value))
	}
	f.line("%s = true", wu)
	l := f.label("w")
	f.push(l)
	f.block(s.Block)
	f.pop()
	f.line("%s = false", wu)
	f.place(l)
	f.line("%s = %s", loc, sv)
	f.line("ev.PopWith(%s)", ws)
	f.line("if %s {\n%s\n}", wu, f.undef())
}

func (f *fn) scan(s *ir.ScanStmt) {
	n := f.label("")
	i := "i" + n
	end, cont := "e"+n, "c"+n
	val := f.target(s.Value)
	if val == "" {
		val = "_"
	}
	key := f.local(s.Key)
	f.line("for %s := 0; ; %s++ {", i, i)
	f.line("if %s, %s = ev.ScanAt(%s, %s); %s == nil {\nbreak\n}", key, val, f.local(s.Source), i, key)
	f.push(end)
	f.push(cont)
	f.block(s.Block)
	f.pop()
	f.pop()
	f.place(cont)
	f.raw("}")
	f.reach = true
	f.place(end)
}
