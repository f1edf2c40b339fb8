package rest_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// The device authorization grant over REST (POST /api/connectors/{id}/authorize-device),
// through the real binary on the real keyring against the local authorization server's
// device endpoint and its scriptable user: the answer carries what the user needs and
// never the device code; approval, denial and cancelling end as browser flows end (an
// event to every page; nothing stored unless approved); one flow per connector whatever
// its kind; a provider or scopes without device authorization get the policy's error.
func TestRESTDeviceFlow(t *testing.T) {
	w := newWorld(t)
	w.auth.Configure(func(c *authserver.Config) { c.DeviceInterval, c.DeviceExpiresIn = 1, 60 })
	w.serve()
	ev := w.subscribe()
	r := w.do(req{method: "POST", path: "/api/connectors/google/configure", ui: true, body: map[string]any{"config": map[string]string{"client_id": "web-client", "client_secret": w.secrets[0]}}})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, true, w.do(req{method: "GET", path: "/api/connectors/google"}).json(t)["supports_device_code"])

	start := func(connector string, body any) map[string]any {
		t.Helper()
		r := w.do(req{method: "POST", path: "/api/connectors/" + connector + "/authorize-device", ui: true, body: body})
		require.Equal(t, 200, r.status, "%s", r.body)
		require.NotContains(t, string(r.body), `"device_code"`)
		return r.json(t)
	}
	body := map[string]any{"scopes": []string{"openid", "email"}, "grant_agents": []string{"builtin:chat"}}

	// approve: the code, the link and the timing; then the outcome reaches the stream
	f := start("google", body)
	code, _ := f["user_code"].(string)
	require.Regexp(t, `^[A-Z]{4}-[A-Z]{4}$`, code)
	require.Equal(t, "device", f["kind"])
	require.Equal(t, "google", f["connector_id"])
	require.Equal(t, w.auth.VerificationURL(), f["verification_uri"])
	require.Equal(t, w.auth.VerificationURL()+"?user_code="+code, f["verification_uri_complete"])
	require.InDelta(t, 60, f["expires_in"], 2)
	require.Equal(t, float64(1), f["interval"])

	// one authorization per connector, whatever its kind
	for _, path := range []string{"/api/connectors/google/authorize-device", "/api/connectors/google/authorize"} {
		r := w.do(req{method: "POST", path: path, ui: true, body: `{}`})
		require.Equal(t, 409, r.status, "%s %s", path, r.body)
		require.Equal(t, "FLOW_IN_PROGRESS", r.code(t))
		require.Contains(t, string(r.body), f["flow_id"].(string))
		require.Contains(t, string(r.body), "waiting for its code to be entered on another device", "a device flow waits for no browser")
	}
	flows := w.do(req{method: "GET", path: "/api/connectors/_flows"}).json(t)["flows"].([]any)
	require.Len(t, flows, 1)
	listed := flows[0].(map[string]any)
	require.Equal(t, code, listed["user_code"])
	require.NotEmpty(t, listed["expires_at"])

	time.Sleep(1200 * time.Millisecond) // a pending poll first
	require.True(t, w.auth.Approve(code))
	done := ev.next(t, "connector.oauth.completed", 15*time.Second, map[string]any{"flow_id": f["flow_id"]})
	require.Equal(t, "ada@example.com", done["account_email"])
	require.Equal(t, []any{"email", "openid"}, done["scopes"])
	g := w.do(req{method: "GET", path: "/api/connectors/google"}).json(t)
	require.Equal(t, true, g["configured"])
	require.Equal(t, map[string]any{"builtin:chat": []any{"email", "openid"}}, g["grants"])
	require.Empty(t, w.do(req{method: "GET", path: "/api/connectors/_flows"}).json(t)["flows"])
	require.Equal(t, 200, w.do(req{method: "DELETE", path: "/api/connectors/google", ui: true}).status)

	// deny: the policy's error, as an event; nothing stored
	f = start("google", map[string]any{"scopes": []string{"openid"}})
	require.True(t, w.auth.Deny(f["user_code"].(string)))
	e := ev.next(t, "connector.oauth.error", 15*time.Second, map[string]any{"flow_id": f["flow_id"]})
	require.Equal(t, "CONSENT_DENIED", e["error"].(map[string]any)["code"])
	require.Equal(t, false, w.do(req{method: "GET", path: "/api/connectors/google"}).json(t)["configured"])

	// cancel: 204 once the operation ended, CANCELLED to every page, nothing stored, and
	// the code the user might still approve is never redeemed
	f = start("google", map[string]any{"scopes": []string{"openid"}, "grant_agents": []string{"builtin:chat"}})
	require.Equal(t, 204, w.do(req{method: "DELETE", path: "/api/connectors/_flows/" + f["flow_id"].(string), ui: true}).status)
	e = ev.next(t, "connector.oauth.error", 5*time.Second, map[string]any{"flow_id": f["flow_id"]})
	require.Equal(t, "CANCELLED", e["error"].(map[string]any)["code"])
	w.auth.Approve(f["user_code"].(string))
	time.Sleep(1500 * time.Millisecond)
	g = w.do(req{method: "GET", path: "/api/connectors/google"}).json(t)
	require.Equal(t, false, g["configured"])
	require.Empty(t, g["grants"])
	require.Equal(t, 1, w.auth.Stats().DeviceExchanges, "only the approved flow redeemed its code")

	// what the device flow cannot do: the policy's errors with their statuses, no flow left
	r = w.do(req{method: "POST", path: "/api/connectors/google/authorize-device", ui: true, body: map[string]any{"scopes": []string{gmail}}})
	require.Equal(t, 400, r.status, "%s", r.body)
	require.Equal(t, "CONFIGURATION", r.code(t))
	require.Contains(t, r.json(t)["error"].(map[string]any)["message"], "device authorization does not allow "+gmail)
	require.Equal(t, 200, w.do(req{method: "POST", path: "/api/connectors/gitlab/configure", ui: true, body: `{"config": {"client_id": "gl-client"}}`}).status)
	require.Equal(t, false, w.do(req{method: "GET", path: "/api/connectors/gitlab"}).json(t)["supports_device_code"])
	r = w.do(req{method: "POST", path: "/api/connectors/gitlab/authorize-device", ui: true})
	require.Equal(t, 400, r.status, "%s", r.body)
	require.Equal(t, "CONFIGURATION", r.code(t))
	require.Contains(t, r.json(t)["error"].(map[string]any)["message"], "gitlab offers no device authorization")
	require.Equal(t, 400, w.do(req{method: "POST", path: "/api/connectors/mcp-git/authorize-device", ui: true}).status)
	require.Equal(t, 404, w.do(req{method: "POST", path: "/api/connectors/nope/authorize-device", ui: true}).status)
	require.Equal(t, 400, w.do(req{method: "POST", path: "/api/connectors/google/authorize-device", ui: true, body: `{"scopes": 7}`}).status)
	r = w.do(req{method: "POST", path: "/api/connectors/google/authorize-device", body: `{}`})
	require.Equal(t, 403, r.status)
	require.Equal(t, "UI_HEADER_REQUIRED", r.code(t))
	require.Empty(t, w.do(req{method: "GET", path: "/api/connectors/_flows"}).json(t)["flows"])

	// the device codes the server issued never reached a body, an event or the log (the
	// harness also searches for every token the server issued, device codes included)
	require.NoError(t, w.stop(w.srv))
	w.record([]byte(w.srv.stderr.String()))
	w.mu.Lock()
	seen := w.transcript.String()
	w.mu.Unlock()
	require.Equal(t, 3, w.auth.Stats().DeviceCodes, "approve, deny, cancel; the refusals asked for none")
	require.NotContains(t, seen, tokenPrefix+"_device_")
	require.NotContains(t, seen, `"device_code"`)
	require.Regexp(t, regexp.MustCompile(`"user_code":"[A-Z]{4}-[A-Z]{4}"`), seen, "the transcript holds what was shown")
}
