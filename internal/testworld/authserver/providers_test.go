package authserver_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

func post(t *testing.T, endpoint string, form url.Values) answer {
	t.Helper()
	a, status := postFor[answer](t, endpoint, form)
	a.Status = status
	return a
}

// postFor posts form to endpoint and reads the JSON answer into a T, with its status.
func postFor[T any](t *testing.T, endpoint string, form url.Values) (T, int) {
	t.Helper()
	resp, err := noRedirect.PostForm(endpoint, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	var a T
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	return a, resp.StatusCode
}

func refreshAt(t *testing.T, s *authserver.Server, provider, rt string) answer {
	t.Helper()
	return post(t, s.ProviderURL(provider)+"/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"c"}})
}

func userinfoAt(t *testing.T, s *authserver.Server, provider, access string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.ProviderURL(provider)+"/tenant-x/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var info struct {
		Email string `json:"email"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&info)
	return resp.StatusCode, info.Email
}

// The corpus's server: known refresh tokens, one counter for every issued name, tokens
// bound to their provider, rotation and reuse refused without revoking the family.
func TestProvidersNamesAndBinding(t *testing.T) {
	s := start(t, authserver.Config{SequentialNames: true, KeepFamilyOnReuse: true})
	s.IssueToken("google", "rt-google-1", nil)
	s.IssueToken("microsoft", "rt-microsoft-1", nil)

	a := refreshAt(t, s, "google", "rt-google-1")
	require.Equal(t, answer{Status: 200, AccessToken: "access-google-0001", RefreshToken: "refresh-google-0002",
		ExpiresIn: 3600, TokenType: "Bearer"}, a)
	require.Equal(t, "invalid_grant", refreshAt(t, s, "google", "rt-google-1").Error, "a reused token is refused")
	require.True(t, s.Live("refresh-google-0002"), "and the family survives (KeepFamilyOnReuse)")
	require.Equal(t, "invalid_grant", refreshAt(t, s, "microsoft", "refresh-google-0002").Error, "another provider's token")
	require.Equal(t, "invalid_grant", refreshAt(t, s, "google", "rt-microsoft-1").Error)
	require.Equal(t, "invalid_grant", refreshAt(t, s, "google", "unknown").Error)
	b := post(t, s.ProviderURL("microsoft")+"/consumers/token", url.Values{"grant_type": {"refresh_token"},
		"refresh_token": {"rt-microsoft-1"}, "client_id": {"c"}})
	require.Equal(t, "access-microsoft-0003", b.AccessToken, "a tenant segment is accepted; one counter")
	require.Equal(t, "refresh-microsoft-0004", b.RefreshToken)

	status, email := userinfoAt(t, s, "google", "access-google-0001")
	require.Equal(t, 200, status)
	require.Equal(t, "user@example.com", email)
	status, _ = userinfoAt(t, s, "microsoft", "access-google-0001")
	require.Equal(t, 401, status, "userinfo of another provider")

	st := s.Stats()
	require.Equal(t, 6, st.RefreshRequests)
	require.Equal(t, 2, st.Refreshes)

	resp, err := http.Get(s.URL() + "/p/google/elsewhere")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode)
}

func TestScriptedRefreshAnswers(t *testing.T) {
	s := start(t, authserver.Config{SequentialNames: true})
	s.IssueToken("google", "rt-1", nil)
	ran := 0
	s.ScriptRefresh("google",
		authserver.Answer{AccessToken: "access-scripted", RefreshToken: "rt-scripted", ExpiresIn: 120, During: func() { ran++ }},
		authserver.Answer{Status: 503, Error: "temporarily_unavailable"},
		authserver.Answer{Error: "invalid_grant"},
		authserver.Answer{Status: 200},
	)
	s.Script(authserver.Failure{Grant: "refresh_token", Status: 500})
	require.Equal(t, answer{Status: 500, Error: "server_error"}, refreshAt(t, s, "google", "rt-1"), "a Failure comes first")
	require.Equal(t, answer{Status: 200, AccessToken: "access-scripted", RefreshToken: "rt-scripted", ExpiresIn: 120,
		TokenType: "Bearer"}, refreshAt(t, s, "google", "whatever"))
	require.Equal(t, 1, ran, "During ran while the request was in flight")
	require.Equal(t, answer{Status: 503, Error: "temporarily_unavailable"}, refreshAt(t, s, "google", "rt-1"))
	require.Equal(t, answer{Status: 400, Error: "invalid_grant"}, refreshAt(t, s, "google", "rt-1"))
	require.Equal(t, answer{Status: 200, TokenType: "Bearer"}, refreshAt(t, s, "google", "rt-1"), "a 200 without tokens, as scripted")
	require.True(t, s.Live("rt-scripted"), "the refresh token a scripted answer issues is valid afterwards")
	require.True(t, s.Live("rt-1"))
	a := refreshAt(t, s, "google", "rt-1")
	require.Equal(t, "access-google-0001", a.AccessToken, "scripted answers consume no names")
	require.Equal(t, 6, s.Stats().RefreshRequests)
}

func TestScriptedConsents(t *testing.T) {
	s := start(t, authserver.Config{SequentialNames: true})
	s.ScriptConsent("google",
		authserver.Consent{Scopes: []string{"b"}, AccessToken: "access-x", RefreshToken: "refresh-x", ExpiresIn: 600, Account: "who@example.org"},
		authserver.Consent{Deny: true},
		authserver.Consent{Error: "server_error"},
		authserver.Consent{Error: "invalid_request", Status: 400},
	)
	redirect := "http://127.0.0.1:4321/callback"
	exchange := func(code string) answer {
		return post(t, s.ProviderURL("google")+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {redirect}, "client_id": {"cid"}, "code_verifier": {verifier}})
	}
	authorizeFor := func(provider string) url.Values {
		status, q := authorizeAt(t, s.ProviderURL(provider)+"/authorize?"+authQuery(redirect).Encode())
		require.Equal(t, http.StatusFound, status)
		return q
	}

	a := exchange(authorizeFor("google").Get("code"))
	require.Equal(t, answer{Status: 200, AccessToken: "access-x", RefreshToken: "refresh-x", ExpiresIn: 600, Scope: "b",
		TokenType: "Bearer"}, a)
	require.True(t, s.Live("refresh-x"))
	_, email := userinfoAt(t, s, "google", "access-x")
	require.Equal(t, "who@example.org", email)

	require.Equal(t, "access_denied", authorizeFor("google").Get("error"))
	require.Equal(t, "server_error", authorizeFor("google").Get("error"))
	q := authorizeFor("google")
	require.NotEmpty(t, q.Get("code"), "the exchange fails, not the authorization")
	require.Equal(t, answer{Status: 400, Error: "invalid_request"}, exchange(q.Get("code")))

	// Unscripted: the requested scopes, sequential names, and a code of one provider is
	// refused by another.
	q = authorizeFor("google")
	require.Equal(t, "invalid_grant", post(t, s.ProviderURL("microsoft")+"/token", url.Values{"grant_type": {"authorization_code"},
		"code": {q.Get("code")}, "redirect_uri": {redirect}, "client_id": {"cid"}, "code_verifier": {verifier}}).Error)
	a = exchange(authorizeFor("google").Get("code"))
	require.Equal(t, answer{Status: 200, AccessToken: "access-google-0001", RefreshToken: "refresh-google-0002", ExpiresIn: 3600,
		Scope: "a b", TokenType: "Bearer"}, a)
}
