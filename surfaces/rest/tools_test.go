package rest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRESTToolRules: the tool rules per agent (docs/behaviour.md#tools) through the API the
// page uses: PUT an activation with tools sets the rule, the listings show it, all_tools
// removes it, a bad rule is USAGE and changes nothing (each response checked against
// openapi.json by the harness).
func TestRESTToolRules(t *testing.T) {
	w := newWorld(t)
	w.serve()
	path := "/api/connectors/mcp-brave-search/activations/builtin:research"

	r := w.do(req{method: "PUT", path: path, ui: true, body: `{"tools": ["brave_web_search", "brave_local_search"]}`})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, []any{"brave_local_search", "brave_web_search"}, r.json(t)["tools"])
	require.Equal(t, true, r.json(t)["auto_granted"], "one click: granted, activated and the rule set")

	one := w.do(req{method: "GET", path: path}).json(t)
	require.Equal(t, true, one["active"])
	require.Equal(t, []any{"brave_local_search", "brave_web_search"}, one["tools"])
	list := w.do(req{method: "GET", path: "/api/connectors/mcp-brave-search/activations"}).json(t)
	require.Equal(t, map[string]any{"builtin:research": []any{"brave_local_search", "brave_web_search"}}, list["tools"])
	conn := w.do(req{method: "GET", path: "/api/connectors/mcp-brave-search"}).json(t)
	require.Equal(t, map[string]any{"builtin:research": []any{"brave_local_search", "brave_web_search"}}, conn["tools"])

	// refused: a name no rule can hold, both at once; nothing changes
	for _, body := range []string{`{"tools": ["a b"]}`, `{"tools": ["x"], "all_tools": true}`, `{"tools": "x"}`} {
		r = w.do(req{method: "PUT", path: path, ui: true, body: body})
		require.Equal(t, 400, r.status, "%s: %s", body, r.body)
	}
	require.Equal(t, []any{"brave_local_search", "brave_web_search"}, w.do(req{method: "GET", path: path}).json(t)["tools"])

	// no tool at all, then every tool again
	r = w.do(req{method: "PUT", path: path, ui: true, body: `{"tools": []}`})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, []any{}, w.do(req{method: "GET", path: path}).json(t)["tools"])
	r = w.do(req{method: "PUT", path: path, ui: true, body: `{"all_tools": true}`})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Nil(t, r.json(t)["tools"])
	require.Nil(t, w.do(req{method: "GET", path: path}).json(t)["tools"])
	require.Equal(t, map[string]any{}, w.do(req{method: "GET", path: "/api/connectors/mcp-brave-search/activations"}).json(t)["tools"])
}
