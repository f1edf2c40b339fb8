package jsonx_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"

	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/stretchr/testify/require"
)

// TestStoredJSON reads every case of hostabi/testdata/stored-json.json as a host reads
// stored bytes: refused with that corrupt reason, or read as that fact value. The Node
// shell checks the same cases (shells/wasm/node/run.mjs), so every host answers ledger.read
// alike; the Go host and the differential test's simulated host read through this package.
func TestStoredJSON(t *testing.T) {
	raw, err := os.ReadFile("../../hostabi/testdata/stored-json.json")
	require.NoError(t, err)
	var doc struct {
		Cases []struct {
			In       *string         `json:"in"`
			InBase64 string          `json:"in_base64"`
			Corrupt  string          `json:"corrupt"`
			Value    json.RawMessage `json:"value"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.NotEmpty(t, doc.Cases)
	for i, c := range doc.Cases {
		in := []byte(nil)
		if c.In != nil {
			in = []byte(*c.In)
		} else {
			in, err = base64.StdEncoding.DecodeString(c.InBase64)
			require.NoError(t, err)
		}
		v, err := jsonx.Decode(in)
		if c.Corrupt != "" {
			require.EqualError(t, err, c.Corrupt, "case %d: %q", i, in)
			continue
		}
		require.NoError(t, err, "case %d: %q", i, in)
		want, err := jsonx.Decode(c.Value)
		require.NoError(t, err)
		require.Equal(t, compact(t, want), compact(t, jsonx.FactValue(v)), "case %d: %q", i, in)
	}
}

func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestDescribe pins a secret's description to known values: the digest, the CRC-32 and
// the version token are what hosts, the policy's tests and decision-log searches expect.
func TestDescribe(t *testing.T) {
	d := jsonx.Describe("k#value", "rt-secret")
	require.Equal(t, "k#value", d["$ref"])
	require.Equal(t, "sha256:"+jsonx.Version("rt-secret"), d["digest"])
	require.Regexp(t, `^sha256:[0-9a-f]{16}$`, d["digest"])
	require.Equal(t, "cbf43926", jsonx.CRC32("123456789")) // the CRC-32 check value
	require.Equal(t, "2cf24dba5fb0a30e", jsonx.Version("hello"))
	require.Len(t, d, 3)
}

// TestDescribeMembers: the listed string members of an object are described, the rest is
// the fact value of the document (unsafe numbers as {"$number"}), the document unchanged;
// anything but an object is nil.
func TestDescribeMembers(t *testing.T) {
	doc, err := jsonx.Decode([]byte(`{"client_secret": "s", "client_id": "c", "n": 1.5, "nested": {"client_secret": "x"}}`))
	require.NoError(t, err)
	describe := func(f, s string) map[string]any { return jsonx.Describe("k#"+f, s) }
	got := jsonx.DescribeMembers(doc, []string{"client_secret", "n", "absent"}, describe)
	require.Equal(t, map[string]any{
		"client_secret": jsonx.Describe("k#client_secret", "s"), "client_id": "c",
		"n": map[string]any{"$number": "1.5"}, "nested": map[string]any{"client_secret": "x"},
	}, got)
	require.Equal(t, "s", doc.(map[string]any)["client_secret"], "the document is not changed")
	for _, v := range []any{nil, "s", []any{"s"}} {
		require.Nil(t, jsonx.DescribeMembers(v, []string{"s"}, describe))
	}
}

// TestPaths: the value at a path, and the types on the way as far as it leads.
func TestPaths(t *testing.T) {
	doc, err := jsonx.Decode([]byte(`{"a": {"b": [1]}, "n": 1.5}`))
	require.NoError(t, err)
	v, ok := jsonx.At(doc, []string{"a", "b"})
	require.True(t, ok)
	require.Equal(t, []any{json.Number("1")}, v)
	_, ok = jsonx.At(doc, []string{"a", "b", "c"})
	require.False(t, ok)
	require.Equal(t, []string{"object", "object", "array"}, jsonx.Shape(doc, []string{"a", "b", "c"}))
	require.Equal(t, []string{"object"}, jsonx.Shape(doc, []string{"x", "y"}))
	require.Equal(t, map[string]any{"$number": "1.5"}, jsonx.FactValue(doc).(map[string]any)["n"])
	require.Equal(t, json.Number("1.5"), doc.(map[string]any)["n"], "FactValue copies")

	raw := json.RawMessage(`{"a": {"b": [1]}, "n": 1.5}`)
	r, ok := jsonx.RawAt(raw, []string{"a", "b"})
	require.True(t, ok)
	require.JSONEq(t, `[1]`, string(r))
	_, ok = jsonx.RawAt(raw, []string{"a", "b", "c"})
	require.False(t, ok, "an array has no members")
	_, ok = jsonx.RawAt(raw, []string{"x"})
	require.False(t, ok)
	r, ok = jsonx.RawAt(raw, nil)
	require.True(t, ok)
	require.Equal(t, raw, r)
}

// TestDecodeContextStopsWhenCancelled: a cancelled read of a large document stops with
// the context's error, never a corrupt reason (the document was not judged), and an
// uncancelled one reads as Decode does (issue 20 §1.20).
func TestDecodeContextStopsWhenCancelled(t *testing.T) {
	doc := testenv.LargeGrants(20000)
	ctx, cancel := context.WithCancel(context.Background())
	want, err := jsonx.Decode(doc)
	require.NoError(t, err)
	got, err := jsonx.DecodeContext(ctx, doc)
	require.NoError(t, err)
	require.Equal(t, want, got)
	cancel()
	got, err = jsonx.DecodeContext(ctx, doc)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, got)
	_, err = jsonx.DecodeContext(ctx, []byte("\xff"))
	require.ErrorIs(t, err, context.Canceled, "a cancelled read judges nothing")
}
