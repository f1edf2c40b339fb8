package rest_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/surfaces/rest"
)

const gmail = "https://www.googleapis.com/auth/gmail.readonly"

// Every route of openapi.json, through the real binary on the real keyring and the local
// authorization server: success, the policy's errors with their statuses, the request
// checks, live events; every body is checked against openapi.json and searched for secrets.
func TestRESTEveryRoute(t *testing.T) {
	w := newWorld(t)
	w.serve()
	ev := w.subscribe()

	// the page, its assets and the document
	page := w.do(req{method: "GET", path: "/"})
	require.Equal(t, 200, page.status)
	require.Contains(t, string(page.body), "Connectors")
	require.Contains(t, page.header.Get("Content-Security-Policy"), "default-src 'none'")
	require.Equal(t, 200, w.do(req{method: "GET", path: "/assets/app.js"}).status)
	require.Equal(t, 404, w.do(req{method: "GET", path: "/assets/nope.js"}).status)
	require.Equal(t, 200, w.do(req{method: "GET", path: "/api/openapi.json"}).status)
	require.Equal(t, 404, w.do(req{method: "GET", path: "/api/nope"}).status)
	agents := w.do(req{method: "GET", path: "/api/agents"})
	require.Equal(t, 200, agents.status)
	require.Contains(t, string(agents.body), "builtin:email")

	// the catalog: 30 connectors grouped by tier
	list := w.do(req{method: "GET", path: "/api/connectors"})
	require.Equal(t, 200, list.status)
	var l struct {
		Connectors []map[string]any `json:"connectors"`
	}
	require.NoError(t, json.Unmarshal(list.body, &l))
	require.Len(t, l.Connectors, 30)
	one := w.do(req{method: "GET", path: "/api/connectors/google"})
	require.Equal(t, 200, one.status)
	require.Equal(t, false, one.json(t)["configured"])
	require.Equal(t, 404, w.do(req{method: "GET", path: "/api/connectors/nope"}).status)
	require.Equal(t, "UNKNOWN_CONNECTOR", w.do(req{method: "GET", path: "/api/connectors/nope"}).code(t))

	// configure: the OAuth client (write-only), an MCP server's key
	r := w.do(req{method: "POST", path: "/api/connectors/google/configure", ui: true, body: `{"config": {"client_id": "web-client", "client_secret": "` + w.secrets[0] + `"}}`})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, true, r.json(t)["has_secret"])
	ev.next(t, "connector.client.changed", 5*time.Second, map[string]any{"connector_id": "google"})
	g := w.do(req{method: "GET", path: "/api/connectors/google"}).json(t)
	require.Equal(t, map[string]any{"configured": true, "has_secret": true, "tenant": nil, "source": "keyring"}, g["oauth_client"])
	// The configure form's fields are the policy's (connector_view's setup_fields).
	require.Equal(t, []any{
		map[string]any{"key": "client_id", "label": "Client ID", "kind": "text", "required": true, "configured": true},
		map[string]any{"key": "client_secret", "label": "Client secret", "kind": "secret", "required": true, "configured": true},
	}, g["setup_fields"])
	r = w.do(req{method: "POST", path: "/api/connectors/mcp-brave-search/configure", ui: true, body: map[string]any{"config": map[string]string{"BRAVE_API_KEY": w.secrets[1]}}})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, []any{"BRAVE_API_KEY"}, r.json(t)["env_keys"])
	brave := w.do(req{method: "GET", path: "/api/connectors/mcp-brave-search"}).json(t)["setup_fields"].([]any)
	require.Len(t, brave, 1)
	require.Equal(t, map[string]any{"key": "BRAVE_API_KEY", "label": "BRAVE_API_KEY", "kind": "secret", "required": true, "configured": true, "description": "a Brave Search API key"}, brave[0].(map[string]any))
	require.Equal(t, 400, w.do(req{method: "POST", path: "/api/connectors/mcp-brave-search/configure", ui: true, body: `{"config": {"NOPE": "x"}}`}).status, "an undeclared key")
	require.Equal(t, 400, w.do(req{method: "POST", path: "/api/connectors/google/configure", ui: true, body: `{"config": {"client_id": "x", "colour": "red"}}`}).status)
	require.Equal(t, 400, w.do(req{method: "POST", path: "/api/connectors/google/configure", ui: true, body: `{"config": `}).status, "not JSON")
	require.Equal(t, 400, w.do(req{method: "POST", path: "/api/connectors/google/configure", ui: true, body: `{"config": {}, "extra": 1}`}).status, "an unknown member")
	require.Equal(t, 404, w.do(req{method: "POST", path: "/api/connectors/nope/configure", ui: true, body: `{"config": {}}`}).status)
	big := `{"config": {"client_id": "` + strings.Repeat("x", 2<<20) + `"}}`
	r = w.do(req{method: "POST", path: "/api/connectors/google/configure", ui: true, body: big})
	require.Equal(t, 413, r.status)
	require.Equal(t, "BODY_TOO_LARGE", r.code(t), "the status is the policy's for its code")

	// test: not connected yet (the error and its fix), a configured MCP server
	r = w.do(req{method: "POST", path: "/api/connectors/google/test", ui: true})
	require.Equal(t, 200, r.status)
	require.Equal(t, false, r.json(t)["ok"])
	require.Contains(t, string(r.body), `"fix":"grantwire connect google`)
	r = w.do(req{method: "POST", path: "/api/connectors/mcp-brave-search/test", ui: true})
	require.Equal(t, 200, r.status)
	require.Equal(t, 404, w.do(req{method: "POST", path: "/api/connectors/nope/test", ui: true}).status)

	// authorize: a flow, a second one is 409, cancel, then the real flow through the local server
	r = w.do(req{method: "POST", path: "/api/connectors/google/authorize", ui: true, body: map[string]any{"scopes": []string{"openid", gmail}, "grant_agents": []string{"builtin:email"}}})
	require.Equal(t, 200, r.status, "%s", r.body)
	flow := r.json(t)
	require.Contains(t, flow["authorization_url"], w.auth.AuthorizationURL())
	second := w.do(req{method: "POST", path: "/api/connectors/google/authorize", ui: true, body: `{}`})
	require.Equal(t, 409, second.status)
	require.Equal(t, "FLOW_IN_PROGRESS", second.code(t))
	flows := w.do(req{method: "GET", path: "/api/connectors/_flows"}).json(t)["flows"].([]any)
	require.Len(t, flows, 1)
	require.Equal(t, 204, w.do(req{method: "DELETE", path: "/api/connectors/_flows/" + flow["flow_id"].(string), ui: true}).status)
	ev.next(t, "connector.oauth.error", 5*time.Second, map[string]any{"flow_id": flow["flow_id"]})
	require.Equal(t, 404, w.do(req{method: "DELETE", path: "/api/connectors/_flows/" + flow["flow_id"].(string), ui: true}).status)
	require.Equal(t, 404, w.do(req{method: "POST", path: "/api/connectors/nope/authorize", ui: true}).status)
	require.Equal(t, 404, w.do(req{method: "POST", path: "/api/connectors/nope/authorize-device", ui: true}).status) // (TestRESTDeviceFlow: the rest)
	require.Equal(t, 400, w.do(req{method: "POST", path: "/api/connectors/mcp-brave-search/authorize", ui: true}).status)
	require.Equal(t, 404, w.do(req{method: "POST", path: "/api/connectors/google/authorize", ui: true, body: `{"grant_agents": ["installed:nobody"]}`}).status)

	r = w.do(req{method: "POST", path: "/api/connectors/google/authorize", ui: true, body: map[string]any{"scopes": []string{"openid", gmail}, "grant_agents": []string{"builtin:email"}}})
	require.Equal(t, 200, r.status, "%s", r.body)
	flow = r.json(t)
	browse(t, flow["authorization_url"].(string)) // the user's browser: consent, then the loopback callback
	done := ev.next(t, "connector.oauth.completed", 10*time.Second, map[string]any{"flow_id": flow["flow_id"]})
	require.Equal(t, "ada@example.com", done["account_email"])
	g = w.do(req{method: "GET", path: "/api/connectors/google"}).json(t)
	require.Equal(t, true, g["configured"])
	require.Equal(t, "ada@example.com", g["account_id"])
	require.Equal(t, true, w.do(req{method: "POST", path: "/api/connectors/google/test", ui: true}).json(t)["ok"])

	// grants
	require.Equal(t, map[string]any{"builtin:email": []any{gmail, "openid"}}, w.do(req{method: "GET", path: "/api/connectors/google/grants"}).json(t)["grants"])
	r = w.do(req{method: "PUT", path: "/api/connectors/google/grants/builtin:calendar", ui: true, body: map[string]any{"scopes": []string{gmail}}})
	require.Equal(t, 200, r.status, "%s", r.body)
	ev.next(t, "connector.grant.changed", 5*time.Second, map[string]any{"agent_id": "builtin:calendar"})
	require.Equal(t, true, w.do(req{method: "GET", path: "/api/connectors/google/grants/builtin:calendar"}).json(t)["granted"])
	require.Equal(t, 400, w.do(req{method: "PUT", path: "/api/connectors/google/grants/builtin:calendar", ui: true, body: `{"scopes": "x"}`}).status, "a type error")
	require.Equal(t, 400, w.do(req{method: "PUT", path: "/api/connectors/google/grants/builtin:calendar", ui: true, body: `{}`}).status)
	require.Equal(t, 400, w.do(req{method: "PUT", path: "/api/connectors/google/grants/nobody", ui: true, body: `{"scopes": []}`}).status, "an invalid agent id")
	require.Equal(t, 404, w.do(req{method: "PUT", path: "/api/connectors/nope/grants/builtin:chat", ui: true, body: `{"scopes": []}`}).status)
	require.Equal(t, 404, w.do(req{method: "GET", path: "/api/connectors/nope/grants"}).status)
	require.Equal(t, 404, w.do(req{method: "GET", path: "/api/connectors/nope/grants/builtin:chat"}).status)
	require.Equal(t, 200, w.do(req{method: "DELETE", path: "/api/connectors/google/grants/builtin:calendar", ui: true}).status)
	require.Equal(t, false, w.do(req{method: "DELETE", path: "/api/connectors/google/grants/builtin:calendar", ui: true}).json(t)["changed"], "idempotent")
	require.Equal(t, false, w.do(req{method: "GET", path: "/api/connectors/google/grants/builtin:calendar"}).json(t)["granted"])
	require.Equal(t, 404, w.do(req{method: "DELETE", path: "/api/connectors/nope/grants/builtin:chat", ui: true}).status)

	// activations: one-click (auto-grant), provider refused, deactivate
	r = w.do(req{method: "PUT", path: "/api/connectors/mcp-brave-search/activations/builtin:research", ui: true})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, true, r.json(t)["auto_granted"])
	ev.next(t, "connector.activation.changed", 5*time.Second, map[string]any{"agent_id": "builtin:research", "active": true})
	require.Equal(t, true, w.do(req{method: "GET", path: "/api/connectors/mcp-brave-search/activations/builtin:research"}).json(t)["active"])
	require.Equal(t, map[string]any{"builtin:research": true}, w.do(req{method: "GET", path: "/api/connectors/mcp-brave-search/activations"}).json(t)["activations"])
	r = w.do(req{method: "PUT", path: "/api/connectors/google/activations/builtin:chat", ui: true, body: `{}`})
	require.Equal(t, 400, r.status)
	require.Equal(t, "CONFIGURATION", r.code(t))
	require.Equal(t, 400, w.do(req{method: "PUT", path: "/api/connectors/mcp-git/activations/builtin:plain", ui: true, body: `{"scopes": [1]}`}).status)
	require.Equal(t, 404, w.do(req{method: "PUT", path: "/api/connectors/nope/activations/builtin:chat", ui: true}).status)
	require.Equal(t, 404, w.do(req{method: "GET", path: "/api/connectors/nope/activations"}).status)
	require.Equal(t, 404, w.do(req{method: "GET", path: "/api/connectors/nope/activations/builtin:chat"}).status)
	require.Equal(t, 204, w.do(req{method: "DELETE", path: "/api/connectors/mcp-brave-search/activations/builtin:research", ui: true}).status)
	ev.next(t, "connector.activation.changed", 5*time.Second, map[string]any{"agent_id": "builtin:research", "active": false})
	require.Equal(t, 400, w.do(req{method: "DELETE", path: "/api/connectors/google/activations/builtin:chat", ui: true}).status)

	// a change the CLI makes in another process reaches the stream within a second
	start := time.Now()
	out, code := w.cli("", "activations", "activate", "mcp-git", "builtin:chat")
	require.Equal(t, 0, code, out)
	ev.next(t, "connector.activation.changed", 2*time.Second, map[string]any{"connector_id": "mcp-git", "agent_id": "builtin:chat", "active": true})
	t.Logf("a CLI activation reached the stream %s after the CLI started", time.Since(start))

	// forwarded connections
	conns := w.do(req{method: "GET", path: "/v1/connections"})
	require.Equal(t, 200, conns.status)
	require.Contains(t, string(conns.body), `"provider":"google"`)
	require.Equal(t, 200, w.do(req{method: "GET", path: "/v1/connections/google"}).status)
	require.Equal(t, 404, w.do(req{method: "GET", path: "/v1/connections/github"}).status, "not connected")
	require.Equal(t, 404, w.do(req{method: "GET", path: "/v1/connections/nope"}).status)
	fwd := map[string]any{"client_id": "fwd-client", "client_secret": w.secrets[3], "refresh_token": w.secrets[2], "scopes": []string{"openid"}, "account_email": "bob@example.com", "grant_agents": []string{"builtin:email"}}
	r = w.do(req{method: "POST", path: "/v1/connections/google", ui: true, body: fwd})
	require.Equal(t, 403, r.status, "%s", r.body)
	require.Equal(t, "SCOPE_MISMATCH", r.code(t))
	fwd["grant_agents"] = []string{"installed:nobody"}
	require.Equal(t, 404, w.do(req{method: "POST", path: "/v1/connections/google", ui: true, body: fwd}).status)
	var mismatch struct {
		Error struct {
			Required []string `json:"required_scopes"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.body, &mismatch))
	fwd["grant_agents"], fwd["scopes"] = []string{"builtin:email"}, mismatch.Error.Required // what builtin:email declares
	r = w.do(req{method: "POST", path: "/v1/connections/google", ui: true, body: fwd})
	require.Equal(t, 201, r.status, "%s", r.body)
	require.Equal(t, "bob@example.com", r.json(t)["account_email"])
	ev.next(t, "connector.configured", 5*time.Second, map[string]any{"connector_id": "google", "account_id": "bob@example.com"})
	require.Equal(t, 400, w.do(req{method: "POST", path: "/v1/connections/google", ui: true, body: `{"refresh_token": "x"}`}).status)
	require.Equal(t, 204, w.do(req{method: "DELETE", path: "/v1/connections/google", ui: true}).status)
	require.Equal(t, 404, w.do(req{method: "DELETE", path: "/v1/connections/nope", ui: true}).status)
	ev.next(t, "connector.disconnected", 5*time.Second, map[string]any{"connector_id": "google"})

	// disconnect
	r = w.do(req{method: "DELETE", path: "/api/connectors/mcp-brave-search", ui: true})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, true, r.json(t)["removed"])
	require.Equal(t, 404, w.do(req{method: "DELETE", path: "/api/connectors/nope", ui: true}).status)

	// the request checks on every mutating route: the UI header first (before the body's
	// type, the connector and the Host), and nothing written
	before := w.files(".lock")
	for _, route := range rest.Routes() {
		method, path, _ := strings.Cut(route, " ")
		if method == "GET" {
			continue
		}
		path = strings.NewReplacer("{id}", "google", "{agent}", "builtin:chat", "{provider}", "google", "{flow_id}", "f").Replace(path)
		r := w.do(req{method: method, path: path, body: `{"scopes": 7}`, header: map[string]string{"Host": "evil.example:80"}})
		require.Equal(t, 403, r.status, "%s %s without the UI header", method, path)
		require.Equal(t, "UI_HEADER_REQUIRED", r.code(t))
		// issue 20 §2.6: the refusal names its fix
		e, _ := r.json(t)["error"].(map[string]any)
		require.Contains(t, e["fix"], "send the header X-Grantwire-UI: 1", "%s %s", method, path)
		r = w.do(req{method: method, path: path, body: `{"scopes": 7}`, header: map[string]string{"X-Grantwire-UI": "true"}})
		require.Equal(t, 403, r.status, "%s %s with a wrong UI header", method, path)
	}
	require.Equal(t, before, w.files(".lock"), "a refused request wrote something")

	checkEveryOperationCalled(t)
	require.NoError(t, w.stop(w.srv))
	select {
	case <-ev.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream did not close when the server stopped")
	}
}

// The Host header must be the server's address (DNS rebinding); a browser's Origin must be
// the server's; OPTIONS is refused and no CORS header is sent.
func TestRESTHostAndOrigin(t *testing.T) {
	w := newWorld(t)
	s := w.serve()
	_, port, _ := strings.Cut(s.host, ":")
	for host, want := range map[string]int{
		s.host: 200, "localhost:" + port: 200, "LOCALHOST:" + port: 200,
		"evil.example:" + port: 421, "evil.example": 421, "127.0.0.1:1": 421, "127.0.0.1": 421,
	} {
		r := w.do(req{method: "GET", path: "/api/connectors/google", header: map[string]string{"Host": host}})
		require.Equal(t, want, r.status, "Host %q", host)
		if want == 421 {
			require.Equal(t, "MISDIRECTED", r.code(t))
		}
	}
	for origin, want := range map[string]int{s.url: 200, "http://localhost:" + port: 200, "http://evil.example": 403, "null": 403, "https://" + s.host: 403} {
		r := w.do(req{method: "GET", path: "/api/connectors/google", header: map[string]string{"Origin": origin}})
		require.Equal(t, want, r.status, "Origin %q", origin)
		if want == 403 {
			e, _ := r.json(t)["error"].(map[string]any)
			require.Equal(t, "open "+s.url+" and use the page served there", e["fix"], "issue 20 §2.6: FOREIGN_ORIGIN names its fix")
		}
	}
	r := w.do(req{method: "GET", path: "/api/connectors/google", header: map[string]string{"Sec-Fetch-Site": "cross-site"}})
	require.Equal(t, 403, r.status)
	e, _ := r.json(t)["error"].(map[string]any)
	require.Equal(t, "open "+s.url+" and use the page served there", e["fix"])
	r = w.do(req{method: "OPTIONS", path: "/api/connectors/google", header: map[string]string{"Origin": s.url, "Access-Control-Request-Method": "PUT"}})
	require.Equal(t, 405, r.status)
	r = w.do(req{method: "PATCH", path: "/api/connectors/google", ui: true})
	require.Equal(t, 405, r.status)
}

// Binding an address that is not loopback needs a bearer token (from a private file);
// then every API request must carry it, and the page loads without it.
func TestRESTBearerToken(t *testing.T) {
	w := newWorld(t)
	out, code := w.cli("", "serve", "--addr", "0.0.0.0:0")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "--token-file")

	tokenFile := filepath.Join(t.TempDir(), "serve.token")
	token := "tok-" + strings.Repeat("a1", 20)
	w.secrets = append(w.secrets, token)
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o644))
	out, code = w.cli("", "serve", "--addr", "0.0.0.0:0", "--token-file", tokenFile)
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "chmod 600")
	require.NoError(t, os.Chmod(tokenFile, 0o600))

	s := w.serve("--addr", "0.0.0.0:0", "--token-file", tokenFile)
	r := w.do(req{method: "GET", path: "/api/connectors/google"})
	require.Equal(t, 401, r.status)
	require.Equal(t, `Bearer realm="grantwire"`, r.header.Get("WWW-Authenticate"))
	require.Equal(t, 401, w.do(req{method: "GET", path: "/api/connectors/google", header: map[string]string{"Authorization": "Bearer wrong"}}).status)
	require.Equal(t, 200, w.do(req{method: "GET", path: "/api/connectors/google", header: map[string]string{"Authorization": "Bearer " + token}}).status)
	require.Equal(t, 200, w.do(req{method: "GET", path: "/"}).status, "the page loads and asks for the token")
	require.Equal(t, 403, w.do(req{method: "PUT", path: "/api/connectors/google/grants/builtin:chat", body: `{"scopes": []}`, header: map[string]string{"Authorization": "Bearer " + token}}).status)
	_ = s
}

// SIGTERM (or Ctrl-C) ends open event streams, cancels an authorization still waiting
// (nothing stored) and exits 0.
func TestRESTStopsCleanly(t *testing.T) {
	w := newWorld(t)
	s := w.serve()
	out, code := w.cli(w.secrets[0]+"\n", "configure", "google", "--client-id", "web-client", "--client-secret-stdin")
	require.Equal(t, 0, code, out)
	ev := w.subscribe()
	r := w.do(req{method: "POST", path: "/api/connectors/google/authorize", ui: true})
	require.Equal(t, 200, r.status, "%s", r.body)
	start := time.Now()
	require.NoError(t, w.stop(s))
	require.Less(t, time.Since(start), 5*time.Second)
	select {
	case <-ev.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream did not close")
	}
	require.Contains(t, s.stderr.String(), "stopped")
	out, code = w.cli("", "status", "google", "--json")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"configured": false`)
	u, _ := url.Parse(r.json(t)["authorization_url"].(string))
	require.NotEmpty(t, u.Query().Get("state"))
	require.NotContains(t, s.stderr.String(), u.Query().Get("state"), "the log never holds the authorization's state")
}
