package authserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// google and microsoft are two providers as a catalog describes them (microsoft's URLs
// name a tenant).
var providers = map[string]authserver.Provider{
	"google": {Type: authserver.TypeOAuth, AuthorizationURL: "https://accounts.google.com/o/oauth2/v2/auth",
		TokenURL: "https://oauth2.googleapis.com/token", UserinfoURL: "https://openidconnect.googleapis.com/v1/userinfo",
		RevocationURL: "https://oauth2.googleapis.com/revoke", Issuer: "https://accounts.google.com", ClientSecretRequired: true},
	"microsoft": {Type: authserver.TypeOAuth, AuthorizationURL: "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize",
		TokenURL:               "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token",
		DeviceAuthorizationURL: "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/devicecode"},
	"mcp-github": {Type: "mcp_server"},
}

// world is a control API on 127.0.0.1 with one world playing providers; it answers the
// world's URL.
func world(t *testing.T, nowMS int64) string {
	t.Helper()
	base, stop, err := authserver.ServeWorlds()
	require.NoError(t, err)
	t.Cleanup(stop)
	var created struct{ ID, URL string }
	status := call(t, http.MethodPost, base+"/worlds", map[string]int64{"now_ms": nowMS}, &created)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, base+"/worlds/"+created.ID, created.URL)
	require.Equal(t, http.StatusNoContent, call(t, http.MethodPost, created.URL+"/control/script", map[string]any{"providers": providers}, nil))
	return created.URL
}

// call sends a control request with a JSON body and decodes the answer into out.
func call(t *testing.T, method, u string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, u, r)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// at is the address of a catalog URL in a world.
func at(w, catalogURL string) string {
	u, err := url.Parse(catalogURL)
	if err != nil {
		panic(err)
	}
	return w + authserver.CatalogPath(u)
}

func form(t *testing.T, endpoint string, f url.Values, user, pass string) (*http.Response, answer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(f.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var a answer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	a.Status = resp.StatusCode
	return resp, a
}

// TestTheControlAPIScriptsAWorld plays a scenario over HTTP as a foreign runner does:
// providers at their catalog URLs, a staged refresh token, a scripted answer during which
// the runner acts, the counters, and what a script may not say.
func TestTheControlAPIScriptsAWorld(t *testing.T) {
	w := world(t, 1_790_000_000_000)
	require.Equal(t, http.StatusNoContent, call(t, http.MethodPost, w+"/control/script", map[string]any{
		"issued":  map[string][]string{"google": {"rt-google-1"}},
		"refresh": map[string][]map[string]any{"google": {{"status": 200, "access_token": "at-scripted", "refresh_token": "rt-scripted", "during": "7"}}},
	}, nil))
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-google-1"}}
	resp, a := form(t, at(w, providers["google"].TokenURL), refresh, "client-1", "secret-1")
	require.Equal(t, "7", resp.Header.Get(authserver.DuringHeader), "the runner acts during this answer")
	require.Equal(t, answer{Status: 200, AccessToken: "at-scripted", RefreshToken: "rt-scripted", TokenType: "Bearer"}, a)
	resp, a = form(t, at(w, providers["google"].TokenURL), refresh, "client-1", "secret-1")
	require.Empty(t, resp.Header.Get(authserver.DuringHeader))
	require.Equal(t, "access-google-0001", a.AccessToken, "the staged token rotates, names as the corpus's")
	require.Equal(t, "refresh-google-0002", a.RefreshToken)
	_, a = form(t, at(w, providers["google"].TokenURL), refresh, "client-1", "secret-1")
	require.Equal(t, answer{Status: 400, Error: "invalid_grant"}, a, "a reused refresh token")
	_, a = form(t, at(w, providers["google"].TokenURL), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-scripted"},
		"client_id": {"client-1"}, "client_secret": {"secret-1"}}, "", "")
	require.Equal(t, answer{Status: 401, Error: "invalid_client"}, a, "google's clients authenticate with HTTP Basic (the catalog requires a secret)")

	var c authserver.Counters
	require.Equal(t, http.StatusOK, call(t, http.MethodGet, w+"/control/counters", nil, &c))
	require.Equal(t, authserver.Counters{Requests: 4, ClientAuth: []string{"client_secret_basic", "client_secret_basic",
		"client_secret_basic", "client_secret_post"}}, c)

	var e struct{ Error string }
	require.Equal(t, http.StatusBadRequest, call(t, http.MethodPost, w+"/control/script", map[string]any{"refreshes": nil}, &e))
	require.Contains(t, e.Error, `unknown field "refreshes"`)
	require.Equal(t, http.StatusBadRequest, call(t, http.MethodPost, w+"/control/script",
		map[string]any{"authorize": map[string][]map[string]string{"google": {{"status": "maybe"}}}}, &e))
	require.Contains(t, e.Error, `not "maybe"`)
	require.Equal(t, http.StatusBadRequest, call(t, http.MethodPut, w+"/control/clock", map[string]string{"now": "soon"}, &e))
	require.Contains(t, e.Error, `{"now_ms": <Unix milliseconds>}`)

	resp, err := http.Get(at(w, "https://elsewhere.example/token"))
	if err == nil {
		_ = resp.Body.Close()
	}
	require.Error(t, err, "a URL no provider answers gets no answer")

	require.Equal(t, http.StatusNoContent, call(t, http.MethodDelete, w, nil, nil))
	require.Equal(t, http.StatusNotFound, call(t, http.MethodGet, w+"/control/counters", nil, &e))
	require.Contains(t, e.Error, "create one with POST /worlds")
}

