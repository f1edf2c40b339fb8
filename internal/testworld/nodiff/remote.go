package nodiff

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// The remote MCP servers behind OAuth 2.1 (policy packages remote, remoteauth,
// remotetoken, discovery): the arguments of mcp_add, mcp_auth, mcp_token, mcp_logout and
// mcp_remote_list, and the world's side of them: the servers file mcp_remote.json, the
// keyring slots <c>:mcp_token, <c>:mcp_client and <c>:mcp_preregistered, and the HTTP
// exchanges of an authorization (the probe for the server's challenge, protected-resource
// and authorization-server metadata, dynamic registration), each drawn consistently with
// one issuer per server (mostly) and with every kind of failure.

// addedIDs are ids of remote servers a person may have added (mcp_add), next to the
// catalog's mcp_remote entries.
var addedIDs = []string{"team-docs", "wiki.v2", "a", "x_1"}

var remoteURLs = []string{
	"https://mcp.example.com/mcp", "https://mcp.example.com/mcp", "https://mcp.example.com/", "https://mcp.example.com",
	"https://tools.example.org/v1/mcp?tenant=a", "http://localhost:8931/mcp", "http://127.0.0.1:9000/", "https://[::1]/mcp",
}

var badRemoteURLs = []string{
	"http://mcp.example.com/mcp", "https://mcp.example.com/mcp#frag", "ftp://x.example/", "https://169.254.169.254/",
	"https://u:p@mcp.example.com/", "mcp.example.com", "", "https://zoë.example/", "https://127.1/",
}

var issuers = []string{
	"https://auth.example.com", "https://auth.example.com", "https://auth.example.com/tenant1", "http://localhost:9000",
}

// remoteConnector is a connector id for the remote operations: the catalog's remote
// servers, added ones, other catalog ids (a local server, an OAuth provider) or ids no one has.
func (g *Gen) remoteConnector() any {
	switch x := g.r.Float64(); {
	case x < 0.4:
		return g.connector("mcp_remote")
	case x < 0.8:
		return pick(g, addedIDs)
	case x < 0.9:
		return g.connector()
	case x < 0.95:
		return pick(g, []any{"Bad ID!", "-x", strings.Repeat("a", 65), "zoë", "new-server"})
	}
	return g.junk()
}

func (g *Gen) remoteURL() any {
	switch {
	case g.chance(0.12):
		return pick(g, badRemoteURLs)
	case g.chance(0.02):
		return g.junk()
	}
	return pick(g, remoteURLs)
}

