package caserun

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
	"github.com/grantwire/grantwire/internal/caseproto"
)

// echo is a plan whose result set binds x to [input, data.k] (null for undefined).
func echo(ev *rt.Eval, in, data *rt.V) *rt.V {
	rs := ev.Set(0)
	pair := ev.Array(2)
	for _, v := range []*rt.V{in, rt.GetStr(data, "k")} {
		if v == nil {
			v = rt.Null
		}
		rt.ArrayAppend(pair, v)
	}
	b := ev.Object(1)
	rt.ObjectInsert(b, rt.StrConst("x"), pair)
	rt.ResultSetAdd(rs, b)
	return rs
}

// spin iterates until its context ends.
func spin(ev *rt.Eval, in, _ *rt.V) *rt.V {
	big := ev.Array(4)
	for range 4 {
		rt.ArrayAppend(big, rt.Null)
	}
	for {
		for i := 0; ; i++ {
			if k, _ := ev.ScanAt(big, i); k == nil {
				break
			}
		}
	}
}

// broken indexes past an array's end (a bug of generated code or of the runtime).
func broken(*rt.Eval, *rt.V, *rt.V) *rt.V {
	var xs []*rt.V
	return xs[3]
}

func init() {
	Register("echo", map[string]Plan{"eval": echo}, 0)
	Register("spin", map[string]Plan{"eval": spin}, 0)
	Register("broken", map[string]Plan{"eval": broken}, 0)
}

func TestRun(t *testing.T) {
	for _, c := range []struct {
		name string
		job  caseproto.Job
		want caseproto.Reply
	}{
		{"no input", caseproto.Job{Key: "echo", TimeoutMS: 1000}, caseproto.Reply{Result: json.RawMessage(`[{"x":[null,null]}]`)}},
		{"input and data", caseproto.Job{Key: "echo", TimeoutMS: 1000, Input: json.RawMessage(`{"a":[1,2.50]}`), Data: json.RawMessage(`{"k":"v"}`)},
			caseproto.Reply{Result: json.RawMessage(`[{"x":[{"a":[1,2.50]},"v"]}]`)}},
		{"tagged set and object", caseproto.Job{Key: "echo", TimeoutMS: 1000, Tagged: true,
			Input: json.RawMessage(`{"s":{"\u0000set":[3,1,3]},"o":{"\u0000object":[[1,"one"],[[2],"two"]]}}`)},
			caseproto.Reply{Result: json.RawMessage(`[{"x":[{"o":{"1":"one","[2]":"two"},"s":[1,3]},null]}]`)}},
		{"deadline", caseproto.Job{Key: "spin", TimeoutMS: 50}, caseproto.Reply{Fatal: "did not finish within 50ms"}},
		{"panic", caseproto.Job{Key: "broken", TimeoutMS: 1000}, caseproto.Reply{Error: "internal error: runtime error: index out of range [3] with length 0"}},
		{"unknown case", caseproto.Job{Key: "nope", TimeoutMS: 1000}, caseproto.Reply{Error: "caserun: no case nope was compiled into this runner"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Run(&c.job)
			if string(r.Result) != string(c.want.Result) || r.Error != c.want.Error || r.Fatal != c.want.Fatal {
				t.Errorf("got result %s error %q fatal %q, want %s %q %q", r.Result, r.Error, r.Fatal, c.want.Result, c.want.Error, c.want.Fatal)
			}
		})
	}
}

// TestNoOPA: the runner, like the runtime it runs, links no OPA package.
func TestNoOPA(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages", len(deps))
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/open-policy-agent/") {
			t.Errorf("caserun links %s", d)
		}
	}
}
