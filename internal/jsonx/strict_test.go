package jsonx_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/grantwire/grantwire/internal/jsonx"
)

func TestCheck(t *testing.T) {
	deep := strings.Repeat("[", jsonx.MaxDepth) + strings.Repeat("]", jsonx.MaxDepth)
	tooDeep := strings.Repeat(`{"a":`, jsonx.MaxDepth+1) + "1" + strings.Repeat("}", jsonx.MaxDepth+1)
	for _, tc := range []struct {
		name, doc string
		reason    string // "" = accepted
		offset    int64
	}{
		{"object", `{"google": {"builtin:chat": ["a", "b"]}}`, "", 0},
		{"scalars", `[true, false, null, 0, -1.5e+3, 12, "x"]`, "", 0},
		{"escapes", `{"a\"b": "\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`, "", 0},
		{"whitespace around", " \n{}\t\r\n", "", 0},
		{"max depth", deep, "", 0},
		{"utf-8 text", `{"é": "日本"}`, "", 0},
		{"many members", manyMembers(100, false), "", 0},

		{"empty", "", jsonx.ReasonEmpty, 0},
		{"only whitespace", "  \n", jsonx.ReasonEmpty, 3},
		{"two documents", `{} {}`, jsonx.ReasonTrailing, 3},
		{"trailing garbage", `{"a": 1}x`, jsonx.ReasonTrailing, 8},
		{"duplicate", `{"a": 1, "b": 2, "a": 3}`, jsonx.ReasonDuplicate, 17},
		{"duplicate by escape", `{"a": 1, "\u0061": 2}`, jsonx.ReasonDuplicate, 9},
		{"duplicate nested", `{"x": {"k": 1, "k": 1}}`, jsonx.ReasonDuplicate, 15},
		{"duplicate among many", manyMembers(100, true), jsonx.ReasonDuplicate, -1},
		{"same name in two objects is fine", `[{"a": 1}, {"a": 2}]`, "", 0},
		{"invalid utf-8 in a value", "{\"a\": \"x\xffy\"}", jsonx.ReasonUTF8, 8},
		{"invalid utf-8 in a name", "{\"\xc3\": 1}", jsonx.ReasonUTF8, 2},
		{"utf-8 encoded surrogate", "[\"\xed\xa0\x80\"]", jsonx.ReasonUTF8, 2},
		{"invalid utf-8 outside strings", "[\xff]", jsonx.ReasonUTF8, 1},
		{"lone high surrogate", `["\ud800"]`, jsonx.ReasonSurrogate, 2},
		{"lone low surrogate", `["\udc00"]`, jsonx.ReasonSurrogate, 2},
		{"high surrogate then letter", `["\ud800\u0041"]`, jsonx.ReasonSurrogate, 2},
		{"noncharacter escaped", `["\uffff"]`, jsonx.ReasonNoncharacter, 2},
		{"noncharacter encoded", "[\"\xef\xb7\x90\"]", jsonx.ReasonNoncharacter, 2},
		{"control char", "[\"a\x01\"]", jsonx.ReasonControl, 3},
		{"newline in string", "[\"a\nb\"]", jsonx.ReasonControl, 3},
		{"bad escape", `["\x"]`, jsonx.ReasonBadEscape, 2},
		{"short unicode escape", `["\u12"]`, jsonx.ReasonBadEscape, 2},
		{"too deep", tooDeep, jsonx.ReasonTooDeep, 5 * jsonx.MaxDepth},
		{"leading zero", `[01]`, jsonx.ReasonSyntax, 2},
		{"bare minus", `[-]`, jsonx.ReasonSyntax, 2},
		{"dot without digits", `[1.]`, jsonx.ReasonSyntax, 3},
		{"exponent without digits", `[1e]`, jsonx.ReasonSyntax, 3},
		{"trailing comma", `[1,]`, jsonx.ReasonUnexpectedChar, 3},
		{"unquoted name", `{a: 1}`, jsonx.ReasonSyntax, 1},
		{"missing colon", `{"a" 1}`, jsonx.ReasonSyntax, 5},
		{"unterminated string", `["abc`, jsonx.ReasonSyntax, 5},
		{"unterminated object", `{"a": 1`, jsonx.ReasonSyntax, 7},
		{"truncated literal", `[tru`, jsonx.ReasonSyntax, 1},
		{"byte order mark", "\ufeff{}", jsonx.ReasonNoncharacter, -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := jsonx.Check([]byte(tc.doc))
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *jsonx.Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *jsonx.Error (%s)", err, tc.reason)
			}
			if tc.offset == -2 { // the BOM is outside any string: an unexpected character
				if se.Reason != jsonx.ReasonUnexpectedChar || se.Offset != 0 {
					t.Fatalf("BOM: %v", err)
				}
				return
			}
			if se.Reason != tc.reason {
				t.Fatalf("got %q, want %q", se.Error(), tc.reason)
			}
			if tc.offset >= 0 && se.Offset != tc.offset {
				t.Fatalf("offset %d, want %d (%v)", se.Offset, tc.offset, err)
			}
		})
	}
}

