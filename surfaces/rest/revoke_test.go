package rest_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// Revoking through the API says what it could not clean, as the CLI does: with the
// activations ledger unreadable the grant is still revoked, and the body's warnings name
// the ledger with the command that moves it aside; the ledger is left as it was.
func TestRESTRevokeWarnings(t *testing.T) {
	w := newWorld(t)
	w.serve()
	r := w.do(req{method: "PUT", path: "/api/connectors/google/grants/builtin:calendar", ui: true, body: map[string]any{"scopes": []string{gmail}}})
	require.Equal(t, 200, r.status, "%s", r.body)

	ledger := w.ledger("activations.json")
	broken := []byte(`{"activations": {`)
	require.NoError(t, os.WriteFile(ledger, broken, 0o600))

	r = w.do(req{method: "DELETE", path: "/api/connectors/google/grants/builtin:calendar", ui: true})
	require.Equal(t, 200, r.status, "%s", r.body)
	body := r.json(t)
	require.Equal(t, true, body["changed"])
	require.Equal(t, "google", body["connector_id"])
	warnings, _ := body["warnings"].([]any)
	require.Len(t, warnings, 1, "%s", r.body)
	require.Contains(t, warnings[0], ledger)
	require.Contains(t, warnings[0], "mv "+ledger+" "+ledger+".corrupt")
	after, err := os.ReadFile(ledger)
	require.NoError(t, err)
	require.Equal(t, broken, after, "a corrupt ledger is never rewritten")

	// the grant is gone; a second revoke changes nothing and warns again
	require.Equal(t, false, w.do(req{method: "GET", path: "/api/connectors/google/grants/builtin:calendar"}).json(t)["granted"])
	r = w.do(req{method: "DELETE", path: "/api/connectors/google/grants/builtin:calendar", ui: true})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, false, r.json(t)["changed"])

	// with the ledger readable again: no warning
	require.NoError(t, os.Remove(ledger))
	r = w.do(req{method: "DELETE", path: "/api/connectors/google/grants/builtin:calendar", ui: true})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, []any{}, r.json(t)["warnings"])
}
