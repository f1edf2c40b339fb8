package authserver_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// tokenAs sends a refresh_token request authenticated one way: "basic" (HTTP Basic with
// the form-encoded id and secret), "post" (both in the form), "none" (the id only) or
// "mixed" (both ways).
func tokenAs(t *testing.T, endpoint, how, id, secret, rt string) answer {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
	switch how {
	case "post", "mixed":
		form.Set("client_id", id)
		form.Set("client_secret", secret)
	case "none":
		form.Set("client_id", id)
	}
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if how == "basic" || how == "mixed" {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret))))
	}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return answer{Status: resp.StatusCode, Error: map[bool]string{true: "invalid_client"}[resp.StatusCode == 401]}
}

// The server refuses a client authenticated otherwise than it is registered for, and
// records how every token request authenticated.
func TestClientAuthentication(t *testing.T) {
	const id, secret = "c/1", "s:e cret"
	for _, tc := range []struct {
		method string
		ok     []string
	}{
		{authserver.AuthBasic, []string{"basic"}},
		{authserver.AuthPost, []string{"post"}},
		{authserver.AuthNone, []string{"none"}},
		{authserver.AuthDefault, []string{"basic", "none"}},
		{"", []string{"basic", "post", "none"}},
	} {
		t.Run("registered "+tc.method, func(t *testing.T) {
			sec := secret
			s := start(t, authserver.Config{ClientID: id, ClientAuth: tc.method})
			var seen []string
			for _, how := range []string{"basic", "post", "none", "mixed"} {
				if how == "none" {
					sec = ""
				}
				rt := s.Issue(nil)
				a := tokenAs(t, s.TokenURL(), how, id, sec, rt)
				want := 401
				for _, ok := range tc.ok {
					if ok == how {
						want = 200
					}
				}
				require.Equal(t, want, a.Status, "%s", how)
				// Accepted, the refresh token rotated; refused, nothing changed.
				require.Equal(t, want == 401, s.Live(rt), "%s", how)
				seen = append(seen, map[string]string{"basic": authserver.AuthBasic, "post": authserver.AuthPost, "none": authserver.AuthNone, "mixed": authserver.AuthMixed}[how])
			}
			require.Equal(t, seen, s.ClientAuthSeen())
			require.Equal(t, 4-len(tc.ok), s.Stats().InvalidClients)
		})
	}

	// Per provider; the secret, when configured, must match.
	s := start(t, authserver.Config{ClientID: id, ClientSecret: secret, ProviderClientAuth: map[string]string{"gh": authserver.AuthPost}})
	require.Equal(t, 200, tokenAs(t, s.ProviderURL("gh")+"/token", "post", id, secret, refreshToken(s, "gh")).Status)
	require.Equal(t, 401, tokenAs(t, s.ProviderURL("gh")+"/token", "basic", id, secret, refreshToken(s, "gh")).Status)
	require.Equal(t, 401, tokenAs(t, s.ProviderURL("gh")+"/token", "post", id, "wrong", refreshToken(s, "gh")).Status)
	require.Equal(t, 200, tokenAs(t, s.ProviderURL("g")+"/token", "basic", id, secret, refreshToken(s, "g")).Status)
}

func refreshToken(s *authserver.Server, provider string) string {
	rt := "rt-" + provider + "-" + base64.RawURLEncoding.EncodeToString([]byte(provider))
	s.IssueToken(provider, rt, nil)
	return rt
}

// The revocation endpoint (RFC 7009) authenticates the client as the token endpoint does,
// revokes a refresh token's family, counts, and plays scripted failures.
func TestRevocation(t *testing.T) {
	s := start(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ClientAuth: authserver.AuthBasic})
	revoke := func(how, rt string) int {
		form := url.Values{"token": {rt}, "token_type_hint": {"refresh_token"}}
		if how == "post" {
			form.Set("client_id", "cid")
			form.Set("client_secret", "cs")
		}
		req, _ := http.NewRequest(http.MethodPost, s.RevocationURL(), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if how == "basic" {
			req.SetBasicAuth("cid", "cs")
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	rt := s.Issue(nil)
	require.Equal(t, 401, revoke("post", rt), "registered for client_secret_basic")
	require.True(t, s.Live(rt))
	require.Equal(t, 200, revoke("basic", rt))
	require.False(t, s.Live(rt))
	require.Equal(t, 200, revoke("basic", "unknown"), "RFC 7009 §2.2: an unknown token is answered 200")

	s.ScriptRevoke("", authserver.Answer{Status: 503, Error: "temporarily_unavailable"}, authserver.Answer{Drop: true})
	rt = s.Issue(nil)
	require.Equal(t, 503, revoke("basic", rt))
	require.Equal(t, 0, revoke("basic", rt), "dropped")
	require.True(t, s.Live(rt), "scripted failures revoke nothing")
	st := s.Stats()
	require.Equal(t, 5, st.Revocations)
	require.Equal(t, 1, st.RevokedTokens)
}

// Issuers per provider, a consent without iss, and a code exchange answered with a page.
func TestIssuersAndOddConsents(t *testing.T) {
	s := start(t, authserver.Config{Issuer: "https://root.example", Issuers: map[string]string{"g": "https://g.example"}})
	q := authQuery("http://127.0.0.1:9/callback")
	iss := func(path string) string {
		resp, err := noRedirect.Get(s.URL() + path + "?" + q.Encode())
		require.NoError(t, err)
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return loc.Query().Get("iss")
	}
	require.Equal(t, "https://root.example", iss("/authorize"))
	require.Equal(t, "https://g.example", iss("/p/g/authorize"))
	require.Equal(t, "https://root.example", iss("/p/other/authorize"))
	s.ScriptConsent("g", authserver.Consent{NoIss: true})
	require.Equal(t, "", iss("/p/g/authorize"))

	s.ScriptConsent("g", authserver.Consent{NotJSON: true})
	resp, err := noRedirect.Get(s.ProviderURL("g") + "/authorize?" + q.Encode())
	require.NoError(t, err)
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "client_id": {"cid"},
		"redirect_uri": {"http://127.0.0.1:9/callback"}, "code_verifier": {verifier}}
	r, err := noRedirect.PostForm(s.ProviderURL("g")+"/token", form)
	require.NoError(t, err)
	defer r.Body.Close()
	require.Equal(t, 200, r.StatusCode)
	require.Contains(t, r.Header.Get("Content-Type"), "text/html")
	require.Equal(t, 1, s.Stats().ExchangeRequests)
}
