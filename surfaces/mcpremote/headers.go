package mcpremote

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// standardHeadersSince is the first MCP protocol version whose HTTP requests carry the
// standard headers (SEP-2243): Mcp-Method, Mcp-Name and the Mcp-Param-{Name} headers
// mirrored from tool arguments annotated with x-mcp-header.
const standardHeadersSince = "2026-07-28"

// paramHeaders remembers, per tool, which arguments the server asked to see mirrored in
// Mcp-Param-{Name} headers (the x-mcp-header annotations of the tool's inputSchema in the
// server's tools/list results, which the proxy forwards to the client untouched). The MCP
// SDK's transport sets the standard Mcp-Method and Mcp-Name headers itself, but the
// parameter headers only for a call made in its own client session, which knows the
// tool: a message-level proxy has none, so it mirrors them itself. A tool whose
// annotations are invalid (not a non-empty HTTP token, on a non-primitive property, or a
// name used twice) gets no headers: clients must not call it (SEP-2243), and a header
// the server cannot trust is worse than none.
type paramHeaders struct {
	mu    sync.Mutex
	tools map[string][]paramBinding
}

// paramBinding: the argument at path is mirrored in Mcp-Param-<header>.
type paramBinding struct {
	path   []string
	header string
}

// schemaProp is the part of an inputSchema property the annotations need.
type schemaProp struct {
	Type       json.RawMessage       `json:"type"`
	XMCPHeader json.RawMessage       `json:"x-mcp-header"`
	Properties map[string]schemaProp `json:"properties"`
}

// learn reads a tools/list result and records each tool's bindings.
func (p *paramHeaders) learn(result json.RawMessage) {
	var res struct {
		Tools []struct {
			Name        string     `json:"name"`
			InputSchema schemaProp `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &res) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tools == nil {
		p.tools = map[string][]paramBinding{}
	}
	for _, t := range res.Tools {
		var list []paramBinding
		if collectBindings(t.InputSchema.Properties, nil, map[string]bool{}, &list) {
			p.tools[t.Name] = list
		} else {
			delete(p.tools, t.Name)
		}
	}
}

// collectBindings walks the properties (nested objects too) and reports whether every
// annotation is valid.
func collectBindings(props map[string]schemaProp, prefix []string, seen map[string]bool, out *[]paramBinding) bool {
	for name, prop := range props {
		path := append(append([]string(nil), prefix...), name)
		if prop.XMCPHeader != nil {
			var header, typ string
			if json.Unmarshal(prop.XMCPHeader, &header) != nil || !isToken(header) {
				return false
			}
			if json.Unmarshal(prop.Type, &typ) != nil || (typ != "string" && typ != "integer" && typ != "boolean") {
				return false
			}
			if seen[strings.ToLower(header)] {
				return false
			}
			seen[strings.ToLower(header)] = true
			*out = append(*out, paramBinding{path: path, header: header})
		}
		if !collectBindings(prop.Properties, path, seen, out) {
			return false
		}
	}
	return true
}

// isToken: a non-empty HTTP field name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

// forCall is the Mcp-Param headers of a tools/call request's params (nil when the tool
// has no annotations or was never listed).
func (p *paramHeaders) forCall(params json.RawMessage) http.Header {
	var call struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &call) != nil {
		return nil
	}
	p.mu.Lock()
	bindings := p.tools[call.Name]
	p.mu.Unlock()
	if len(bindings) == 0 {
		return nil
	}
	h := http.Header{}
	for _, b := range bindings {
		raw, ok := jsonx.RawAt(call.Arguments, b.path)
		if !ok {
			continue
		}
		if v, ok := headerValue(raw); ok {
			h["Mcp-Param-"+b.header] = []string{v}
		}
	}
	return h
}

// headerValue encodes an argument for its header: a string as itself unless it has a
// character outside printable ASCII or leading or trailing whitespace, then as
// =?base64?<UTF-8 in base64>?=; an integer (within the safe range) in decimal; a boolean
// as true or false. null and anything else is not sent.
func headerValue(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		if needsBase64(v) {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?=", true
		}
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53-1 {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if strings.TrimSpace(s) != s {
		return true
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return true
		}
	}
	return false
}

// paramHeadersKey carries a request's Mcp-Param headers from the proxy to its HTTP client.
type paramHeadersKey struct{}

func withParamHeaders(ctx context.Context, h http.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, paramHeadersKey{}, h)
}

// setParamHeaders adds the request's Mcp-Param headers when it is sent with a protocol
// version that has them.
func setParamHeaders(r *http.Request) *http.Request {
	h, _ := r.Context().Value(paramHeadersKey{}).(http.Header)
	if len(h) == 0 || r.Method != http.MethodPost || r.Header.Get("MCP-Protocol-Version") < standardHeadersSince {
		return r
	}
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header[k] = v
	}
	return r
}
