package main_test

// Hostile remote MCP servers end to end: the built binary runs `mcp auth` against a server
// on 127.0.0.1 whose metadata lies (another server's resource, an authorization server
// whose metadata names another issuer, an http:// token endpoint, a redirect, 10 MB of
// metadata, a registration answer with javascript: URIs), and must refuse each with a clear
// error before anything is registered or stored.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// hostileServer is an MCP server and its authorization server in one: it answers every
// MCP request 401 with a challenge naming its protected resource metadata, and serves the
// documents prm(base) and as(base) build.
// A document that is a []byte is served as it is; /register answers dcr(base) (201) when
// dcr is not nil.
func hostileServer(t *testing.T, prm, as, dcr func(base string) any) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := srv.URL
		doc := func(v any) {
			if s, ok := v.(string); ok { // a redirect
				http.Redirect(w, r, s, http.StatusFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if b, ok := v.([]byte); ok {
				_, _ = w.Write(b) // the client stops reading at its cap: the error is expected
				return
			}
			_ = json.NewEncoder(w).Encode(v)
		}
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		case "/.well-known/oauth-protected-resource/mcp":
			doc(prm(base))
		case "/.well-known/oauth-authorization-server":
			doc(as(base))
		case "/register":
			if dcr == nil || r.Method != http.MethodPost {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(http.StatusCreated)
			doc(dcr(base))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func goodPRM(base string) any {
	return map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}}
}

func goodAS(base string) map[string]any {
	return map[string]any{
		"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
		"registration_endpoint": base + "/register", "code_challenge_methods_supported": []string{"S256"},
		"response_types_supported": []string{"code"},
	}
}

// hostileDCRSecret is the client secret a hostile registration answer carries: refused, it
// must be stored and printed nowhere.
const hostileDCRSecret = "hostile-dcr-secret-3f9a1c"

func TestE2ERemoteMCPHostileMetadata(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	cases := []struct {
		name, code, message string
		prm, as, dcr        func(string) any
	}{
		{
			name: "wrong-resource", code: "PROVIDER_ERROR", message: "its resource is not this server",
			prm: func(string) any {
				return map[string]any{"resource": "https://other.example.com/mcp", "authorization_servers": []string{"https://auth.example.com"}}
			},
		},
		{
			name: "issuer-mismatch", code: "PROVIDER_ERROR", message: "its issuer is not the authorization server it was fetched for",
			as: func(base string) any { m := goodAS(base); m["issuer"] = "https://evil.example.com"; return m },
		},
		{
			name: "http-token-endpoint", code: "PROVIDER_ERROR", message: "its token_endpoint is refused",
			as: func(base string) any {
				m := goodAS(base)
				m["token_endpoint"] = "http://auth.example.com/token"
				return m
			},
		},
		{
			name: "no-s256", code: "PROVIDER_ERROR", message: "S256",
			as: func(base string) any {
				m := goodAS(base)
				m["code_challenge_methods_supported"] = []string{"plain"}
				return m
			},
		},
		{
			name: "redirect", code: "PROVIDER_ERROR", message: "redirect, which grantwire never follows",
			prm: func(string) any { return "https://evil.example.com/prm" },
		},
		{
			name: "http-authorization-server", code: "PROVIDER_ERROR", message: "its authorization server cannot be used",
			prm: func(base string) any {
				return map[string]any{"resource": base + "/mcp", "authorization_servers": []string{"http://auth.example.com"}}
			},
		},
		{
			// 10 MB of metadata: refused at the 1 MiB cap (the host reads no further).
			name: "huge-metadata", code: "PROVIDER_ERROR", message: "answered with more than 1 MiB",
			as: func(base string) any {
				b, _ := json.Marshal(goodAS(base))
				return append(append(b[:len(b)-1], `,"pad":"`...), append(bytes.Repeat([]byte("a"), 10<<20), `"}`...)...)
			},
		},
		{
			// A registration answer with javascript: URIs (and a client secret, planted).
			name: "dcr-javascript", code: "PROVIDER_ERROR", message: "its answer's logo_uri is refused",
			dcr: func(string) any {
				return map[string]any{
					"client_id": "hostile-client", "client_secret": hostileDCRSecret,
					"redirect_uris": []string{"javascript:alert(1)"}, "logo_uri": "javascript:alert(document.cookie)",
				}
			},
		},
		{
			name: "dcr-javascript-redirect", code: "PROVIDER_ERROR", message: "its answer's redirect_uris are refused",
			dcr: func(string) any {
				return map[string]any{"client_id": "hostile-client", "client_secret": hostileDCRSecret, "redirect_uris": []string{"javascript:alert(1)"}}
			},
		},
	}
	w.plant(hostileDCRSecret)
	for _, c := range cases {
		prm, as := c.prm, c.as
		if prm == nil {
			prm = goodPRM
		}
		if as == nil {
			as = func(base string) any { return goodAS(base) }
		}
		srv := hostileServer(t, prm, as, c.dcr)
		require.Equal(t, 0, w.gw("", "mcp", "add", c.name, "--url", srv.URL+"/mcp").code)
		e := w.fail(5, c.code, "mcp", "auth", c.name, "--no-browser")
		require.Contains(t, e.Error.Message, c.message, c.name)
		require.Empty(t, w.keyring(c.name+":mcp_client"), "%s: no registration stored", c.name)
		require.Empty(t, w.keyring(c.name+":mcp_token"), "%s: no tokens stored", c.name)
	}
}
