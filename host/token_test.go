package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
)

// stampedFiles stamps files by their version (a read, which is enough for a test).
type stampedFiles struct{ hostabi.Files }

func (s stampedFiles) Stamp(name string) (string, bool) {
	_, v, err := s.Read(context.Background(), name)
	return v, err == nil
}

func fetchToken(t *testing.T, op hostabi.Performer, s string) (json.RawMessage, string) {
	t.Helper()
	tf, ok := op.(hostabi.TokenFetcher)
	require.True(t, ok, "the host's operations name facts by tokens")
	raw, tok, err := tf.FetchToken(context.Background(), need(t, s))
	require.NoError(t, err)
	plain, err := op.Fetch(context.Background(), need(t, s))
	require.NoError(t, err)
	require.JSONEq(t, string(plain), string(raw), "FetchToken answers what Fetch answers")
	return raw, tok
}

// A ledger.read answered from the ledger cache is named by a token: the same one for
// the same version and path (the same bytes, marshalled once), another for another
// path or a new version, none when the files are not stamped; tokens are unique in the
// process, across hosts.
func TestLedgerFactTokens(t *testing.T) {
	const all = `{"key":"g","kind":"ledger.read","ledger":"connectors/grants.json"}`
	const one = `{"key":"g","kind":"ledger.read","ledger":"connectors/grants.json","path":["google"]}`
	w, plain := world()
	w.SetFile("connectors/grants.json", []byte(`{"google": {"builtin:chat": ["a"]}}`))
	_, tok := fetchToken(t, plain.Begin("t"), all)
	require.Empty(t, tok, "no stamps, no token")

	caps := w.Capabilities("")
	caps.Files = stampedFiles{caps.Files}
	h, other := host.New(caps), host.New(caps)
	raw1, t1 := fetchToken(t, h.Begin("t"), all)
	require.NotEmpty(t, t1)
	raw2, t2 := fetchToken(t, h.Begin("u"), all)
	require.Equal(t, t1, t2, "same version and path: same token")
	require.Equal(t, string(raw1), string(raw2))
	_, t3 := fetchToken(t, h.Begin("t"), one)
	require.NotEqual(t, t1, t3, "another path, another fact")
	_, t4 := fetchToken(t, other.Begin("t"), all)
	require.NotEqual(t, t1, t4, "another host issues its own tokens")

	w.SetFile("connectors/grants.json", []byte(`{"google": {}}`))
	raw5, t5 := fetchToken(t, h.Begin("t"), all)
	require.NotEqual(t, t1, t5, "a new version, a new token")
	require.NotEqual(t, string(raw1), string(raw5))
	require.Contains(t, string(raw5), `"value":{"google":{}}`)

	_, t6 := fetchToken(t, h.Begin("t"), `{"key":"c","kind":"clock.now"}`)
	require.Empty(t, t6, "only cached ledger reads have tokens")
}
