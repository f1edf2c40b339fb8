package jsonx_test

import (
	"encoding/json"
	"testing"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// GoLen and GoStringLen are the sizes encoding/json writes (what CheckQuery's limit
// measures in core.DecideTyped's query): escapes, whitespace and all.
func TestMarshalledSizes(t *testing.T) {
	for _, raw := range []string{
		``, `null`, `1`, ` { "a" : [ 1 , 2 ] } `, `"<a & b>"`, "\"\u2028\u2029 x\"", `"\"<\\u003c\\\\"`,
		`{"k<":"v&","n":{"m":[" ",">"]}}`, "\"é 😀 \\/\"", "[\n\t\"tab\"\r\n]",
	} {
		b, err := json.Marshal(json.RawMessage(raw))
		if raw == `` {
			b, err = json.Marshal(json.RawMessage(nil))
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonx.GoLen([]byte(raw)); got != len(b) {
			t.Errorf("GoLen(%q) = %d, encoding/json wrote %d: %s", raw, got, len(b), b)
		}
	}
	for _, k := range []string{"", "conn|google", "a\"b\\c", "<&>", "\b\f\n\r\t\x01\x1f\x7f", "\u2028x\u2029", "é😀"} {
		b, _ := json.Marshal(k)
		if got := jsonx.GoStringLen(k); got != len(b) {
			t.Errorf("GoStringLen(%q) = %d, encoding/json wrote %d: %s", k, got, len(b), b)
		}
	}
}
