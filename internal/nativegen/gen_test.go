package nativegen

import (
	"strings"
	"testing"
)

const runtimeDir = "../../core/nativeengine/internal/rt"

// plan builds a minimal plan: one entrypoint calling function f, whose body is stmts.
func plan(builtins, stmts string) string {
	return `{"static":{"strings":[{"value":"result"},{"value":"x"}],"builtin_funcs":[` + builtins + `],"files":[{"value":"p.rego"}]},
	"plans":{"plans":[{"name":"p/x","blocks":[{"stmts":[
		{"type":"CallStmt","stmt":{"func":"f","args":[{"type":"local","value":0},{"type":"local","value":1}],"result":2}},
		{"type":"MakeObjectStmt","stmt":{"target":3}},
		{"type":"ObjectInsertStmt","stmt":{"key":{"type":"string_index","value":0},"value":{"type":"local","value":2},"object":3}},
		{"type":"ResultSetAddStmt","stmt":{"value":3}}]}]}]},
	"funcs":{"funcs":[{"name":"f","params":[0,1],"return":2,"blocks":[{"stmts":[` + stmts + `]},{"stmts":[{"type":"ReturnLocalStmt","stmt":{"source":2}}]}]}]}}`
}

func generate(t *testing.T, src string) error {
	t.Helper()
	pol, err := ParsePlan([]byte(src))
	if err != nil {
		return err
	}
	bis, err := ScanBuiltins(runtimeDir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Generate(pol, Config{Package: "x", Builtins: bis})
	return err
}

func TestGenerates(t *testing.T) {
	src := plan(`{"name":"upper","decl":{"args":[{"type":"string"}],"result":{"type":"string"},"type":"function"}}`,
		`{"type":"CallStmt","stmt":{"func":"upper","args":[{"type":"string_index","value":1}],"result":2}}`)
	if err := generate(t, src); err != nil {
		t.Fatal(err)
	}
}

// A built-in function the plan declares but never calls (every call was replaced by a
// `with`) needs no implementation.
func TestDeclaredBuiltinNeverCalled(t *testing.T) {
	src := plan(`{"name":"http.send","decl":{"args":[{"type":"any"}],"result":{"type":"any"},"type":"function"}}`, ``)
	if err := generate(t, src); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesWhatItDoesNotSupport(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"builtin", plan(`{"name":"http.send","decl":{"args":[{"type":"any"}],"result":{"type":"any"},"type":"function"}},{"name":"rand.intn","decl":{"args":[{"type":"string"},{"type":"number"}],"result":{"type":"number"},"type":"function"}}`,
			`{"type":"CallStmt","stmt":{"func":"http.send","args":[{"type":"local","value":0}],"result":2}},
			{"type":"CallStmt","stmt":{"func":"rand.intn","args":[{"type":"local","value":0},{"type":"local","value":1}],"result":2}}`),
			"does not implement: http.send, rand.intn"},
		{"arity", plan(`{"name":"upper","decl":{"args":[{"type":"string"},{"type":"string"}],"result":{"type":"string"},"type":"function"}}`, ``),
			"upper takes 2 arguments in the plan, 1 in the runtime"},
		{"undeclared call", plan(``, `{"type":"CallStmt","stmt":{"func":"nowhere","args":[],"result":2}}`),
			"neither defines nor declares as built-ins: nowhere"},
		{"statement", plan(``, `{"type":"TeleportStmt","stmt":{}}`), "TeleportStmt"},
		{"break", plan(``, `{"type":"BreakStmt","stmt":{"index":7}}`), "a break out of 8 blocks where 1 enclose it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := generate(t, c.src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// A built-in function's string parameters are checked by the generated call, once: a
// local operand through rt.Str (undefined unless a string), a constant as its literal.
func TestStringOperandsAreCheckedAtTheCall(t *testing.T) {
	bis, err := ScanBuiltins(runtimeDir)
	if err != nil {
		t.Fatal(err)
	}
	if b := bis["contains"]; len(b.Strings) != 2 || !b.Strings[0] || !b.Strings[1] || b.Arity != 2 {
		t.Fatalf("contains: %+v, want two string parameters", b)
	}
	pol, err := ParsePlan([]byte(plan(`{"name":"contains","decl":{"args":[{"type":"string"},{"type":"string"}],"result":{"type":"boolean"},"type":"function"}}`,
		`{"type":"CallStmt","stmt":{"func":"contains","args":[{"type":"local","value":0},{"type":"string_index","value":1}],"result":2}}`)))
	if err != nil {
		t.Fatal(err)
	}
	src, err := Generate(pol, Config{Package: "x", Builtins: bis})
	if err != nil {
		t.Fatal(err)
	}
	if want := `if s0, ok := rt.Str(l0); !ok {`; !strings.Contains(string(src), want) {
		t.Fatalf("no %q in\n%s", want, src)
	}
	if want := `ev.BiContains(s0, "x")`; !strings.Contains(string(src), want) {
		t.Fatalf("no %q in\n%s", want, src)
	}
}
