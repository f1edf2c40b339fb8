package irtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	opast "github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/types"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/grantwire/grantwire/core/nativeengine/internal/irtest"
	"github.com/grantwire/grantwire/internal/jsonx"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "seed of the generated arguments (0: a fresh one, printed)")
	casesFlag = flag.Int("cases", 0, "argument tuples per built-in function (default 300; 60 with -short)")
)

// data is the data document of both evaluations: base documents the statements merge
// with rules (data.irtest.tree) and replace (data.cfg).
const data = `{"cfg": {"v": 1}, "irtest": {"tree": {"b": 1, "v": {"x": 1}}}}`

// oracle is OPA's Go evaluator on the test policy.
type oracle struct {
	queries map[string]rego.PreparedEvalQuery
}

func newOracle(t *testing.T) *oracle {
	t.Helper()
	ctx := context.Background()
	files, err := filepath.Glob("policy/*.rego")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test policy: %v", err)
	}
	var d map[string]any
	if err := util.UnmarshalJSON([]byte(data), &d); err != nil {
		t.Fatal(err)
	}
	base := []func(*rego.Rego){rego.Store(inmem.NewFromObject(d)), rego.StrictBuiltinErrors(false)}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, rego.Module(f, string(src)))
	}
	o := &oracle{queries: map[string]rego.PreparedEvalQuery{}}
	for _, ep := range []string{"irtest/eval", "irtest/statements"} {
		q, err := rego.New(append(base, rego.Query("data."+strings.ReplaceAll(ep, "/", ".")))...).PrepareForEval(ctx)
		if err != nil {
			t.Fatal(err)
		}
		o.queries[ep] = q
	}
	return o
}

// eval asks OPA. OPA's evaluator panics on some arguments (bits.lsh by 2^100): that is an
// error here, the outcome the native engine must give.
func (o *oracle) eval(ep string, input []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("OPA panicked: %v", r)
		}
	}()
	in, err := opast.ValueFromReader(bytes.NewReader(input))
	if err != nil {
		return nil, err
	}
	rs, err := o.queries[ep].Eval(context.Background(), rego.EvalParsedInput(in))
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, irtest.ErrUndefined
	}
	return jsonx.Append(nil, rs[0].Expressions[0].Value)
}

// outcome is what a comparison looks at: the value, undefined, or an error (whose text
// differs between engines).
func outcome(out []byte, err error) string {
	switch {
	case errors.Is(err, irtest.ErrUndefined):
		return "undefined"
	case err != nil:
		return "error"
	}
	return string(out)
}

