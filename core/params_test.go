package core

import (
	"encoding/json"
	"testing"
)

// Need.Str and Need.Bool answer what encoding/json decodes, whatever the parameter's JSON
// (their fast paths take plain strings and the two literals only).
func TestParamsDecodeAsJSON(t *testing.T) {
	for _, raw := range []string{`"plain"`, `""`, `"with \"quote\""`, `"tab\t"`, `"\u00e9"`, `"é"`, "\"del\x7f\"", `"a\/b"`,
		`"unterminated`, `"x" `, ` "x"`, `"`, `true`, `false`, ` true`, `null`, `1`, `["x"]`, `{"a":"b"}`, `tru`, `"true"`} {
		n := Need{Params: map[string]json.RawMessage{"p": json.RawMessage(raw)}}
		var s string
		_ = json.Unmarshal([]byte(raw), &s)
		if got := n.Str("p"); got != s {
			t.Errorf("Str(%s) = %q, encoding/json %q", raw, got, s)
		}
		var b bool
		_ = json.Unmarshal([]byte(raw), &b)
		if got := n.Bool("p"); got != b {
			t.Errorf("Bool(%s) = %v, encoding/json %v", raw, got, b)
		}
	}
	n := Need{}
	if n.Str("p") != "" || n.Bool("p") {
		t.Error("an absent parameter is not empty")
	}
}

// ParseManifest refuses what is not a manifest naming an operation, the check every
// engine makes of the policy it loads.
func TestParseManifest(t *testing.T) {
	for _, raw := range []string{``, `null`, `{}`, `{"ops": {}}`, `[]`, `{"ops": 1}`} {
		if _, err := ParseManifest([]byte(raw)); err == nil {
			t.Errorf("ParseManifest(%s) accepted", raw)
		}
	}
	m, err := ParseManifest([]byte(`{"ops": {"status": {"prefetch": []}}, "errors": {"x": {"status": 400, "exit": 2}}}`))
	if err != nil || len(m.Ops) != 1 || m.Errors["x"].Exit != 2 {
		t.Fatalf("ParseManifest: %+v, %v", m, err)
	}
}
