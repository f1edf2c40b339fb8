package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
)

// A keyring fact answered again (another operation, the same key, fields and value) is
// the same bytes, and its secrets resolve in the operation that got it; a new value, new
// fields or another key give another fact, and no fact carries a secret.
func TestKeyringFactRemembered(t *testing.T) {
	w, h := world()
	w.SetKeyring(svc, "p:default", `{"refresh_token":"rt-secret-1","scopes":["a"]}`)
	get := func(op hostabi.Performer, n string) string {
		raw, err := op.Fetch(context.Background(), need(t, n))
		require.NoError(t, err)
		require.NotContains(t, string(raw), "rt-secret")
		return string(raw)
	}
	const conn = `{"key":"conn","kind":"keyring.get","user":"p:default","fields":["refresh_token"],"fresh":true}`
	op1 := h.Begin("t")
	first := get(op1, conn)
	op1.End()
	op2 := h.Begin("t")
	require.Equal(t, first, get(op2, conn))
	for ref, want := range map[string]string{"conn#refresh_token": "rt-secret-1", "conn#value": `{"refresh_token":"rt-secret-1","scopes":["a"]}`} {
		v, ok := op2.Secret(ref)
		require.True(t, ok, ref)
		require.Equal(t, want, v)
	}
	// Other fields, another key: other facts, and their own references.
	noFields := get(op2, `{"key":"conn","kind":"keyring.get","user":"p:default","fresh":true}`)
	require.NotEqual(t, first, noFields)
	var f map[string]any
	require.NoError(t, json.Unmarshal([]byte(noFields), &f))
	require.NotContains(t, f, "json")
	other := get(op2, `{"key":"conn@lock","kind":"keyring.get","user":"p:default","fields":["refresh_token"],"fresh":true}`)
	require.Contains(t, other, `"conn@lock#refresh_token"`)
	v, ok := op2.Secret("conn@lock#refresh_token")
	require.True(t, ok)
	require.Equal(t, "rt-secret-1", v)
	// A new value: a new fact (another version, another digest).
	w.SetKeyring(svc, "p:default", `{"refresh_token":"rt-secret-2","scopes":["a"]}`)
	op3 := h.Begin("t")
	second := get(op3, conn)
	require.NotEqual(t, first, second)
	v, _ = op3.Secret("conn#refresh_token")
	require.Equal(t, "rt-secret-2", v)
	// An operation that did not read the slot resolves none of its references.
	op4 := h.Begin("t")
	_, ok = op4.Secret("conn#refresh_token")
	require.False(t, ok)
}