func mustProgram(t *testing.T) *irtest.Program {
	t.Helper()
	p, err := irtest.New([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Value pools: JSON texts by the type a built-in function's declaration asks for. They hold
// the edge cases of each family: Unicode and invalid-looking text, numbers that are ints,
// floats, big, written with exponents or zero fractions, nested and mixed collections.
var (
	strPool = []string{
		`""`, `"a"`, `"abc"`, `"Hello, World"`, `"héllo wörld"`, `"日本語テキスト"`, `"a.b.c"`, `"a/b/c"`, `"/a/b"`,
		`"  pad  "`, `"\t\n x \r"`, `"aaa"`, `"%41%20b"`, `"a+b c"`, `"YWJj"`, `"YWJjZA=="`, `"YWJjZA"`, `"_-_-"`,
		`"616263"`, `"6g"`, `"{\"a\":1}"`, `"[1,2"`, `"null"`, `"[1, {\"b\": [true, null]}]"`, `"1e3"`, `"12"`, `"-7"`,
		`"0x10"`, `"+5"`, `".5"`, `"inf"`, `"NaN"`, `"1_000"`, `"007"`, `"1e99999"`, `"a*b"`, `"*.example.com"`, `"foo.example.com"`,
		`"[a-c]"`, `"^a+$"`, `"(a)(b)?"`, `"a|"`, `"("`, `"\\d+"`, `"10.0.0.0/8"`, `"10.1.2.3"`, `"::1"`,
		`"2001:db8::/32"`, `"2001:db8::1"`, `"192.168.0.0/16"`, `"192.168.1.0/24"`, `"::ffff:10.1.2.3"`, `"a=1&b=2&a=3"`,
		`"%zz"`, `"<b>&amp;</b>"`, `"\u2028"`, `"x\"y\\z"`, `"\u0000\u001f"`, `"~1a~0b"`, `"%d-%s-%v"`, `"%v"`, `"%.2f"`,
		`"%x"`, `"%5d|%-5s|"`, `"ẞß"`, `"ǅ"`, `"ﬀ"`, `"b"`, `"."`, `","`, `"a,b,,c"`, `"🙂x🙂"`, `"{a,b}*"`,
		`"?"`, `"**"`, `"a.*"`, `"1.2.3"`, `"v1.0.0-alpha.1+build.5"`, `"1.0.0-rc.1"`, `"1.0.0-0a.b"`, `"01.2.3"`,
		`"10Ki"`, `"5MB"`, `"1.5G"`, `"3m"`, `"250mi"`, `"2e3k"`, `"f47ac10b-58cc-4372-a567-0e02b2c3d479"`,
		`"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`, `"{6ba7b810-9dad-21d1-80b4-00c04fd430c8}"`,
		`"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwibiI6WzEsMl19._Jzk3jr1mOyNpUFjxo84eFknHekGQ7delT-JjrOgg8o"`,
		`"eyJhbGciOiJIUzUxMiJ9.eyJzdWIiOiIxIiwibiI6WzEsMl19.z1wlLBjYs4Oj4nPeu2l_TxWcwQysoQpXP4cgussn5rw3HsdPXqCv-sVGu0_6MQvjtM_S5jyalJHWmtsxavIzOw"`,
		`"/a/{[0-9]+}/c"`, `"/a/1/c"`, `"{"`, `"}"`, `"a*b?c"`, `"[a-c]x"`,
		`"https://u:p@example.com:8443/a%2Fb/c?x=1&y#frag"`, `"http://[::1]:80/"`, `"mailto:a@b"`, `"http://a b"`, `"%zz"`,
	}
	numPool = []string{
		`0`, `1`, `-1`, `2`, `3`, `7`, `8`, `10`, `16`, `100`, `2147483647`, `2147483648`, `-2147483649`,
		`9007199254740993`, `1e3`, `1.5`, `-2.5`, `0.1`, `2.0`, `1e30`, `12345678901234567890123`, `0.5`, `-0.5`,
		`3.14159`, `1e-7`, `-0`, `4`, `64`, `1.25e2`,
	}
	arrPool = []string{
		`[]`, `[1,2,3]`, `[3,1,2]`, `["b","a","c"]`, `[1,"a",null,true]`, `[[1,2],[3]]`, `[1,[2,[3]]]`, `["x","y","x"]`,
		`[true,true]`, `[true,false]`, `[{"a":1},{"a":2}]`, `[1.0,1]`, `["a"]`, `["a","b"]`, `[".", "/"]`, `["a/b","c"]`,
		`[["a","b"],["c"]]`, `[{"a":{"b":1}},{"a":{"c":2}}]`, `[0, 2]`, `["10.0.0.0/8", "192.168.1.0/24"]`, `[1, 2.5, -3]`,
		`["%41", "a b"]`, `[[1, "x"], ["1", "y"], [[1], "z"]]`, `["a", 1]`,
		`["192.0.2.112/30", "192.0.2.116/31", "192.0.2.118/31"]`, `["10.0.0.1", "10.0.0.0/8", "2001:db8::/33", "2001:db8:8000::/33"]`,
		`[{"op": "add", "path": "/a", "value": 1}]`, `[{"op": "remove", "path": "/0"}]`, `[{"op": "replace", "path": "", "value": 3}]`,
		`[{"op": "test", "path": "/a", "value": 1}, {"op": "copy", "from": "/a", "path": "/b"}]`,
		`[{"op": "move", "from": "/a", "path": "/c/d"}]`, `[{"op": "add", "path": ["x", "-"], "value": [1]}]`,
	}
	objPool = []string{
		`{}`, `{"a":1}`, `{"a":{"b":1},"c":2}`, `{"b":2,"a":1}`, `{"a":{"x":1},"b":[1]}`, `{"x":"1","y":"2"}`,
		`{"a":"b"}`, `{"a":["b","c"],"b":["c"],"c":[]}`, `{"a":["b"],"b":["a"]}`, `{"a":{"b":{"c":3}}}`, `{"a":null}`,
		`{"q":["1","2"],"r":"x y"}`, `{"a":"A","b":"B"}`, `{"0":"zero","1":"one"}`,
		`{"pretty":true}`, `{"indent":"  ","prefix":">"}`, `{"pretty":false,"indent":"x"}`, `{"x":[1,2],"a":{"b":[]}}`,
	}
	otherPool = []string{`null`, `true`, `false`}
)

func allPools() []string {
	return slices.Concat(strPool, numPool, arrPool, objPool, otherPool)
}

func poolOf(t types.Type) []string {
	switch tt := t.(type) {
	case types.String:
		return strPool
	case types.Number:
		return numPool
	case *types.Array:
		return arrPool
	case *types.Object:
		return objPool
	case *types.Set:
		return arrPool // made sets
	case types.Null, types.Boolean:
		return otherPool
	case types.Any:
		var out []string
		for _, x := range tt {
			out = append(out, poolOf(x)...)
		}
		if len(out) == 0 {
			return allPools()
		}
		return out
	}
	return allPools()
}

type builtinCase struct {
	args       []string
	sets, objs []int
}

func (c builtinCase) input(name string) []byte {
	return fmt.Appendf(nil, `{"f":%q,"args":[%s],"sets":%s,"objs":%s}`, name, strings.Join(c.args, ","), ints(c.sets), ints(c.objs))
}

func ints(xs []int) string {
	b, _ := json.Marshal(append([]int{}, xs...))
	return string(b)
}

// smallInts replaces the number pool where big numbers make OPA run out of memory or
// time (a range of 10^30 numbers, a shift by 2^31 bits).
var smallInts = []string{`-3`, `-1`, `0`, `1`, `2`, `3`, `7`, `8`, `10`, `64`, `2.0`, `1.5`}

var smallArgs = map[string]bool{"bits.lsh": true, "numbers.range": true, "numbers.range_step": true}

// ownPools replace every pool for some functions: a large network has millions of
// addresses (net.cidr_expand); strings drawn at random are seldom all versions, or
// templates with delimiters of one character.
var ownPools = map[string][]string{
	"net.cidr_expand": {`"10.0.0.0/30"`, `"192.168.1.8/29"`, `"::1/127"`, `"2001:db8::/126"`, `"10.0.0.1/32"`, `"x"`, `"10.0.0.0/33"`, `1`},
	"semver.compare": {`"1.2.3"`, `"1.2.4"`, `"v1.2.3"`, `"1.10.0"`, `"1.2.3-alpha"`, `"1.2.3-alpha.1"`, `"1.2.3-alpha.beta"`,
		`"1.2.3-1"`, `"1.2.3-rc.1+build"`, `"1.2.3+meta"`, `"01.2.3"`, `"1.2"`, `"x"`, `1`},
	"regex.template_match": {`"/a/{[0-9]+}/c"`, `"/a/12/c"`, `"{"`, `"}"`, `"<"`, `">"`, `"a<b+>c"`, `"abbc"`, `"{a"`,
		`"x{(}"`, `"{{a}}"`, `"a"`, `"*"`, `1`},
}

// cidrs are the addresses and networks of the net.* functions.
var cidrs = []string{
	`"10.0.0.0/8"`, `"10.1.2.3"`, `"10.1.0.0/16"`, `"::1"`, `"2001:db8::/32"`, `"2001:db8::1"`, `"2001:db8:1::/48"`,
	`"192.168.0.0/16"`, `"192.168.1.0/24"`, `"192.168.1.7"`, `"::ffff:10.1.2.3"`, `"::ffff:10.0.0.0/104"`, `"0.0.0.0/0"`,
	`"::/0"`, `"10.0.0.0/33"`, `"256.1.1.1"`, `"10.0.0.0/8 "`,
}

// cases draws argument tuples for a function: mostly of the types its declaration asks
// for, sometimes of any type, arrays sometimes made sets (or objects of their pairs).
func cases(rng *rand.Rand, name string, decl *types.Function, n int) []builtinCase {
	args := decl.FuncArgs().Args
	poolOf := poolOf
	if smallArgs[name] {
		poolOf = func(types.Type) []string { return smallInts }
	}
	own, hasOwn := ownPools[name]
	if hasOwn {
		poolOf = func(types.Type) []string { return own }
	}
	var out []builtinCase
	if len(args) == 1 {
		for _, v := range poolOf(args[0]) {
			out = append(out, builtinCase{args: []string{v}})
			if strings.HasPrefix(v, "[") {
				out = append(out, builtinCase{args: []string{v}, sets: []int{0}})
			}
		}
	}
	for range n {
		var c builtinCase
		for i, a := range args {
			pool := poolOf(a)
			switch r := rng.IntN(5); {
			case hasOwn:
			case strings.HasPrefix(name, "net.") && r > 0:
				pool = cidrs
			case r == 0 && !smallArgs[name]:
				pool = allPools()
			}
			v := pool[rng.IntN(len(pool))]
			c.args = append(c.args, v)
			if strings.HasPrefix(v, "[") {
				_, isSet := a.(*types.Set)
				switch r := rng.IntN(10); {
				case isSet && r < 8, r == 0:
					c.sets = append(c.sets, i)
				case r == 1:
					c.objs = append(c.objs, i)
				}
			}
		}
		out = append(out, c)
	}
	return out
}

func seed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (reproduce with: go test ./core/nativeengine/internal/irtest -run %s -args -seed=%d)", s, t.Name(), s)
	return s
}

// TestBuiltins calls every built-in function of the runtime, through the generated code,
// with generated arguments, and demands OPA's value, or undefined where OPA is undefined.
func TestBuiltins(t *testing.T) {
	o := newOracle(t)
	p := mustProgram(t)
	n := *casesFlag
	if n == 0 {
		n = 300
		if testing.Short() {
			n = 60
		}
	}
	rng := rand.New(rand.NewPCG(seed(t), 15))
	names := irtest.Builtins()
	total := 0
	for _, name := range names {
		bi := opast.BuiltinMap[name]
		if bi == nil {
			t.Errorf("%s is not an OPA built-in function", name)
			continue
		}
		defined, failures := 0, 0
		for _, c := range cases(rng, name, bi.Decl, n) {
			in := c.input(name)
			want := outcome(o.eval("irtest/eval", in))
			got := outcome(p.Eval(context.Background(), "irtest/eval", in))
			total++
			if want != "undefined" {
				defined++
			}
			if got != want {
				t.Errorf("%s: input %s\n native: %s\n opa:    %s", name, in, got, want)
				if failures++; failures > 3 {
					break
				}
			}
		}
		if defined == 0 {
			t.Errorf("%s: no generated call was defined (the cases test nothing)", name)
		}
	}
	t.Logf("%d calls of %d built-in functions", total, len(names))
}

// TestEveryBuiltinTested: the test policy calls every built-in function the runtime
// implements (its //rego:builtin functions), so TestBuiltins covers them all.
func TestEveryBuiltinTested(t *testing.T) {
	implemented := runtimeBuiltins(t)
	called := map[string]bool{}
	for _, b := range irtest.Builtins() {
		called[b] = true
	}
	for _, b := range implemented {
		if !called[b] && !deprecated[b] && !contextual[b] {
			t.Errorf("the runtime implements %s but the test policy never calls it (add it to policy/builtins.rego)", b)
		}
	}
}

// deprecated built-in functions Rego v1 refuses (TestDeprecated covers them).
var deprecated = map[string]bool{"all": true, "any": true, "net.cidr_overlap": true, "re_match": true, "set_diff": true}

// contextual built-in functions answer from the evaluation, not their arguments (its time,
// the runtime's information): the runtime's TestTimeAndRuntime covers them.
var contextual = map[string]bool{"time.now_ns": true, "opa.runtime": true}

func runtimeBuiltins(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../rt", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Doc != nil {
					for _, c := range fd.Doc.List {
						if name, ok := strings.CutPrefix(c.Text, "//rego:builtin "); ok {
							out = append(out, strings.TrimSpace(name))
						}
					}
				}
			}
		}
	}
	if len(out) < 100 {
		t.Fatalf("found only %d built-in functions in the runtime", len(out))
	}
	return out
}