// remoteArgs are the arguments of the remote operations (a, to fill).
func (g *Gen) remoteArgs(op string, a map[string]any) {
	switch op {
	case "mcp_add":
		a["connector"] = g.remoteConnector()
		if g.chance(0.3) {
			a["connector"] = pick(g, []any{"new-server", "my.server_2", "0abc"})
		}
		a["url"] = g.remoteURL()
		g.optional(a, "scopes", 0.5, 0.1, func() any {
			if g.chance(0.03) {
				list := []any{}
				for i := range 65 {
					list = append(list, fmt.Sprintf("s%d", i))
				}
				return list
			}
			return g.scopesArg(3)
		})
		g.optional(a, "client_id", 0.6, 0.1, func() any { return pick(g, []any{"client-123", "client-123", "", json.Number("1")}) })
		g.optional(a, "issuer", 0.7, 0.05, func() any {
			return pick(g, append(toAny(issuers), "https://auth.example.com?x=1", "http://auth.example.com", "", json.Number("1")))
		})
		g.optional(a, "client_metadata_url", 0.8, 0.05, func() any {
			return pick(g, []any{"https://app.example.com/client.json", "https://app.example.com/client.json", "https://app.example.com/",
				"http://app.example.com/c.json", "https://app.example.com/c.json#x", "https://10.0.0.1/c.json", ""})
		})
		// machine grants (issue 21 §1)
		g.optional(a, "grant", 0.6, 0.03, func() any {
			return pick(g, []any{"client_credentials", "client_credentials", "jwt_bearer", "id_jag", "id_jag", "authorization_code", "password", ""})
		})
		g.optional(a, "idp_token_endpoint", 0.65, 0.03, func() any {
			return pick(g, []any{"https://idp.example.com/token", "https://idp.example.com/token", "http://idp.example.com/token", "https://idp.example.com/t#x", ""})
		})
		g.optional(a, "idp_client_id", 0.8, 0.03, func() any { return pick(g, []any{"gw-at-idp", ""}) })
	case "mcp_auth":
		a["connector"] = g.remoteConnector()
		g.optional(a, "scopes", 0.6, 0.05, func() any { return g.scopesArg(2) })
		g.optional(a, "www_authenticate", 0.6, 0.05, func() any {
			if g.chance(0.05) {
				return pick(g, []any{"not base64!", json.Number("1"), strings.Repeat("QUFB", 4100)})
			}
			return base64.RawURLEncoding.EncodeToString([]byte(g.challenge("", "")))
		})
		g.optional(a, "status", 0.7, 0.05, func() any {
			return pick(g, []any{json.Number("401"), json.Number("403"), json.Number("403"), json.Number("500"), "401"})
		})
		g.optional(a, "rejected", 0.6, 0.05, func() any {
			return pick(g, []any{jsonx.Digest(remoteAccess), "sha256:0123456789abcdef", "", json.Number("1")})
		})
		g.optional(a, "step_up", 0.7, 0.05, func() any {
			return pick(g, []any{json.Number("0"), json.Number("1"), json.Number("2"), json.Number("3"), json.Number("-1"), map[string]any{"$number": "1.5"}})
		})
		g.optional(a, "timeout_ms", 0.8, 0.02, func() any {
			return pick(g, []any{json.Number("1000"), json.Number("60000"), json.Number("999"), json.Number("1800001"), "60000"})
		})
	case "mcp_token":
		a["connector"], a["agent"] = g.remoteConnector(), g.agentArg()
		g.optional(a, "rejected", 0.6, 0.05, func() any {
			return pick(g, []any{jsonx.Digest(remoteAccess), "sha256:0123456789abcdef", "", json.Number("1")})
		})
	case "mcp_challenge":
		a["connector"] = g.remoteConnector()
		if g.chance(0.03) {
			a["connector"] = json.Number("1")
		}
		a["status"] = pick(g, []any{json.Number("401"), json.Number("401"), json.Number("403"), json.Number("403"), json.Number("500"), "401", map[string]any{"$number": "401.5"}})
		a["sent"] = pick(g, []any{"none", "other", "current", "current", "fresh", "fresh", "mine", json.Number("1")})
		g.optional(a, "www_authenticate", 0.7, 0.05, func() any {
			if g.chance(0.05) {
				return pick(g, []any{json.Number("1"), strings.Repeat("QUFB", 4100)})
			}
			return base64.RawURLEncoding.EncodeToString([]byte(g.challenge("", "")))
		})
		for _, k := range []string{"uses", "authorizations", "step_ups"} {
			g.optional(a, k, 0.5, 0.05, func() any {
				return pick(g, []any{json.Number("0"), json.Number("1"), json.Number("2"), json.Number("3"), json.Number("4"), json.Number("-1"), map[string]any{"$number": "1.5"}})
			})
		}
		g.optional(a, "refreshed", 0.5, 0.05, func() any { return pick(g, []any{true, false, "yes"}) })
	case "mcp_logout", "mcp_remove":
		a["connector"] = g.remoteConnector()
	case "mcp_remote_list":
		g.optional(a, "agent", 0.5, 0.1, func() any { return g.agentArg() })
	}
}

// remoteAccess is an access token the world stores sometimes, whose digest the rejected
// argument of mcp_token and mcp_auth names sometimes.
const remoteAccess = "mcp-access-0001"

// challenge is a WWW-Authenticate value: a Bearer challenge with resource_metadata (prm,
// or one drawn), scope and error parameters, sometimes after or before another scheme,
// sometimes malformed.
func (g *Gen) challenge(prm, scope string) string {
	if prm == "" || g.chance(0.2) {
		prm = pick(g, []string{"https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
			"https://mcp.example.com/.well-known/oauth-protected-resource", "http://evil.example/prm", "https://other.example/prm"})
	}
	if scope == "" || g.chance(0.3) {
		scope = pick(g, []string{"files:read", "files:read files:write", "", "a b c"})
	}
	var params []string
	if g.chance(0.8) {
		params = append(params, `resource_metadata="`+prm+`"`)
	}
	if g.chance(0.6) {
		params = append(params, `scope="`+scope+`"`)
	}
	if g.chance(0.3) {
		params = append(params, pick(g, []string{`error="insufficient_scope"`, `error=insufficient_scope`, `error="invalid_token"`}))
	}
	if g.chance(0.1) {
		params = append(params, pick(g, []string{`realm="a\"b"`, `scope="x"`, `Scope=y`, `x=`}))
	}
	h := "Bearer " + strings.Join(params, ", ")
	switch x := g.r.Float64(); {
	case x < 0.1:
		h = `Basic realm="x", ` + h
	case x < 0.15:
		h = h + `, DPoP algs="ES256"`
	case x < 0.18:
		h = "DPoP " + strings.Join(params, ", ") // a server that takes DPoP-bound tokens only (RFC 9449 §7.1)
	case x < 0.2:
		h = pick(g, []string{"Bearer", "bearer abc==", `Negotiate`, "", `Bearer scope="unterminated`})
	}
	return h
}

