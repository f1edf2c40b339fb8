package jsonx

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// AppendGoString writes every string as json.Marshal does: HTML characters, control
// characters, U+2028/U+2029 and invalid UTF-8 included.
func TestAppendGoStringIsMarshal(t *testing.T) {
	cases := []string{"", "plain", `q"b\s`, "<a>&", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "\u2028\u2029", "é😀", "\xff\xfe", "a\xc3", "\xed\xa0\x80"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendGoString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: AppendGoString %s, json.Marshal %s", s, got, want)
		}
	}
}
