package rt_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// TestDeprecated compares the deprecated built-in functions policy/capabilities.json
// still admits (Rego v1 refuses them, so the test policy of package irtest cannot call
// them) with OPA's evaluator in Rego v0.
func TestDeprecated(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		call string // a v0 expression on input.a and input.b
		f    func(ev *rt.Eval, a, b *rt.V) *rt.V
		args [][2]string
	}{
		{"re_match(input.a, input.b)", strings2((*rt.Eval).BiReMatch), [][2]string{
			{`"^a+$"`, `"aaa"`}, {`"^a+$"`, `"b"`}, {`"("`, `"x"`}, {`1`, `"x"`}, {`"a"`, `2`}, {`"日本"`, `"日本語"`},
		}},
		{"set_diff(cast_set(input.a), cast_set(input.b))", func(ev *rt.Eval, a, b *rt.V) *rt.V { return ev.BiSetDiff(set(ev, a), set(ev, b)) }, [][2]string{
			{`[1,2,3]`, `[2]`}, {`[]`, `[1]`}, {`["a",1]`, `["a",1]`}, {`[1.0,2]`, `[1]`},
		}},
		{"any(input.a)", func(ev *rt.Eval, a, _ *rt.V) *rt.V { return ev.BiAny(a) }, [][2]string{
			{`[]`, `0`}, {`[false,true]`, `0`}, {`[1,"true"]`, `0`}, {`"x"`, `0`}, {`[false]`, `0`},
		}},
		{"all(input.a)", func(ev *rt.Eval, a, _ *rt.V) *rt.V { return ev.BiAll(a) }, [][2]string{
			{`[]`, `0`}, {`[true,true]`, `0`}, {`[true,1]`, `0`}, {`{}`, `0`}, {`[false]`, `0`},
		}},
		{"net.cidr_overlap(input.a, input.b)", (*rt.Eval).BiCIDROverlap, [][2]string{
			{`"10.0.0.0/8"`, `"10.1.2.3"`}, {`"10.0.0.0/8"`, `"11.1.2.3"`}, {`"10.0.0.0/8"`, `"10.1.0.0/16"`},
			{`"2001:db8::/32"`, `"2001:db8::1"`}, {`"x"`, `"10.1.2.3"`}, {`"10.0.0.0/8"`, `"nope"`},
		}},
	}
	prog := rt.NewProgram(0, rt.Null)
	for _, c := range cases {
		q, err := rego.New(rego.Query("x := "+c.call), rego.SetRegoVersion(ast.RegoV0), rego.StrictBuiltinErrors(false)).PrepareForEval(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range c.args {
			input := fmt.Sprintf(`{"a":%s,"b":%s}`, a[0], a[1])
			in, err := ast.ValueFromReader(bytes.NewReader([]byte(input)))
			if err != nil {
				t.Fatal(err)
			}
			want := "undefined"
			rs, err := q.Eval(ctx, rego.EvalParsedInput(in))
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) > 0 {
				b, _ := jsonx.Append(nil, rs[0].Bindings["x"])
				want = string(b)
			}
			ev := prog.Get(ctx)
			iv, err := ev.ParseQuery([]byte(input))
			if err != nil {
				t.Fatal(err)
			}
			got := "undefined"
			if r := c.f(ev, rt.GetStr(iv, "a"), rt.GetStr(iv, "b")); r != nil {
				got = string(rt.AppendCanonical(nil, r))
			}
			prog.Put(ev)
			if got != want {
				t.Errorf("%s on %s: native %s, opa %s", c.call, input, got, want)
			}
		}
	}
}

// set makes a set of an array's elements, as cast_set does.
func set(ev *rt.Eval, a *rt.V) *rt.V {
	if a.Kind() != rt.KArr {
		return nil
	}
	s := ev.Set(0)
	for i := 0; ; i++ {
		_, v := ev.ScanAt(a, i)
		if v == nil {
			return s
		}
		rt.SetAdd(s, v)
	}
}

// strings2 calls a built-in function of two string parameters as the generated code
// does: undefined unless both operands are strings.
func strings2(f func(ev *rt.Eval, a, b string) *rt.V) func(ev *rt.Eval, a, b *rt.V) *rt.V {
	return func(ev *rt.Eval, a, b *rt.V) *rt.V {
		x, ok1 := rt.Str(a)
		y, ok2 := rt.Str(b)
		if !ok1 || !ok2 {
			return nil
		}
		return f(ev, x, y)
	}
}