// rem is what the world holds about remote server c: its URL, the issuer of its
// authorization server, the client ids registered there.
type rem struct {
	url, issuer     string
	clientID, preID string
	access          string
}

func (w *world) rem(c string) *rem {
	if w.rems == nil {
		w.rems = map[string]*rem{}
	}
	if r, ok := w.rems[c]; ok {
		return r
	}
	g := w.g
	r := &rem{clientID: "dcr-" + g.token(6), preID: "client-123", access: "mcp-" + g.token(8)}
	if u, ok := g.cat.entries[c]["url"].(string); ok && !g.chance(0.05) {
		r.url = u
	} else {
		r.url = pick(g, remoteURLs)
	}
	r.issuer = pick(g, issuers)
	if g.chance(0.2) {
		r.issuer = originOf(r.url)
	}
	if g.chance(0.1) {
		r.access = remoteAccess
	}
	w.rems[c] = r
	return r
}

// remoteConn is the connector a remote operation is about.
func (w *world) remoteConn() string {
	if len(w.conns) > 0 {
		return w.conns[0]
	}
	return "team-docs"
}

// originOf is scheme://authority of a URL (the URL itself when it has no scheme).
func originOf(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	i := strings.IndexAny(rest, "/?#")
	if i < 0 {
		return u
	}
	return scheme + "://" + rest[:i]
}

// remoteDoc is mcp_remote.json: the servers a person added (those of the arguments often).
func (w *world) remoteDoc() any {
	g := w.g
	servers := map[string]any{}
	add := func(c string) {
		r := w.rem(c)
		e := map[string]any{"url": r.url, "added_at": json.Number("1789990000123")}
		if g.chance(0.4) {
			e["scopes"] = g.scopeList(2)
		}
		if g.chance(0.3) {
			e["preregistered"] = map[string]any{"issuer": pick(g, []any{r.issuer, nil, "https://other.example"})}
		}
		if g.chance(0.15) {
			e["client_metadata_url"] = pick(g, []any{"https://app.example.com/client.json", json.Number("1")})
		}
		if g.chance(0.5) {
			e["auth"] = map[string]any{"issuer": r.issuer, "resource": r.url, "scopes": []any{"files:read"},
				"authorized_at": json.Number("1789990000123"), "registration": pick(g, []any{"dynamic", "preregistered"})}
		}
		if g.chance(0.4) {
			e["grant"] = pick(g, []any{"client_credentials", "client_credentials", "jwt_bearer", "id_jag", "id_jag", "id_jag", "password", json.Number("1")})
			if e["grant"] == "id_jag" && g.chance(0.9) {
				e["idp"] = map[string]any{"token_endpoint": pick(g, []any{"https://idp.example.com/token", "https://idp.example.com/token", json.Number("1")}),
					"client_id": pick(g, []any{"gw-at-idp", nil})}
			}
		}
		if g.chance(0.04) {
			e["url"] = pick(g, []any{json.Number("1"), nil, "http://mcp.example.com/"})
		}
		servers[c] = e
	}
	for _, c := range w.conns {
		if w.happy || g.chance(0.7) {
			add(c)
		}
	}
	for range g.r.IntN(3) {
		add(pick(g, append(append([]string{}, addedIDs...), "Bad ID!", "google", w.someConnector())))
	}
	doc := map[string]any{"version": json.Number("1"), "servers": servers}
	if g.chance(0.05) {
		delete(doc, "version")
	}
	if g.chance(0.03) {
		delete(doc, "servers")
	}
	return w.misshape(doc, func(m map[string]any) {
		switch g.r.IntN(3) {
		case 0:
			m["servers"] = pick(g, []any{[]any{}, "x"})
		default:
			servers[w.someConnector()] = pick(g, []any{"x", []any{}, json.Number("1")})
		}
	})
}

