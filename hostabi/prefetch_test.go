package hostabi

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrefetchIsInstantiate: the remembered needs are those instantiate gives, for the
// same templates and arguments, on the first call and on every later one, and different
// arguments never get another's needs.
func TestPrefetchIsInstantiate(t *testing.T) {
	var pm prefetchMemo
	templates := json.RawMessage(`[{"key":"grants","kind":"ledger.read","ledger":"connectors/grants.json","path":[{"$arg":"provider"},{"$arg":"agent"}]},` +
		`{"key":"now","kind":"clock.now"},{"key":"conn","kind":"keyring.get","user":{"$arg":"user"}}]`)
	for _, args := range []string{
		`{"agent":"builtin:chat","provider":"google","scopes":["a"]}`,
		`{"agent":"builtin:other","provider":"google","scopes":["a"]}`,
		`{"agent":"builtin:chat","provider":"local","user":"local:default"}`,
		`{"agent":7,"provider":"google"}`,
		`{}`,
		`not json`,
	} {
		want := instantiate(templates, json.RawMessage(args))
		for range 3 {
			got := pm.needs(templates, json.RawMessage(args))
			require.Equal(t, want, got, args)
		}
	}
	require.Nil(t, pm.needs(nil, json.RawMessage(`{}`)))
	// A remembered answer costs no allocation (no copy of the key), and another memo (another
	// Driver's) remembers nothing of this one's.
	args := json.RawMessage(`{"agent":"builtin:chat","provider":"google","scopes":["a"]}`)
	require.Zero(t, testing.AllocsPerRun(100, func() { pm.needs(templates, args) }))
	require.Equal(t, 6, pm.n) // the six arguments above
	var other prefetchMemo
	require.Zero(t, other.n)
	for i := range maxPrefetchMemo + 1 {
		pm.needs(templates, json.RawMessage(`{"n":`+strconv.Itoa(i)+`}`))
	}
	require.LessOrEqual(t, pm.n, maxPrefetchMemo)
}

// TestIsHostErrorPrefilter: the cheap test in front of isHostError's decode changes no
// answer, whatever the spelling of the member (encoding/json matches names in any case,
// with Unicode folding, and escaped).
func TestIsHostErrorPrefilter(t *testing.T) {
	decoded := func(v json.RawMessage) bool {
		var f struct {
			HostError *HostError `json:"host_error"`
		}
		return len(v) >= 14 && v[0] == '{' && json.Unmarshal(v, &f) == nil && f.HostError != nil
	}
	for _, fact := range []string{
		`{"host_error":{"code":"IO","detail":"d"}}`,
		`{"HOST_ERROR":{"code":"IO","detail":"d"}}`,
		`{"Host_Error":{"code":"IO","detail":"d"}}`,
		`{"ho\u017ft_error":{"code":"IO","detail":"d"}}`, // ſ folds to s
		`{"host\u005ferror":{"code":"IO","detail":"d"}}`,
		`{"found":true,"value":{"$ref":"conn#value","crc32":"30454af9","digest":"sha256:5795da521783f96a"},"version":"5795da521783f96a"}`,
		`{"found":false}`,
		`{"exists":true,"found":true,"value":{"host_error":{"code":"x"}}}`,
		`{"host_error":null}`,
		`{"hosterror":{"code":"IO"}}`,
		`"held"`,
		`1790000000000`,
	} {
		v := json.RawMessage(fact)
		require.Equal(t, decoded(v), isHostError(v), fact)
	}
	require.True(t, isHostError(json.RawMessage(`{"HOST_ERROR":{"code":"IO","detail":"d"}}`)), "the test must see a positive")
	require.True(t, isHostError(json.RawMessage("{\"ho\u017ft_error\":{\"code\":\"IO\",\"detail\":\"d\"}}")), "folded spelling")
}
