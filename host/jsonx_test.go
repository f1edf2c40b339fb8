package host

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStoredJSON reads every case of hostabi/testdata/stored-json.json as a host reads
// stored JSON: refused with that corrupt reason, or read as that fact value. The Node shell
// checks the same cases (shells/wasm/node/run.mjs), so both hosts answer ledger.read alike.
func TestStoredJSON(t *testing.T) {
	raw, err := os.ReadFile("../hostabi/testdata/stored-json.json")
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
		v, err := decodeStrict(in)
		if c.Corrupt != "" {
			require.EqualError(t, err, c.Corrupt, "case %d: %q", i, in)
			continue
		}
		require.NoError(t, err, "case %d: %q", i, in)
		got, err := encodeValue(factValue(v))
		require.NoError(t, err)
		want, err := decodeStrict(c.Value)
		require.NoError(t, err)
		w, err := encodeValue(want)
		require.NoError(t, err)
		require.Equal(t, string(w), string(got), "case %d: %q", i, in)
	}
}
