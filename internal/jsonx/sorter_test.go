package jsonx_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// randomValue builds a random JSON tree with keys that share prefixes, escapes and
// non-ASCII characters.
func randomValue(r *rand.Rand, depth int) any {
	keys := []string{"a", "ab", "b", "B", "é", "a\"q", "k\\", "effects", "status", "result", "", "z\n"}
	switch n := r.IntN(8); {
	case depth > 3 || n < 3:
		switch r.IntN(5) {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return json.Number(fmt.Sprint(r.IntN(2000) - 1000))
		default:
			return keys[r.IntN(len(keys))] + "<&>"
		}
	case n < 5:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for range r.IntN(6) {
			m[keys[r.IntN(len(keys))]] = randomValue(r, depth+1)
		}
		return m
	}
}

// shuffled writes v as compact JSON with object members in random order (strings as Go
// escapes them, so only the order differs from json.Marshal).
func shuffled(r *rand.Rand, buf *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			shuffled(r, buf, x[k])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			shuffled(r, buf, e)
		}
		buf.WriteByte(']')
	default:
		b, _ := json.Marshal(x)
		buf.Write(b)
	}
}

// TestSorterSortsKeys: sorting randomly ordered members gives what encoding/json writes
// (it sorts map keys by their bytes, which is the canonical order).
func TestSorterSortsKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s jsonx.Sorter
	for i := range 5000 {
		v := randomValue(r, 0)
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var in bytes.Buffer
		shuffled(r, &in, v)
		got, err := s.Append([]byte("prefix:"), in.Bytes())
		if err != nil || string(got) != "prefix:"+string(want) {
			t.Fatalf("case %d: Sorter(%s) = %s, %v; want %s", i, in.Bytes(), got, err, want)
		}
	}
}

func TestSorterRejects(t *testing.T) {
	var s jsonx.Sorter
	for _, in := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `{"a":1}x`, `"abc`, `{1:2}`} {
		if out, err := s.Append(nil, []byte(in)); err == nil {
			t.Errorf("Sorter(%q) = %q, want an error", in, out)
		}
	}
	// The scratch space survives errors.
	if out, err := s.Append(nil, []byte(`{"b":{"d":1,"c":2},"a":[{"y":1,"x":2}]}`)); err != nil || string(out) != `{"a":[{"x":2,"y":1}],"b":{"c":2,"d":1}}` {
		t.Fatalf("after errors: %s, %v", out, err)
	}
}

func TestSorterDoesNotAllocate(t *testing.T) {
	var s jsonx.Sorter
	in := []byte(`{"status":"done","result":{"provider":"c000","scopes":["email","openid"],"access_token":{"$ref":"token#access_token"},"expires_at":1790003600000},"effects":[{"z":1,"a":{"q":[{"b":1,"a":2}]}}]}`)
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = s.Append(dst[:0], in); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Sorter.Append allocates %v times", n)
	}
}

// FuzzSorter: the Sorter never panics, and whatever it accepts it maps to a fixed point
// of the same length.
func FuzzSorter(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":2}`, `[{"b":[1,{"d":0,"c":1}],"a":"x\"y"}]`, `"s"`, `{"a\\":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var s jsonx.Sorter
		out, err := s.Append(nil, in)
		if err != nil {
			return
		}
		if len(out) != len(in) {
			t.Fatalf("Sorter(%q) = %q changed the length", in, out)
		}
		again, err := s.Append(nil, out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Sorter is not idempotent on %q: %q then %q (%v)", in, out, again, err)
		}
	})
}

func BenchmarkSorter(b *testing.B) {
	in := []byte(`{"status":"done","result":{"provider":"c000","scopes":["email","openid","s1","s2","s3","s4","s5","s6"],"access_token":{"$ref":"token#access_token"},"expires_at":1790003600000},"effects":[]}`)
	var s jsonx.Sorter
	dst := make([]byte, 0, 1024)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = s.Append(dst[:0], in)
	}
}