// TestScriptedAuthorizations: one queue of outcomes per provider, for either flow; the
// test world's browser and prompt learn from the server whether a user is there.
func TestScriptedAuthorizations(t *testing.T) {
	w := world(t, 1_790_000_000_000)
	iss := "https://elsewhere.example"
	require.Equal(t, http.StatusNoContent, call(t, http.MethodPost, w+"/control/script", map[string]any{"authorize": map[string]any{
		"google": []map[string]any{{"status": "timeout"}, {"status": "ok", "scopes": []string{"b", "a"}, "iss": iss},
			{"status": "denied", "error": "consent_required"}, {"status": "error", "http_status": 503}},
		"microsoft": []map[string]any{{"status": "interactive_required"}, {"status": "ok", "polls": []string{"slow_down"}},
			{"status": "interactive_required"}},
	}}, nil))
	outcome := func(p string) string {
		var o struct{ Outcome string }
		require.Equal(t, http.StatusOK, call(t, http.MethodPost, w+"/control/browser", map[string]string{"provider": p}, &o))
		return o.Outcome
	}
	require.Equal(t, "timeout", outcome("google"), "nobody will answer")
	require.Equal(t, "", outcome("google"), "the endpoint plays the rest")

	q := authQuery("http://127.0.0.1:49152/callback")
	authz := func() url.Values {
		status, got := authorizeAt(t, at(w, providers["google"].AuthorizationURL)+"?"+q.Encode())
		require.Equal(t, http.StatusFound, status)
		return got
	}
	got := authz()
	require.Equal(t, "code-google-0001", got.Get("code"))
	require.Equal(t, iss, got.Get("iss"), "the scripted issuer, not the catalog's")
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {got.Get("code")}, "code_verifier": {verifier},
		"redirect_uri": {"http://127.0.0.1:49152/callback"}}
	_, a := form(t, at(w, providers["google"].TokenURL), exchange, "cid", "secret")
	require.Equal(t, answer{Status: 200, AccessToken: "access-google-0001", RefreshToken: "refresh-google-0002",
		ExpiresIn: 3600, Scope: "b a", TokenType: "Bearer"}, a)
	got = authz()
	require.Equal(t, "consent_required", got.Get("error"))
	require.Equal(t, "https://accounts.google.com", got.Get("iss"), "the catalog's issuer")
	exchange.Set("code", authz().Get("code"))
	_, a = form(t, at(w, providers["google"].TokenURL), exchange, "cid", "secret")
	require.Equal(t, answer{Status: 503, Error: "server_error"}, a, "the exchange fails as scripted")

	require.Equal(t, "interactive_required", outcome("microsoft"), "no browser here")
	device := func() answer {
		_, d := form(t, at(w, strings.ReplaceAll(providers["microsoft"].DeviceAuthorizationURL, "{tenant}", "consumers")),
			url.Values{"client_id": {"cid"}, "scope": {"openid"}}, "", "")
		return d
	}
	var code struct {
		DeviceCode      string `json:"device_code"`
		UserCode        string `json:"user_code"`
		VerificationURI string `json:"verification_uri"`
		Interval        int64  `json:"interval"`
	}
	resp, err := http.PostForm(at(w, strings.ReplaceAll(providers["microsoft"].DeviceAuthorizationURL, "{tenant}", "consumers")),
		url.Values{"client_id": {"cid"}, "scope": {"openid"}})
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&code))
	_ = resp.Body.Close()
	require.Equal(t, "CODE-0003", code.UserCode, "codes count on a counter of their own")
	require.Equal(t, "device-microsoft-0003", code.DeviceCode)
	require.Equal(t, "https://login.microsoftonline.com/device", code.VerificationURI, "beside the catalog's endpoint")
	unattended := func() bool {
		var u struct{ Unattended bool }
		require.Equal(t, http.StatusOK, call(t, http.MethodPost, w+"/control/prompt", map[string]string{"provider": "microsoft"}, &u))
		return u.Unattended
	}
	require.False(t, unattended())
	poll := url.Values{"grant_type": {authserver.DeviceGrant}, "device_code": {code.DeviceCode}, "client_id": {"cid"}}
	token := at(w, strings.ReplaceAll(providers["microsoft"].TokenURL, "{tenant}", "consumers"))
	_, a = form(t, token, poll, "", "")
	require.Equal(t, "slow_down", a.Error)
	_, a = form(t, token, poll, "", "")
	require.Equal(t, "access-microsoft-0003", a.AccessToken, "approved after the scripted polls")
	device()
	require.True(t, unattended(), "nobody reads the next code")
	d := device()
	require.Equal(t, 200, d.Status, "nothing scripted: a code all the same")
	require.False(t, unattended())
}

