package authserver_test

import (
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
