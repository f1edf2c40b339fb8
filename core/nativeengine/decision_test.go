package nativeengine_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
)

// TestTypedDecisionShapes: for decisions of every shape, well-formed or not, the typed
// decision (or its error) is core.ParseDecision's, and the fast path takes exactly the
// well-formed ones whose members are the decision's own.
func TestTypedDecisionShapes(t *testing.T) {
	e := newEngine(t, embeddedData(t))
	for _, c := range []struct {
		decision string
		fast     bool
	}{
		{`{"status":"need","needs":[{"key":"now","kind":"clock.now"},{"key":"g","kind":"ledger.read","ledger":"connectors/grants.json","path":["google","a"]}]}`, true},
		{`{"status":"done","result":{"access_token":{"$ref":"t#access_token"},"n":1.50,"big":12345678901234567890},"effects":[]}`, true},
		{`{"status":"done","result":"x","effects":[{"kind":"keyring.set","user":"u","value":{"$ref":"r#v"},"expect":{"version":"v1"}},{"kind":"event.emit","type":"t","payload":{"a":[1,2,{"b":null}]}}]}`, true},
		{`{"status":"done","error":{"code":"AGENT_NOT_GRANTED","message":"m \"q\" \u00e9 <>&","fix":"grantwire grant x","missing_scopes":["a"],"n":3},"effects":[]}`, true},
		{`{"status":"done","error":{"code":"X","message":"m"}}`, true},
		{`{"status":"done","error":{"code":7,"message":null,"fix":["x"]},"effects":[]}`, false},
		{`{"status":"need","needs":[{"key":"k","kind":"clock.now","after":"lock"}],"effects":[]}`, true},
		{`{"status":"done","result":[],"needs":[{"key":"k","kind":"clock.now"}]}`, true},
		{`{"status":"need","needs":[]}`, false},
		{`{"status":"need"}`, false},
		{`{"status":"done","effects":[]}`, false},
		{`{"status":"done","result":1,"error":{"code":"X"}}`, false},
		{`{"status":"done","result":null,"effects":[]}`, true},
		{`{"status":"done","error":null,"result":1}`, false},
		{`{"status":"maybe","result":1}`, false},
		{`{"status":1,"result":1}`, false},
		{`{"result":1}`, false},
		{`{"Status":"done","result":1}`, false},
		{`{"status":"done","RESULT":1,"result":2}`, false},
		{`{"status":"done","result":1,"extra":true}`, false},
		{`{"status":"need","needs":[{"kind":"clock.now"}]}`, false},
		{`{"status":"need","needs":[{"key":1,"kind":"clock.now"}]}`, false},
		{`{"status":"need","needs":[{"key":"k","kind":""}]}`, false},
		{`{"status":"need","needs":["k"]}`, false},
		{`{"status":"need","needs":{"key":"k","kind":"clock.now"}}`, false},
		{`{"status":"done","result":1,"effects":[{"user":"u"}]}`, false},
		{`{"status":"done","result":1,"effects":"none"}`, false},
		{`{"status":"done","error":"E"}`, false},
		{`[1]`, false},
		{`"done"`, false},
	} {
		typed, terr, parsed, perr, fast := nativeengine.DecisionOfJSON(e, c.decision)
		if (terr == nil) != (perr == nil) || (terr != nil && terr.Error() != perr.Error()) {
			t.Errorf("%s: typed error %v, ParseDecision's %v", c.decision, terr, perr)
		}
		if !reflect.DeepEqual(typed, parsed) {
			t.Errorf("%s: typed\n %#v\nParseDecision\n %#v", c.decision, typed, parsed)
		}
		if fast != c.fast {
			t.Errorf("%s: fast path %v, want %v", c.decision, fast, c.fast)
		}
	}
}

// TestTypedGateDecisions: every question of the gate's episodes (hand-out, refusal,
// refresh plan, captured from a driver on the memory host) is decided by Decide as
// core.ParseDecision reads DecideJSON's answer, and each decision is one the fast path
// builds (without core.ParseDecision).
func TestTypedGateDecisions(t *testing.T) {
	e, eps := gateEpisodes(t)
	ctx := context.Background()
	n, slow := 0, 0
	for name, l := range eps {
		for _, ep := range l {
			var q core.Query
			if err := json.Unmarshal(ep.Query, &q); err != nil {
				t.Fatal(err)
			}
			got, err := e.Decide(ctx, &q)
			if err != nil {
				t.Fatalf("%s %s: %v", name, ep.Name, err)
			}
			want, err := core.ParseDecision(ep.Decision)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: typed\n %#v\nParseDecision\n %#v", name, ep.Name, got, want)
			}
			if _, _, _, _, fast := nativeengine.DecisionOfJSON(e, string(ep.Decision)); !fast {
				slow++
			}
			n++
		}
	}
	if n < 6 {
		t.Fatalf("only %d questions", n)
	}
	if slow != 0 {
		t.Errorf("%d of the gate's %d decisions took core.ParseDecision", slow, n)
	}
}