// TestStatements evaluates the rules of policy/statements.rego on many inputs and demands
// OPA's values: with, dynamic calls, merges, unification, scans, conflicts.
func TestStatements(t *testing.T) {
	o := newOracle(t)
	p := mustProgram(t)
	rng := rand.New(rand.NewPCG(seed(t), 16))
	fields := map[string][]string{
		"n":        {`0`, `1`, `5`, `10`, `11`, `-3`, `2.5`, `"x"`},
		"k":        {`"a"`, `"b"`, `"c"`, `"d"`, `"p"`, `1`},
		"pair":     {`[1,2]`, `[1]`, `"x"`, `[[1],{"a":2}]`},
		"obj":      {`{"x":1,"y":2}`, `{"x":1}`, `{"x":1,"y":2,"z":3}`, `[]`},
		"nums":     {`[1,2,3,4]`, `[-1,200]`, `[]`, `[2,2,4]`, `"x"`, `{"a":2,"b":3}`},
		"tags":     {`["p","q"]`, `[]`, `["p",1]`, `["long tag"]`},
		"flag":     {`true`, `false`},
		"p":        {`{"q":{"r":1}}`, `{"q":3}`, `"x"`},
		"conflict": {`"complete"`, `"object"`, `"none"`},
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	errs, seen := 0, map[string]bool{}
	for range 600 {
		var parts []string
		for _, k := range keys {
			if rng.IntN(4) > 0 {
				vs := fields[k]
				parts = append(parts, fmt.Sprintf("%q:%s", k, vs[rng.IntN(len(vs))]))
			}
		}
		in := []byte("{" + strings.Join(parts, ",") + "}")
		want := outcome(o.eval("irtest/statements", in))
		got := outcome(p.Eval(context.Background(), "irtest/statements", in))
		if !seen[want] && testing.Verbose() && len(seen) < 8 {
			t.Logf("%s\n => %s", in, want)
		}
		seen[want] = true
		if want == "error" {
			errs++
		}
		if got != want {
			t.Errorf("input %s\n native: %s\n opa:    %s", in, got, want)
			if t.Failed() && len(t.Name()) > 0 && errs > 5 {
				break
			}
		}
	}
	if errs == 0 || len(seen) < 50 {
		t.Errorf("the inputs exercised too little: %d errors, %d distinct outcomes", errs, len(seen))
	}
}

func isStruct(ts *ast.TypeSpec) bool {
	_, ok := ts.Type.(*ast.StructType)
	return ok
}

// TestEveryStatementTested: the test policy's plan uses every statement type of OPA's ir
// package (read from its source, so a statement OPA adds fails this test) but NopStmt,
// which the planner never emits.
func TestEveryStatementTested(t *testing.T) {
	pkg, err := build.Import("github.com/open-policy-agent/opa/v1/ir", ".", build.FindOnly)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(pkg.Dir, "ir.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok {
			for _, s := range gd.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && strings.HasSuffix(ts.Name.Name, "Stmt") && isStruct(ts) {
					all = append(all, ts.Name.Name)
				}
			}
		}
	}
	if len(all) < 30 {
		t.Fatalf("found only %d statement types in %s", len(all), pkg.Dir)
	}
	used := irtest.Statements()
	for _, s := range all {
		if s != "NopStmt" && !slices.Contains(used, s) {
			t.Errorf("the test policy's plan has no %s (add a rule that makes the planner emit one)", s)
		}
	}
	t.Logf("%d statement types, %d used by the test policy", len(all), len(used))
}
