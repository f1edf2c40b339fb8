package host

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/hostabi"
)

// hardStrings are strings whose JSON encoding has a rule of its own.
var hardStrings = []string{"", "plain", `quote " backslash \ slash /`, "<script>&amp;</script>", "\x00\x01\x1f\x7f",
	"\b\f\n\r\t", "é ü 漢字 🙂", "\u2028\u2029", "bad \xff\xfe utf-8 \xc3", "\xed\xa0\x80 surrogate", "\ufffd"}

func randomFact(r *rand.Rand, depth int) any {
	n := r.IntN(13)
	if depth > 3 && n >= 9 {
		n = r.IntN(9)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return hardStrings[r.IntN(len(hardStrings))]
	case 3:
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteByte(byte(r.IntN(256)))
		}
		return b.String()
	case 4:
		return r.Int64() - r.Int64()
	case 5:
		return r.IntN(1000)
	case 6:
		return json.Number([]string{"0", "-0", "12", "1.50", "1e9", "-3.2E-7", "12345678901234567890", ""}[r.IntN(8)])
	case 7:
		return &hostabi.HostError{Code: hardStrings[r.IntN(len(hardStrings))], Detail: "d <x>", Fix: []string{"", "fix &"}[r.IntN(2)]}
	case 8:
		return []string{"a", hardStrings[r.IntN(len(hardStrings))]}
	case 9, 10:
		m := map[string]any{}
		for range r.IntN(5) {
			m[hardStrings[r.IntN(len(hardStrings))]+string(rune('a'+r.IntN(26)))] = randomFact(r, depth+1)
		}
		return m
	default:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomFact(r, depth+1)
		}
		return l
	}
}

// TestEncodeFactIsMarshal: facts are encoded as json.Marshal encodes them, byte for byte,
// for every type facts are made of and every string rule (HTML characters, controls,
// U+2028, invalid UTF-8); a type it does not know, or a malformed json.Number, is left to
// json.Marshal (and its error).
func TestEncodeFactIsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		v := randomFact(r, 0)
		want, werr := json.Marshal(v)
		got, gerr := encodeFact(v)
		if (werr == nil) != (gerr == nil) || string(got) != string(want) {
			t.Fatalf("%#v:\n encodeFact %s (%v)\n json.Marshal %s (%v)", v, got, gerr, want, werr)
		}
	}
	for _, v := range []any{json.Number("1x"), json.Number("+1"), json.Number("01"), json.Number(".5"), json.Number("1."),
		float64(1.5), map[string]string{"a": "b"}, []any(nil), map[string]any(nil), (*hostabi.HostError)(nil), []string(nil),
		struct{ A int }{1}, map[string]any{"f": 2.5}} {
		want, werr := json.Marshal(v)
		got, gerr := encodeFact(v)
		if (werr == nil) != (gerr == nil) || string(got) != string(want) {
			t.Errorf("%#v:\n encodeFact %s (%v)\n json.Marshal %s (%v)", v, got, gerr, want, werr)
		}
	}
}

// FuzzEncodeFactString: any string (and any string as a map key) is encoded as
// json.Marshal encodes it.
func FuzzEncodeFactString(f *testing.F) {
	for _, s := range hardStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []any{s, map[string]any{s: s, "k": []any{s}}, json.Number(s)} {
			want, werr := json.Marshal(v)
			got, gerr := encodeFact(v)
			if (werr == nil) != (gerr == nil) || string(got) != string(want) {
				t.Fatalf("%q: encodeFact %s (%v), json.Marshal %s (%v)", s, got, gerr, want, werr)
			}
		}
	})
}
