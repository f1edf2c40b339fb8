package rest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A remote MCP server a person added with `grantwire mcp add` is a connector like a
// catalog's on every per-connector route: the policy knows it (mcp_remote.json), so no
// route refuses it as unknown; an id neither knows is still 404 with the policy's code.
func TestRESTRemoteMCPServer(t *testing.T) {
	w := newWorld(t)
	out, code := w.cli("", "mcp", "add", "notes", "--url", "https://mcp.example.com/mcp")
	require.Equal(t, 0, code, out)
	w.serve()

	one := w.do(req{method: "GET", path: "/api/connectors/notes"})
	require.Equal(t, 200, one.status, "%s", one.body)
	require.Equal(t, "mcp_remote", one.json(t)["type"])

	// grants
	r := w.do(req{method: "PUT", path: "/api/connectors/notes/grants/builtin:chat", ui: true, body: map[string]any{"scopes": []string{"use"}}})
	require.Equal(t, 200, r.status, "%s", r.body)
	r = w.do(req{method: "GET", path: "/api/connectors/notes/grants"})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"builtin:chat": []any{"use"}}, r.json(t)["grants"])
	r = w.do(req{method: "GET", path: "/api/connectors/notes/grants/builtin:chat"})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, true, r.json(t)["granted"])

	// activations
	r = w.do(req{method: "PUT", path: "/api/connectors/notes/activations/builtin:chat", ui: true})
	require.Equal(t, 200, r.status, "%s", r.body)
	r = w.do(req{method: "GET", path: "/api/connectors/notes/activations"})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"builtin:chat": true}, r.json(t)["activations"])
	r = w.do(req{method: "GET", path: "/api/connectors/notes/activations/builtin:chat"})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, true, r.json(t)["active"])

	// configure: the policy's own answer (a remote server takes no environment keys)
	r = w.do(req{method: "POST", path: "/api/connectors/notes/configure", ui: true, body: `{"config": {}}`})
	require.Equal(t, 400, r.status, "%s", r.body)
	require.Equal(t, "CONFIGURATION", r.code(t))
	require.Contains(t, string(r.body), "not a local MCP server")

	// a remote server has no forwarded connection: not found, not unknown
	r = w.do(req{method: "GET", path: "/v1/connections/notes"})
	require.Equal(t, 404, r.status, "%s", r.body)
	require.Equal(t, "NOT_FOUND", r.code(t))

	// an id neither the catalog nor mcp_remote.json knows: 404 with the policy's code
	for _, p := range []string{"/api/connectors/nope/grants", "/api/connectors/nope/grants/builtin:chat",
		"/api/connectors/nope/activations", "/api/connectors/nope/activations/builtin:chat", "/v1/connections/nope"} {
		r = w.do(req{method: "GET", path: p})
		require.Equal(t, 404, r.status, "%s: %s", p, r.body)
		require.Equal(t, "UNKNOWN_CONNECTOR", r.code(t), p)
	}
	r = w.do(req{method: "POST", path: "/api/connectors/nope/configure", ui: true, body: `{"config": {}}`})
	require.Equal(t, 404, r.status, "%s", r.body)
	require.Equal(t, "UNKNOWN_CONNECTOR", r.code(t))
}