// drawRemote draws the remote slots: tokens, a registration, a pre-registered client.
func (w *world) drawRemote(user string) (*string, bool) {
	g := w.g
	c, kind, ok := cutLast(user, ":")
	if !ok || !strings.HasPrefix(kind, "mcp_") {
		return nil, false
	}
	r := w.rem(c)
	absent := 0.25
	if w.happy {
		absent = 0.1
	}
	if g.chance(absent) {
		return nil, true
	}
	if w.risk(0.05) {
		return some(pick(g, []string{"not json", "[]", `{"client_id":""}`, `{"access_token":"a"}`, "{}"})), true
	}
	switch kind {
	case "mcp_token":
		iss := r.issuer
		if g.chance(0.05) {
			iss = "https://other.example"
		}
		m := map[string]any{
			"access_token": r.access, "issuer": iss, "resource": r.url,
			"expires_at":          json.Number(fmt.Sprint(safeAdd(w.now, pick(g, expiries)))),
			"token_endpoint":      pick(g, []any{iss + "/token", iss + "/token", "http://evil.example/token"}),
			"revocation_endpoint": pick(g, []any{iss + "/revoke", nil, "http://evil.example/revoke"}),
			"client":              pick(g, []any{"registered", "registered", "preregistered", "other"}),
			"client_id_hash":      jsonx.CRC32(r.clientID),
			"scopes":              pick(g, []any{[]any{"files:read"}, []any{}, []any{"files:read", "files:write"}}),
			"requested":           []any{"files:read"},
		}
		if m["client"] == "preregistered" {
			m["client_id_hash"] = jsonx.CRC32(r.preID)
		}
		if g.chance(0.1) {
			m["client_id_hash"] = jsonx.CRC32("someone-else")
		}
		if g.chance(0.75) {
			m["refresh_token"] = "rt-" + g.token(6)
		}
		if g.chance(0.3) { // a DPoP-bound token (RFC 9449)
			m["dpop_key"] = pick(g, []any{"-----BEGIN PRIVATE KEY-----" + g.token(8), "-----BEGIN PRIVATE KEY-----" + g.token(8), ""})
			m["dpop_jwk"] = pick(g, []any{map[string]any{"kty": "EC", "crv": "P-256", "x": "eA", "y": "eQ"}, map[string]any{"kty": "EC", "crv": "P-256", "x": "eA", "y": "eQ"}, "x"})
		}
		if g.chance(0.3) {
			m["auth_method"] = pick(g, []any{"client_secret_basic", "client_secret_post", "none", "bogus"})
		}
		g.tamper(m, 0.05)
		return some(encode(m)), true
	case "mcp_client":
		m := map[string]any{"client_id": r.clientID, "issuer": r.issuer, "source": pick(g, []any{"dcr", "dcr", "cimd"}),
			"auth_method":  pick(g, []any{"none", "none", "client_secret_basic", "client_secret_post", "bogus"}),
			"redirect_uri": fmt.Sprintf("http://127.0.0.1:%d/callback", 40000+g.r.IntN(3))}
		if g.chance(0.3) {
			m["client_secret"] = "cs-" + g.token(6)
		}
		if g.chance(0.1) {
			m["issuer"] = "https://other.example"
		}
		g.tamper(m, 0.05)
		return some(encode(m)), true
	case "mcp_preregistered":
		m := map[string]any{"client_id": r.preID, "issuer": pick(g, []any{r.issuer, r.issuer, nil, "https://other.example"}), "source": "preregistered"}
		if g.chance(0.5) {
			m["client_secret"] = pick(g, []any{"ps-" + g.token(6), ""})
		}
		if g.chance(0.25) {
			m["private_key"] = "-----BEGIN PRIVATE KEY-----\npk-" + g.token(6) + "\n-----END PRIVATE KEY-----\n"
		}
		if g.chance(0.3) {
			m["assertion"] = "eyJ." + g.token(6) + ".sig"
		}
		g.tamper(m, 0.05)
		return some(encode(m)), true
	}
	return nil, false
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

var jsonHeaders = map[string]any{"content-type": "application/json"}

// remoteHTTP answers the discovery and registration requests of mcp_auth (ok false for
// another request).
func (w *world) remoteHTTP(n core.Need) (any, bool) {
	g := w.g
	r := w.rem(w.remoteConn())
	switch {
	case n.Key == "probe":
		switch x := g.r.Float64(); {
		case x < 0.7 || w.happy:
			prm := originOf(r.url) + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(pathOf(r.url), "/")
			status := pick(g, []string{"401", "401", "401", "403"})
			return map[string]any{"status": json.Number(status), "headers": map[string]any{"www-authenticate": g.challenge(prm, "")}, "json": nil}, true
		case x < 0.8:
			return map[string]any{"status": json.Number("200"), "headers": jsonHeaders, "json": map[string]any{"jsonrpc": "2.0"}}, true
		case x < 0.87:
			return map[string]any{"status": json.Number("401"), "headers": map[string]any{}, "json": nil}, true
		case x < 0.93:
			return map[string]any{"status": json.Number(pick(g, []string{"302", "500"})), "headers": map[string]any{}, "json": nil}, true
		}
		return map[string]any{"status": json.Number("0"), "error": pick(g, []any{"timeout", "refused", "weird"})}, true
	case strings.HasPrefix(n.Key, "prm|"):
		if v, ok := w.docFailure(); ok {
			return v, true
		}
		doc := map[string]any{"resource": r.url, "authorization_servers": []any{r.issuer}}
		if g.chance(0.6) {
			doc["scopes_supported"] = []any{"files:read", "files:write"}
		}
		switch x := g.r.Float64(); {
		case w.happy:
		case x < 0.05:
			doc["resource"] = "https://other.example/mcp"
		case x < 0.08:
			doc["authorization_servers"] = pick(g, []any{[]any{}, []any{"http://evil.example"}, "x", []any{"https://a.example?x"}})
		case x < 0.1:
			doc["scopes_supported"] = "files:read"
		case x < 0.13:
			doc["resource"] = originOf(r.url)
		}
		return map[string]any{"status": json.Number("200"), "headers": jsonHeaders, "json": doc}, true
	case strings.HasPrefix(n.Key, "as|"):
		if v, ok := w.docFailure(); ok {
			return v, true
		}
		iss := issuerOfMetadata(n.Str("url"))
		doc := map[string]any{
			"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token",
			"code_challenge_methods_supported": []any{"S256"}, "response_types_supported": []any{"code"},
		}
		if g.chance(0.7) || w.happy {
			doc["registration_endpoint"] = iss + "/register"
		}
		if g.chance(0.5) {
			doc["revocation_endpoint"] = iss + "/revoke"
		}
		if g.chance(0.5) {
			doc["scopes_supported"] = []any{"files:read", "files:write", "offline_access"}
		}
		if g.chance(0.5) {
			doc["authorization_response_iss_parameter_supported"] = g.chance(0.8)
		}
		if g.chance(0.2) {
			doc["client_id_metadata_document_supported"] = true
		}
		if g.chance(0.35) {
			doc["dpop_signing_alg_values_supported"] = pick(g, []any{[]any{"ES256"}, []any{"RS256", "ES256"}, []any{"RS256"}, "ES256"})
		}
		if g.chance(0.3) {
			doc["token_endpoint_auth_methods_supported"] = pick(g, []any{[]any{"none"}, []any{"client_secret_post"}, []any{"client_secret_basic", "none"}, "x",
				[]any{"private_key_jwt", "client_secret_basic"}})
		}
		if g.chance(0.25) {
			doc["grant_types_supported"] = pick(g, []any{[]any{"authorization_code", "refresh_token"},
				[]any{"authorization_code", "client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"}, "x"})
		}
		if g.chance(0.15) {
			doc["token_endpoint_auth_signing_alg_values_supported"] = pick(g, []any{[]any{"ES256"}, []any{"RS256", "PS256"}, "x"})
		}
		switch x := g.r.Float64(); {
		case w.happy:
		case x < 0.04:
			doc["issuer"] = iss + "/"
		case x < 0.07:
			doc["code_challenge_methods_supported"] = pick(g, []any{[]any{"plain"}, nil})
		case x < 0.09:
			doc["response_types_supported"] = []any{"token"}
		case x < 0.11:
			delete(doc, "token_endpoint")
		case x < 0.14:
			doc[pick(g, []string{"token_endpoint", "jwks_uri", "registration_endpoint"})] = pick(g, []any{"http://evil.example/x", json.Number("1")})
		}
		w.lastIssuer = iss
		return map[string]any{"status": json.Number("200"), "headers": jsonHeaders, "json": doc}, true
	case n.Key == "idjag":
		switch x := g.r.Float64(); {
		case x < 0.7 || w.happy:
			j := map[string]any{"access_token": jsonx.Describe("idjag#access_token", "eyJ.jag-"+g.token(6)+".sig"),
				"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}
			if g.chance(0.1) && !w.happy {
				j["issued_token_type"] = pick(g, []any{"urn:ietf:params:oauth:token-type:access_token", nil})
			}
			if g.chance(0.05) && !w.happy {
				delete(j, "access_token")
			}
			return map[string]any{"status": json.Number("200"), "headers": jsonHeaders, "json": j}, true
		case x < 0.85:
			return map[string]any{"status": json.Number("400"), "headers": jsonHeaders, "json": pick(g, []any{
				map[string]any{"error": "invalid_grant"}, map[string]any{"error": "bad code!"}, nil})}, true
		case x < 0.93:
			return map[string]any{"status": json.Number(pick(g, []string{"500", "302"})), "headers": map[string]any{}, "json": nil}, true
		}
		return map[string]any{"status": json.Number("0"), "error": "refused"}, true
	case n.Key == "dcr":
		var body map[string]any
		_ = n.Decode("json", &body)
		switch x := g.r.Float64(); {
		case x < 0.75 || w.happy:
			j := map[string]any{"client_id": jsonx.Describe("dcr#client_id", r.clientID), "redirect_uris": field(body, "redirect_uris")}
			if g.chance(0.2) {
				j["client_secret"] = jsonx.Describe("dcr#client_secret", "dcr-secret")
			}
			if g.chance(0.2) {
				j["token_endpoint_auth_method"] = pick(g, []any{"none", "client_secret_post", "private_key_jwt"})
			}
			if !w.happy {
				switch x := g.r.Float64(); {
				case x < 0.05:
					j["redirect_uris"] = []any{"http://127.0.0.1:1/other"}
				case x < 0.08:
					j["logo_uri"] = pick(g, []any{"http://evil.example/logo.png", json.Number("1")})
				case x < 0.1:
					delete(j, "client_id")
				}
			}
			return map[string]any{"status": json.Number(pick(g, []string{"201", "200"})), "headers": jsonHeaders, "json": j}, true
		case x < 0.85:
			return map[string]any{"status": json.Number("400"), "headers": jsonHeaders, "json": pick(g, []any{
				map[string]any{"error": "invalid_redirect_uri"}, map[string]any{"error": "bad code!"}, nil})}, true
		case x < 0.92:
			return map[string]any{"status": json.Number(pick(g, []string{"500", "302", "404"})), "headers": map[string]any{}, "json": nil}, true
		case x < 0.96:
			return map[string]any{"status": json.Number("201"), "headers": jsonHeaders, "json": pick(g, []any{"x", []any{}})}, true
		}
		return map[string]any{"status": json.Number("0"), "error": "refused"}, true
	}
	return nil, false
}

// docFailure is, sometimes, a metadata answer that is not a document: not found (try the
// next URL), not JSON, a redirect, an error, too large, no answer.
func (w *world) docFailure() (any, bool) {
	g := w.g
	x := g.r.Float64()
	if w.happy {
		x = x * 3 // mostly found
	}
	switch {
	case x < 0.15:
		return map[string]any{"status": json.Number(pick(g, []string{"404", "404", "401"})), "headers": map[string]any{}, "json": nil}, true
	case x < 0.19:
		return map[string]any{"status": json.Number("200"), "headers": map[string]any{"content-type": "text/html"}, "json": nil, "body": "not_json"}, true
	case x < 0.22:
		return map[string]any{"status": json.Number(pick(g, []string{"301", "500", "999"})), "headers": map[string]any{}, "json": nil}, true
	case x < 0.24:
		return map[string]any{"status": json.Number("200"), "headers": jsonHeaders, "json": nil, "body": "too_large"}, true
	case x < 0.26:
		return map[string]any{"status": json.Number("0"), "error": "timeout"}, true
	}
	return nil, false
}

// pathOf is the path of a URL ("" when it has none).
func pathOf(u string) string {
	o := originOf(u)
	rest := strings.TrimPrefix(u, o)
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// issuerOfMetadata is the issuer whose metadata URL u is (discovery.as_urls backwards).
func issuerOfMetadata(u string) string {
	o, p := originOf(u), pathOf(u)
	for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if rest, ok := strings.CutPrefix(p, wk); ok {
			return o + rest
		}
		if before, ok := strings.CutSuffix(p, wk); ok {
			return o + before
		}
	}
	return o
}
