package rt_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// TestParseData: the data document reads as OPA's Go evaluator reads it (encoding/json
// with numbers kept as text), canonicalised as the rego engine writes results.
func TestParseData(t *testing.T) {
	for _, doc := range []string{
		`{}`, `{"b":1,"a":[true,false,null],"c":{"z":"y","x":"w"}}`,
		`{"a":1,"a":2}`, `{"s":"\ud800x","t":"\udc00","u":"\ud83d\ude00","v":"\ud83d\u0041"}`,
		"{\"bad\":\"a\xffb\xc3\"}", `{"n":[1.0,-0,1e3,1E+3,0.000001,123456789012345678901234567890,-1.5e-7]}`,
		`{"esc":"\"\\\/\b\f\n\r\t\u0001\u001f\u007f<>&\u2028"}`, `{"deep":[[[[[[[[[[1]]]]]]]]]]}`,
		` { "ws" : [ 1 , 2 ] } `,
	} {
		v, err := rt.ParseData([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		got := rt.AppendCanonical(nil, v)
		var x any
		d := json.NewDecoder(bytes.NewReader([]byte(doc)))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			t.Fatal(err)
		}
		want, err := jsonx.Append(nil, x)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n native %s\n go     %s", doc, got, want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":}`, `[1,]`, `01`, `1.`, `.5`, `+1`, `"\x"`, `{"a":1}x`, "\"a\x01\"", `tru`, `nul`} {
		if _, err := rt.ParseData([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
		if json.Valid([]byte(bad)) {
			t.Errorf("%q is valid JSON: the case tests nothing", bad)
		}
	}
}