// The error never quotes a string value of the document, only a duplicated name.
func TestErrorDoesNotQuoteValues(t *testing.T) {
	const secret = "s3cr3t-refresh-token"
	for _, doc := range []string{
		`{"refresh_token": "` + secret + "\x01" + `"}`,
		`{"refresh_token": "` + secret + `\q"}`,
		`{"refresh_token": "` + secret + "\xff" + `"}`,
		`{"refresh_token": "` + secret + `"} trailing`,
		`{"refresh_token": "` + secret + `", "refresh_token": "x"}`,
	} {
		err := jsonx.Check([]byte(doc))
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Fatalf("%q: %v", doc, err)
		}
	}
}

func manyMembers(n int, dup bool) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(`":1`)
	}
	if dup {
		b.WriteString(`,"kxxxxx":2`)
	}
	b.WriteString("}")
	return b.String()
}

// TestCheckDoesNotAllocate: a typical ledger is checked without allocating.
func TestCheckDoesNotAllocate(t *testing.T) {
	doc := []byte(`{"google": {"builtin:chat": ["https://www.googleapis.com/auth/gmail.readonly"], "builtin:email": ["a", "b"]}, "github": {"builtin:code": ["repo"]}}`)
	if n := testing.AllocsPerRun(100, func() {
		if err := jsonx.Check(doc); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Check allocates %v times", n)
	}
}

// BenchmarkCheck: a small object, and a grants ledger of 50 connectors with 20 agents of 3
// scopes each (~90 KB) as grantwire writes it.
func BenchmarkCheck(b *testing.B) {
	grants := map[string]map[string][]string{}
	for c := range 50 {
		m := map[string][]string{}
		for a := range 20 {
			m[fmt.Sprintf("installed:agent-%02d", a)] = []string{"https://www.googleapis.com/auth/gmail.readonly", "openid", "email"}
		}
		grants[fmt.Sprintf("connector-%02d", c)] = m
	}
	ledger, err := json.MarshalIndent(grants, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	for _, doc := range []struct {
		name string
		doc  []byte
	}{{"small", []byte(manyMembers(8, false))}, {"grants-50x20", ledger}} {
		b.Run(doc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.doc)))
			for b.Loop() {
				if err := jsonx.Check(doc.doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(doc.name+"/encoding-json-decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.doc)))
			for b.Loop() {
				var v any
				if err := json.Unmarshal(doc.doc, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCheck compares Check with encoding/json: everything Check accepts is valid JSON in
// valid UTF-8 without duplicate names, and everything it refuses that encoding/json
// accepts is refused for a reason encoding/json tolerates.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":1,"a":2}`, `{"a":{"b":[1,2,{"c":"\u00e9"}]}}`,
		"[\"\xff\"]", `["\ud800"]`, `["\ud83d\ude00"]`, `1 2`, `"x"`, `-0.5e-3`, `{"\u0061":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := jsonx.Check(doc)
		if err == nil {
			if !json.Valid(doc) {
				t.Fatalf("accepted invalid JSON %q", doc)
			}
			if !utf8.Valid(doc) {
				t.Fatalf("accepted invalid UTF-8 %q", doc)
			}
			if dup := duplicate(doc); dup != "" {
				t.Fatalf("accepted %q with the duplicate name %q", doc, dup)
			}
			return
		}
		var se *jsonx.Error
		if !errors.As(err, &se) {
			t.Fatalf("not a *jsonx.Error: %v", err)
		}
		if se.Offset < 0 || se.Offset > int64(len(doc)) {
			t.Fatalf("offset %d outside the document (%d bytes)", se.Offset, len(doc))
		}
		if json.Valid(doc) {
			switch se.Reason {
			case jsonx.ReasonDuplicate, jsonx.ReasonUTF8, jsonx.ReasonSurrogate,
				jsonx.ReasonNoncharacter, jsonx.ReasonTooDeep:
			default:
				t.Fatalf("encoding/json accepts %q, Check refuses it: %v", doc, err)
			}
		}
	})
}

// duplicate walks doc with encoding/json's tokenizer and returns a name that appears twice
// in one object, or "".
func duplicate(doc []byte) string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	type frame struct {
		names  map[string]bool
		object bool
		key    bool // the next string token is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && top.object && top.key
		if top != nil && top.object {
			top.key = !top.key
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{names: map[string]bool{}, object: true, key: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].key = true
				}
			}
		case string:
			if isKey {
				if top.names[v] {
					return v
				}
				top.names[v] = true
			}
		}
	}
}

// TestUnmarshalKnown: a request body decodes into its struct; an unknown member or a
// second value is refused.
func TestUnmarshalKnown(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	if err := jsonx.UnmarshalKnown([]byte(`{"name":"a"}`), &v); err != nil || v.Name != "a" {
		t.Fatalf("got %+v, %v", v, err)
	}
	for _, body := range []string{`{"nam":"a"}`, `{"name":"a"} {}`, ``, `[1]`} {
		if err := jsonx.UnmarshalKnown([]byte(body), &v); err == nil {
			t.Errorf("%q: no error", body)
		}
	}
}
