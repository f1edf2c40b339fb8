package jsonx_test

import (
	"encoding/json"
	"testing"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// ScanNumber is JSON's number grammar: IsNumber agrees with encoding/json on every case,
// and a failure points at the byte where the grammar failed.
func TestScanNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-12", "10.5", "1e3", "1E+3", "1e-3", "0.0", "-0.5e10",
		"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "--1", "1.e3", "0x1", "1 ", " 1", "NaN", "1.5.5"} {
		var x json.Number
		want := json.Unmarshal([]byte(s), &x) == nil && s != "" && s[0] != ' ' && s[len(s)-1] != ' '
		if got := jsonx.IsNumber(s); got != want {
			t.Errorf("IsNumber(%q) = %v, encoding/json says %v", s, got, want)
		}
	}
	for s, stop := range map[string]int{"-x": 1, "x": 0, "1.x": 2, "1ex": 2, "1e+x": 3, "12,": 2} {
		end, ok := jsonx.ScanNumber(s, 0)
		if wantOK := s == "12,"; ok != wantOK || end != stop {
			t.Errorf("ScanNumber(%q) = %d, %v; want %d, %v", s, end, ok, stop, wantOK)
		}
	}
}

func TestHex4AndSpace(t *testing.T) {
	for s, want := range map[string]rune{"0041": 'A', "00e9": 'é', "D83D": 0xD83D, "ffff": 0xFFFF} {
		if r, ok := jsonx.Hex4(s); !ok || r != want {
			t.Errorf("Hex4(%q) = %U, %v", s, r, ok)
		}
		if r, ok := jsonx.Hex4([]byte(s)); !ok || r != want {
			t.Errorf("Hex4(%q bytes) = %U, %v", s, r, ok)
		}
	}
	for _, s := range []string{"", "004", "00g1", "-001"} {
		if _, ok := jsonx.Hex4(s); ok {
			t.Errorf("Hex4(%q) accepted", s)
		}
	}
	if i := jsonx.SkipSpace(" \t\r\n x ", 0); i != 5 {
		t.Errorf("SkipSpace = %d, want 5", i)
	}
}

// The Encoder in Marshal mode writes what json.Marshal writes for the JSON types, nil maps
// and slices as null; in canonical mode (Append) nil maps and slices are {} and [].
func TestEncoderModes(t *testing.T) {
	gom := jsonx.Encoder{Escape: jsonx.AppendGoString, Marshal: true}
	for _, v := range []any{nil, true, "<a&b>\u2028", json.Number("-1.5e3"), json.Number(""), 7, int64(-9),
		map[string]any(nil), []any(nil), []string(nil), []string{"x<"},
		map[string]any{"b": []any{1, "é", nil}, "a": map[string]any{}, "<": false}} {
		want, _ := json.Marshal(v)
		got, err := gom.Append(nil, v)
		if err != nil || string(got) != string(want) {
			t.Errorf("%#v: Encoder %s (%v), json.Marshal %s", v, got, err, want)
		}
	}
	for _, v := range []any{1.5, json.Number("1."), struct{}{}} {
		if got, err := gom.Append(nil, v); err == nil {
			t.Errorf("%#v: Marshal mode wrote %s, want ErrUnsupported", v, got)
		}
	}
	for v, want := range map[string]any{"{}": map[string]any(nil), "[]": []any(nil), `["<"]`: []string{"<"}, "1.5": 1.5} {
		if got, err := jsonx.Append(nil, want); err != nil || string(got) != v {
			t.Errorf("Append(%#v) = %s (%v), want %s", want, got, err, v)
		}
	}
}
