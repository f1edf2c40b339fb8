package core_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/grantwire/grantwire/core"
)

func TestCheckQuery(t *testing.T) {
	deep := strings.Repeat(`{"a":`, core.MaxQueryDepth) + `1` + strings.Repeat(`}`, core.MaxQueryDepth)
	tooDeep := strings.Repeat(`{"a":`, core.MaxQueryDepth) + `[]` + strings.Repeat(`}`, core.MaxQueryDepth)
	for _, tc := range []struct {
		q      string
		reason string // "" when the query is accepted
	}{
		{`{}`, ""},
		{` {"op":"status","args":{},"facts":{},"attempt":0} `, ""},
		{"{\"a\":[1,-2,0,9007199254740991,-9007199254740991,true,false,null,\"\"]}\n", ""},
		{`{"s":"\u00e9\ud83d\ude00 \/ \" \\ \b\f\n\r\t é 😀"}`, ""},
		{`{"a":{"b":[[],{}]}}`, ""},
		{deep, ""},
		{``, "a query must be a JSON object"},
		{`[]`, "a query must be a JSON object"},
		{`null`, "a query must be a JSON object"},
		{`{`, "expected an object key"},
		{`{"a"}`, "expected ':'"},
		{`{"a":1,}`, "expected an object key"},
		{`{"a":[1,]}`, "invalid value"},
		{`{"a":1} {}`, "data after the query object"},
		{`{"a":1}x`, "data after the query object"},
		{`{"a":tru}`, "invalid literal"},
		{`{"a":set()}`, "invalid value"},
		{`{"a":{1}}`, "expected an object key"},
		{`{a:1}`, "expected an object key"},
		{`{"a":1.5}`, "numbers must be integers"},
		{`{"a":1e3}`, "numbers must be integers"},
		{`{"a":1790000000000.0}`, "numbers must be integers"},
		{`{"a":-0}`, "numbers must be integers"},
		{`{"a":01}`, "expected ',' or '}'"},
		{`{"a":9007199254740992}`, "numbers must be integers"},
		{`{"a":-9007199254740992}`, "numbers must be integers"},
		{`{"a":12345678901234567}`, "numbers must be integers"},
		{`{"a":-}`, "invalid value"},
		{`{"a":.5}`, "numbers must be integers"},
		{`{"a":+1}`, "invalid value"},
		{"{\"a\":\"\xff\"}", "invalid UTF-8"},
		{"{\"a\":\"\xed\xa0\x80\"}", "invalid UTF-8"}, // an encoded surrogate
		{"{\"\xc3\":1}", "invalid UTF-8"},
		{"{\"a\":\"tab\there\"}", "control character"},
		{`{"a":"\ud800"}`, "lone surrogate"},
		{`{"a":"\udc00"}`, "lone surrogate"},
		{`{"a":"\ud800\u0041"}`, "lone surrogate"},
		{`{"a":"\x41"}`, "invalid escape"},
		{`{"a":"\u12"}`, "invalid \\u escape"},
		{`{"a":"abc`, "unterminated string"},
		{tooDeep, "nesting deeper than 64"},
	} {
		err := core.CheckQuery([]byte(tc.q))
		if tc.reason == "" {
			if err != nil {
				t.Errorf("CheckQuery(%.60q) = %v, want nil", tc.q, err)
			}
			continue
		}
		var qe *core.QueryError
		if !errors.As(err, &qe) || !errors.Is(err, core.ErrMalformedQuery) || !strings.Contains(qe.Reason, tc.reason) {
			t.Errorf("CheckQuery(%.60q) = %v, want a malformed query error with %q", tc.q, err, tc.reason)
		}
	}
}

func TestCheckQueryTooLarge(t *testing.T) {
	q := make([]byte, core.MaxQueryBytes+1)
	if err := core.CheckQuery(q); !errors.Is(err, core.ErrMalformedQuery) || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Fatalf("CheckQuery(huge) = %v", err)
	}
}

func TestCheckQueryDoesNotAllocate(t *testing.T) {
	q := []byte(`{"op":"get_access_token","args":{"provider":"google","agent":"builtin:chat","scopes":["é","a\"b"]},"facts":{"now":1790000000000,"grant":{"found":true,"value":[]}},"attempt":0}`)
	if n := testing.AllocsPerRun(100, func() {
		if err := core.CheckQuery(q); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("CheckQuery allocates %v times", n)
	}
}

// FuzzCheckQuery: whatever CheckQuery accepts is valid JSON in valid UTF-8 that decodes
// to an object, and CheckQuery never panics.
func FuzzCheckQuery(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":"\u00e9"}]}`, `{"a":"\ud83d\ude00"}`, `{"a":-1}`, "{\"a\":\"\xff\"}", `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		if core.CheckQuery(q) != nil {
			return
		}
		if !utf8.Valid(q) {
			t.Fatalf("accepted invalid UTF-8: %q", q)
		}
		var m map[string]any
		if err := json.Unmarshal(q, &m); err != nil {
			t.Fatalf("accepted %q that encoding/json refuses: %v", q, err)
		}
	})
}
