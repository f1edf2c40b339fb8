package mcpremote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"
)

// TestParamHeaders: the Mcp-Param headers the proxy mirrors from a tools/call's arguments
// (SEP-2243), learned from the server's tools/list: plain ASCII as is, base64 for
// non-ASCII, control characters and leading or trailing whitespace, integers and
// booleans as text, null and unannotated arguments left out, nested properties followed;
// a tool with an invalid annotation gets none; only on a POST at 2026-07-28 or later.
func TestParamHeaders(t *testing.T) {
	p := &paramHeaders{}
	p.learn([]byte(`{"tools":[
		{"name":"t","inputSchema":{"type":"object","properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"n":{"type":"integer","x-mcp-header":"N"},
			"b":{"type":"boolean","x-mcp-header":"B"},
			"u":{"type":"string","x-mcp-header":"U"},
			"pad":{"type":"string","x-mcp-header":"Pad"},
			"crlf":{"type":"string","x-mcp-header":"CrLf"},
			"gone":{"type":"boolean","x-mcp-header":"Gone"},
			"f":{"type":"number"},
			"o":{"type":"object","properties":{"in":{"type":"string","x-mcp-header":"In"}}}}}},
		{"name":"dup","inputSchema":{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}},
		{"name":"obj","inputSchema":{"properties":{"a":{"type":"object","x-mcp-header":"A"}}}},
		{"name":"colon","inputSchema":{"properties":{"a":{"type":"string","x-mcp-header":"A:B"}}}}]}`))
	h := p.forCall([]byte(`{"name":"t","arguments":{"region":"us-west1","n":42,"b":false,"u":"Hello, 世界",
		"pad":" x ","crlf":"a\r\nb","gone":null,"f":3.5,"o":{"in":"deep"}}}`))
	require.Equal(t, http.Header{
		"Mcp-Param-Region": {"us-west1"}, "Mcp-Param-N": {"42"}, "Mcp-Param-B": {"false"},
		"Mcp-Param-U": {"=?base64?SGVsbG8sIOS4lueVjA==?="}, "Mcp-Param-Pad": {"=?base64?IHgg?="},
		"Mcp-Param-CrLf": {"=?base64?YQ0KYg==?="}, "Mcp-Param-In": {"deep"},
	}, h)
	for _, name := range []string{"dup", "obj", "colon", "unlisted"} {
		require.Nil(t, p.forCall([]byte(`{"name":"`+name+`","arguments":{"a":"v"}}`)), name)
	}

	post := func(version string) *http.Request {
		r, err := http.NewRequestWithContext(withParamHeaders(context.Background(), h), http.MethodPost, "http://127.0.0.1/", nil)
		require.NoError(t, err)
		if version != "" {
			r.Header.Set("MCP-Protocol-Version", version)
		}
		return setParamHeaders(r)
	}
	require.Equal(t, "us-west1", post("2026-07-28").Header.Get("Mcp-Param-Region"))
	require.Empty(t, post("2025-11-25").Header.Get("Mcp-Param-Region"), "no such headers before 2026-07-28")
	require.Empty(t, post("").Header.Get("Mcp-Param-Region"))
}

// TestServerError: the server's own JSON-RPC error is found inside the transport's error
// (and forwarded to the client as it was sent); the transport's "rejected by transport"
// alone is not the server's.
func TestServerError(t *testing.T) {
	rejected := &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}
	server := &jsonrpc.Error{Code: -32022, Message: "Unsupported protocol version", Data: []byte(`{"supported":["2026-07-28"]}`)}
	require.Same(t, server, serverError(fmt.Errorf("sending %q: %w: %w: %v", "server/discover", server, rejected, "Bad Request")))
	require.Nil(t, serverError(fmt.Errorf("sending %q: %w: %w", "ping", rejected, errors.New("connection refused"))))
	require.Nil(t, serverError(nil))
}