// TestTheClockJudgesExpiry: a world tells the time by the runner's simulated clock.
func TestTheClockJudgesExpiry(t *testing.T) {
	w := world(t, 1_790_000_000_000)
	require.Equal(t, http.StatusNoContent, call(t, http.MethodPost, w+"/control/script", map[string]any{"authorize": map[string]any{
		"microsoft": []map[string]any{{"status": "timeout", "device": map[string]int{"expires_in": 12}}}}}, nil))
	var code struct {
		DeviceCode string `json:"device_code"`
	}
	resp, err := http.PostForm(at(w, strings.ReplaceAll(providers["microsoft"].DeviceAuthorizationURL, "{tenant}", "common")),
		url.Values{"client_id": {"cid"}})
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&code))
	_ = resp.Body.Close()
	poll := url.Values{"grant_type": {authserver.DeviceGrant}, "device_code": {code.DeviceCode}, "client_id": {"cid"}}
	token := at(w, strings.ReplaceAll(providers["microsoft"].TokenURL, "{tenant}", "common"))
	_, a := form(t, token, poll, "", "")
	require.Equal(t, "authorization_pending", a.Error)
	require.Equal(t, http.StatusNoContent, call(t, http.MethodPut, w+"/control/clock", map[string]int64{"now_ms": 1_790_000_012_000}, nil))
	_, a = form(t, token, poll, "", "")
	require.Equal(t, "expired_token", a.Error, "12 simulated seconds later")
}

// TestNoAnswer: a scripted answer of status 0 is no answer at all — the connection closed,
// or, for a timeout, nothing until the client gives up.
func TestNoAnswer(t *testing.T) {
	w := world(t, 1_790_000_000_000)
	require.Equal(t, http.StatusNoContent, call(t, http.MethodPost, w+"/control/script", map[string]any{
		"revoke": map[string][]map[string]any{"google": {{"status": 0, "error": "refused"}, {"status": 0, "error": "timeout"}}}}, nil))
	revoke := at(w, providers["google"].RevocationURL)
	_, err := http.PostForm(revoke, url.Values{"token": {"x"}})
	require.Error(t, err, "the connection is closed")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, revoke, strings.NewReader("token=x"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no answer until the client gives up")
	var c authserver.Counters
	call(t, http.MethodGet, w+"/control/counters", nil, &c)
	require.Equal(t, 2, c.Revocations)
	require.Zero(t, c.Revoked)
}
