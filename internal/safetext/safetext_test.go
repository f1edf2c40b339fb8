package safetext_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/grantwire/grantwire/internal/safetext"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "",
		"user@example.com":                "user@example.com",
		`C:\Users\x`:                      `C:\Users\x`,
		"café 日本 ✓":                       "café 日本 ✓",
		"a\x1b[31mred":                    `a\x1b[31mred`,
		"two\nlines\r\n":                  `two\nlines\r\n`,
		"tab\there":                       `tab\there`,
		"del\x7f":                         `del\x7f`,
		"c1\u0085\u009b":                  `c1\u0085\u009b`,
		"bidi\u202egnp.exe":               `bidi\u202egnp.exe`,
		"iso\u2066x\u2069":                `iso\u2066x\u2069`,
		"zero\u200bwidth\u200d\ufeff":     `zero\u200bwidth\u200d\ufeff`,
		"soft\u00adhyphen":                `soft\u00adhyphen`,
		"sep\u2028\u2029":                 `sep\u2028\u2029`,
		"tag\U000E0041":                   `tag\U000e0041`,
		"bad\xffutf8\xc3":                 `bad\xffutf8\xc3`,
		"replacement \ufffd is a visible": "replacement \ufffd is a visible",
	} {
		if got := safetext.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// Escape's output is always safe, and a safe input comes back unchanged.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"plain", "a\x1b[2Jb", "x\u202ey", "\xff\xfe", "fix:\nrm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := safetext.Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q is not UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e || r == 0x2028 || r == 0x200b {
				t.Fatalf("Escape(%q) = %q keeps %U", s, out, r)
			}
		}
		if safetext.Escape(out) != out {
			t.Fatalf("Escape is not idempotent on %q", out)
		}
		// JSON keeps the exact value.
		doc, _ := json.Marshal(s)
		safe := safetext.JSON(doc)
		var back string
		if err := json.Unmarshal(safe, &back); err != nil {
			t.Fatalf("JSON(%s) = %s: %v", doc, safe, err)
		}
		var want string
		_ = json.Unmarshal(doc, &want)
		if back != want {
			t.Fatalf("JSON changed the value: %q -> %q", want, back)
		}
	})
}

func TestFprintfEscapesArguments(t *testing.T) {
	type name string
	var b strings.Builder
	_, _ = safetext.Fprintf(&b, "%s|%v|%s|%s|%d|%q\n", "a\nb", []string{"x\x1b", "y"}, errors.New("e\u202e"), name("n\t"), 7, "q\n")
	want := `a\nb|[x\x1b y]|e\u202e|n\t|7|"q\\n"` + "\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

func TestJSON(t *testing.T) {
	in := map[string]string{"k\u202e": "v\x1b\u0085\U000E0041 ok é"}
	doc, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	safe := safetext.JSON(doc)
	if want := `{"k\u202e":"v\u001b\u0085\udb40\udc41 ok é"}`; string(safe) != want {
		t.Fatalf("got %s, want %s", safe, want)
	}
	var back map[string]string
	if err := json.Unmarshal(safe, &back); err != nil || back["k\u202e"] != in["k\u202e"] {
		t.Fatalf("round trip: %v %q", err, back)
	}
	plain := []byte(`{"a":"b"}`)
	if got := safetext.JSON(plain); &got[0] != &plain[0] {
		t.Fatal("a safe document is copied")
	}
}

func BenchmarkEscapeSafe(b *testing.B) {
	s := "https://www.googleapis.com/auth/gmail.readonly"
	b.ReportAllocs()
	for b.Loop() {
		_ = safetext.Escape(s)
	}
}
