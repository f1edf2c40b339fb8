package authserver_test

import (
	"crypto/sha256"
	"encoding/base64"
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

const verifier = "dBjftJeZ4CVP-mJ92K9ZmZ7Nsp9sFgFNrMf7ubFzbGk1Q9TfM"

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

var noRedirect = &http.Client{Timeout: 5 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorize asks for a code and returns the redirect's query.
func authorize(t *testing.T, s *authserver.Server, q url.Values) (int, url.Values) {
	t.Helper()
	return authorizeAt(t, s.AuthorizationURL()+"?"+q.Encode())
}

// authorizeAt asks the authorization endpoint at u (with its query) for a code and returns
// the status and, on a redirect, the redirect's query.
func authorizeAt(t *testing.T, u string) (int, url.Values) {
	t.Helper()
	resp, err := noRedirect.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return resp.StatusCode, nil
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	return resp.StatusCode, loc.Query()
}

func authQuery(redirect string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {"cid"}, "redirect_uri": {redirect},
		"scope": {"a b"}, "state": {"st"}, "code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}}
}

type answer struct {
	Status       int
	Error        string `json:"error"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	TokenType    string `json:"token_type"`
}

func token(t *testing.T, s *authserver.Server, form url.Values) answer {
	t.Helper()
	resp, err := noRedirect.PostForm(s.TokenURL(), form)
	require.NoError(t, err)
	defer resp.Body.Close()
	var a answer
	if resp.StatusCode != http.StatusTemporaryRedirect {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	}
	a.Status = resp.StatusCode
	return a
}

func start(t *testing.T, cfg authserver.Config) *authserver.Server {
	t.Helper()
	s, err := authserver.Start(cfg, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestCodeFlowWithPKCE(t *testing.T) {
	s := start(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", Account: "ada@example.com", ExpiresIn: 60})
	redirect := "http://127.0.0.1:4321/callback"
	status, q := authorize(t, s, authQuery(redirect))
	require.Equal(t, http.StatusFound, status)
	require.Equal(t, "st", q.Get("state"))
	code := q.Get("code")
	require.NotEmpty(t, code)

	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {"cid"}, "client_secret": {"cs"}, "code_verifier": {"wrong-verifier-wrong-verifier-wrong-verifier"}}
	require.Equal(t, "invalid_grant", token(t, s, form).Error, "a wrong verifier fails (and uses up the code)")

	_, q = authorize(t, s, authQuery(redirect))
	form.Set("code", q.Get("code"))
	form.Set("code_verifier", verifier)
	a := token(t, s, form)
	require.Equal(t, 200, a.Status, a.Error)
	require.Equal(t, "Bearer", a.TokenType)
	require.Equal(t, int64(60), a.ExpiresIn)
	require.Equal(t, "a b", a.Scope)
	require.True(t, s.Live(a.RefreshToken))

	// The code again: invalid_grant, and what it produced is revoked.
	require.Equal(t, "invalid_grant", token(t, s, form).Error)
	require.False(t, s.Live(a.RefreshToken))

	// Userinfo needs a valid bearer token.
	_, q = authorize(t, s, authQuery(redirect))
	form.Set("code", q.Get("code"))
	a = token(t, s, form)
	req, _ := http.NewRequest(http.MethodGet, s.UserinfoURL(), nil)
	req.Header.Set("Authorization", "Bearer "+a.AccessToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(b), `"email":"ada@example.com"`)
	req.Header.Set("Authorization", "Bearer nope")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode)

	// Client authentication.
	form.Set("client_secret", "wrong")
	require.Equal(t, answer{Status: 401, Error: "invalid_client"}, token(t, s, form))
}

func TestAuthorizationRequestChecks(t *testing.T) {
	s := start(t, authserver.Config{ClientID: "cid"})
	for _, bad := range []string{"http://example.com:80/callback", "https://127.0.0.1:1/callback", "http://127.0.0.1/callback", "not a url"} {
		status, _ := authorize(t, s, authQuery(bad))
		require.Equal(t, 400, status, "never redirects to %q", bad)
	}
	q := authQuery("http://127.0.0.1:1/callback")
	q.Set("client_id", "other")
	status, _ := authorize(t, s, q)
	require.Equal(t, 400, status)

	q = authQuery("http://127.0.0.1:1/callback")
	q.Set("code_challenge_method", "plain")
	_, back := authorize(t, s, q)
	require.Equal(t, "invalid_request", back.Get("error"))
	q = authQuery("http://127.0.0.1:1/callback")
	q.Del("code_challenge")
	_, back = authorize(t, s, q)
	require.Equal(t, "invalid_request", back.Get("error"))

	s.Configure(func(c *authserver.Config) { c.Deny = true })
	_, back = authorize(t, s, authQuery("http://127.0.0.1:1/callback"))
	require.Equal(t, "access_denied", back.Get("error"))
	require.Equal(t, "st", back.Get("state"))
	require.Empty(t, back.Get("code"))
	require.Equal(t, 1, s.Stats().Denials)

	s.Configure(func(c *authserver.Config) { c.Deny = false; c.GrantedScopes = []string{"a"} })
	_, back = authorize(t, s, authQuery("http://127.0.0.1:1/callback"))
	a := token(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {back.Get("code")},
		"redirect_uri": {"http://127.0.0.1:1/callback"}, "client_id": {"cid"}, "code_verifier": {verifier}})
	require.Equal(t, "a", a.Scope, "narrower consent")

	_, err := authserver.Start(authserver.Config{}, "0.0.0.0:0")
	require.ErrorIs(t, err, authserver.ErrNotLoopback)
}

func refresh(t *testing.T, s *authserver.Server, rt string) answer {
	return token(t, s, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"cid"}})
}

func TestRefreshRotationAndReuseDetection(t *testing.T) {
	s := start(t, authserver.Config{ClientID: "cid"})
	rt0 := s.Issue([]string{"a"})
	a1 := refresh(t, s, rt0)
	require.Equal(t, 200, a1.Status)
	require.NotEqual(t, rt0, a1.RefreshToken)
	require.False(t, s.Live(rt0))
	a2 := refresh(t, s, a1.RefreshToken)
	require.Equal(t, 200, a2.Status)
	require.Equal(t, 1, s.LiveRefreshTokens())

	// rt0 again: reuse detected, the whole family revoked.
	require.Equal(t, answer{Status: 400, Error: "invalid_grant"}, refresh(t, s, rt0))
	require.False(t, s.Live(a2.RefreshToken))
	require.Equal(t, answer{Status: 400, Error: "invalid_grant"}, refresh(t, s, a2.RefreshToken))
	st := s.Stats()
	require.Equal(t, 1, st.ReuseDetected)
	require.Equal(t, 2, st.Refreshes)
	require.Equal(t, 2, st.InvalidGrants)
	require.Equal(t, answer{Status: 400, Error: "invalid_grant"}, refresh(t, s, "unknown"))

	k := start(t, authserver.Config{ClientID: "cid", KeepFamilyOnReuse: true})
	rt := k.Issue(nil)
	b1 := refresh(t, k, rt)
	require.Equal(t, "invalid_grant", refresh(t, k, rt).Error)
	require.True(t, k.Live(b1.RefreshToken), "the family survives when configured so")

	n := start(t, authserver.Config{ClientID: "cid", NoRotation: true})
	rt = n.Issue(nil)
	c1 := refresh(t, n, rt)
	require.Equal(t, 200, c1.Status)
	require.Empty(t, c1.RefreshToken)
	require.Equal(t, 200, refresh(t, n, rt).Status)
}

func TestScriptedFailures(t *testing.T) {
	s := start(t, authserver.Config{ClientID: "cid"})
	rt := s.Issue(nil)
	s.Script(
		authserver.Failure{Grant: "authorization_code", Status: 500}, // skipped: another grant
		authserver.Failure{Status: 401, Error: "invalid_client"},
		authserver.Failure{Error: "invalid_grant"},
		authserver.Failure{Status: 503},
		authserver.Failure{Redirect: "http://127.0.0.1:1/elsewhere"},
		authserver.Failure{Delay: 150 * time.Millisecond},
	)
	require.Equal(t, answer{Status: 401, Error: "invalid_client"}, refresh(t, s, rt))
	require.Equal(t, answer{Status: 400, Error: "invalid_grant"}, refresh(t, s, rt))
	require.Equal(t, answer{Status: 503, Error: "server_error"}, refresh(t, s, rt))
	require.Equal(t, http.StatusTemporaryRedirect, refresh(t, s, rt).Status)
	begin := time.Now()
	a := refresh(t, s, rt)
	require.Equal(t, 200, a.Status)
	require.GreaterOrEqual(t, time.Since(begin), 150*time.Millisecond)
	require.True(t, s.Live(a.RefreshToken))
	// The authorization_code failure is still queued.
	require.Equal(t, answer{Status: 500, Error: "server_error"},
		token(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {"cid"}}))
	require.Equal(t, 200, refresh(t, s, a.RefreshToken).Status)
}

func TestNothingIsEchoed(t *testing.T) {
	s := start(t, authserver.Config{ClientID: "cid"})
	script := "<script>alert(1)</script>"
	resp, err := noRedirect.Get(s.AuthorizationURL() + "?" + url.Values{"client_id": {script}, "redirect_uri": {script}}.Encode())
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NotContains(t, string(b), "script")
	resp, err = noRedirect.PostForm(s.TokenURL(), url.Values{"grant_type": {script}, "code": {script}, "client_id": {"cid"}})
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.False(t, strings.Contains(string(b), "script"), "%s", b)
}

// The device authorization grant (RFC 8628) on the same server.

type deviceAnswer struct {
	Status                  int
	Error                   string `json:"error"`
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval"`
}

func deviceCode(t *testing.T, endpoint string, form url.Values) deviceAnswer {
	t.Helper()
	a, status := postFor[deviceAnswer](t, endpoint, form)
	a.Status = status
	return a
}

func poll(t *testing.T, s *authserver.Server, code string) answer {
	t.Helper()
	return token(t, s, url.Values{"grant_type": {authserver.DeviceGrant}, "device_code": {code}, "client_id": {"cid"}, "client_secret": {"cs"}})
}

// A clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func TestDeviceFlow(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_790_000_000, 0)}
	s := start(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", Account: "ada@example.com", Now: clock.Now, DeviceInterval: 2, DeviceExpiresIn: 30})

	d := deviceCode(t, s.DeviceAuthorizationURL(), url.Values{"client_id": {"cid"}, "client_secret": {"cs"}, "scope": {"openid email"}})
	require.Equal(t, http.StatusOK, d.Status)
	require.Regexp(t, `^[B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4}$`, d.UserCode, "no vowels")
	require.Equal(t, s.VerificationURL(), d.VerificationURI)
	require.Equal(t, s.VerificationURL()+"?user_code="+d.UserCode, d.VerificationURIComplete)
	require.Equal(t, int64(30), d.ExpiresIn)
	require.Equal(t, int64(2), d.Interval)

	require.Equal(t, "authorization_pending", poll(t, s, d.DeviceCode).Error)
	clock.now = clock.now.Add(time.Second) // too soon: counted, answered as usual
	require.Equal(t, "authorization_pending", poll(t, s, d.DeviceCode).Error)
	require.Equal(t, 1, s.Stats().TooFast)

	// The user types the code on the verification page (case and dashes do not matter).
	resp, err := http.PostForm(s.VerificationURL(), url.Values{"user_code": {strings.ToLower(strings.ReplaceAll(d.UserCode, "-", ""))}})
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(page), d.UserCode, "pages echo nothing")
	require.Contains(t, string(page), "Approved")

	clock.now = clock.now.Add(2 * time.Second)
	a := poll(t, s, d.DeviceCode)
	require.Equal(t, http.StatusOK, a.Status, a.Error)
	require.Equal(t, "openid email", a.Scope, "what was asked for")
	require.NotEmpty(t, a.RefreshToken)
	require.Equal(t, "invalid_grant", poll(t, s, d.DeviceCode).Error, "a device code is used once")
	require.False(t, s.Approve(d.UserCode), "nothing pending under that code any more")
	st := s.Stats()
	require.Equal(t, 1, st.DeviceCodes)
	require.Equal(t, 1, st.DeviceApprovals)
	require.Equal(t, 1, st.DeviceExchanges)
	require.Equal(t, 4, st.DevicePolls)

	// Another client's poll, an unknown code, a client that is not the server's.
	d = deviceCode(t, s.DeviceAuthorizationURL(), url.Values{"client_id": {"cid"}, "client_secret": {"cs"}, "scope": {"openid"}})
	require.Equal(t, "invalid_grant", poll(t, s, "nope").Error)
	require.Equal(t, "invalid_client", token(t, s, url.Values{"grant_type": {authserver.DeviceGrant}, "device_code": {d.DeviceCode}, "client_id": {"cid"}, "client_secret": {"wrong"}}).Error)
	require.Equal(t, http.StatusUnauthorized, deviceCode(t, s.DeviceAuthorizationURL(), url.Values{"client_id": {"other"}}).Status)
	// The client authenticates as at the token endpoint (RFC 8628 §3.1): a confidential
	// client without its secret, or with a wrong one, is refused.
	require.Equal(t, "invalid_client", deviceCode(t, s.DeviceAuthorizationURL(), url.Values{"client_id": {"cid"}, "scope": {"openid"}}).Error)
	require.Equal(t, "invalid_client", deviceCode(t, s.DeviceAuthorizationURL(), url.Values{"client_id": {"cid"}, "client_secret": {"wrong"}}).Error)

	// Denied on the page; then a code that expires.
	resp, err = http.PostForm(s.VerificationURL(), url.Values{"user_code": {d.UserCode}, "decision": {"deny"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, "access_denied", poll(t, s, d.DeviceCode).Error)
	d = deviceCode(t, s.DeviceAuthorizationURL(), url.Values{"client_id": {"cid"}, "client_secret": {"cs"}})
	clock.now = clock.now.Add(30 * time.Second)
	require.Equal(t, "expired_token", poll(t, s, d.DeviceCode).Error)
	require.False(t, s.Approve(d.UserCode), "an expired code cannot be approved")
	resp, err = http.Get(s.VerificationURL() + "?user_code=" + d.UserCode)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestDeviceScriptedUsers(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_790_000_000, 0)}
	s := start(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", Now: clock.Now, SequentialNames: true})
	base := s.ProviderURL("microsoft") + "/consumers"
	s.ScriptDevice("microsoft",
		authserver.DeviceUser{Polls: []string{"slow_down"}, Decision: authserver.DeviceApprove, Consent: authserver.Consent{Account: "bo@example.com", Scopes: []string{"User.Read"}}},
		authserver.DeviceUser{Decision: authserver.DeviceDeny, Consent: authserver.Consent{Error: "authorization_declined"}},
		authserver.DeviceUser{Error: "unauthorized_client"},
		authserver.DeviceUser{Decision: authserver.DeviceExpire, ExpiresIn: 10},
	)
	tok := func(code string) answer {
		resp, err := noRedirect.PostForm(base+"/token", url.Values{"grant_type": {authserver.DeviceGrant}, "device_code": {code}, "client_id": {"cid"}, "client_secret": {"cs"}})
		require.NoError(t, err)
		defer resp.Body.Close()
		var a answer
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
		a.Status = resp.StatusCode
		return a
	}
	d := deviceCode(t, base+"/devicecode", url.Values{"client_id": {"cid"}, "client_secret": {"cs"}, "scope": {"openid"}})
	require.Equal(t, s.ProviderURL("microsoft")+"/consumers/device", d.VerificationURI, "beside the endpoint, on the address the client used")
	require.Equal(t, "slow_down", tok(d.DeviceCode).Error)
	clock.now = clock.now.Add(5 * time.Second) // the interval is now 10 s: too soon
	a := tok(d.DeviceCode)
	require.Equal(t, http.StatusOK, a.Status)
	require.Equal(t, "access-microsoft-0001", a.AccessToken)
	require.Equal(t, "refresh-microsoft-0002", a.RefreshToken)
	require.Equal(t, "User.Read", a.Scope)
	require.Equal(t, 1, s.Stats().TooFast)

	d = deviceCode(t, base+"/devicecode", url.Values{"client_id": {"cid"}, "client_secret": {"cs"}})
	require.Equal(t, "authorization_declined", tok(d.DeviceCode).Error)
	require.Equal(t, "unauthorized_client", deviceCode(t, base+"/devicecode", url.Values{"client_id": {"cid"}, "client_secret": {"cs"}}).Error)
	d = deviceCode(t, base+"/devicecode", url.Values{"client_id": {"cid"}, "client_secret": {"cs"}})
	require.Equal(t, int64(10), d.ExpiresIn)
	require.Equal(t, "authorization_pending", tok(d.DeviceCode).Error)
	clock.now = clock.now.Add(10 * time.Second)
	require.Equal(t, "expired_token", tok(d.DeviceCode).Error)

	// The other provider's token endpoint does not know the code.
	d = deviceCode(t, base+"/devicecode", url.Values{"client_id": {"cid"}, "client_secret": {"cs"}})
	require.True(t, s.Approve(d.UserCode))
	resp, err := noRedirect.PostForm(s.ProviderURL("google")+"/token", url.Values{"grant_type": {authserver.DeviceGrant}, "device_code": {d.DeviceCode}, "client_id": {"cid"}, "client_secret": {"cs"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
