package native_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/authserver"
	"github.com/grantwire/grantwire/shells/native"
)

// oauthWorld is the OAuth capability of a native shell against the local server.
type oauthWorld struct {
	srv     *authserver.Server
	oauth   hostabi.OAuth
	conn    hostabi.Connector
	client  hostabi.Client
	prompt  *syncBuffer
	checked *urlLog
}

func newOAuthWorld(t *testing.T, cfg authserver.Config, tweak func(*native.Options, *hostabi.Connector)) *oauthWorld {
	t.Helper()
	ctx := context.Background()
	srv, err := authserver.Start(cfg, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cat, err := catalog.Load(testCatalog(srv))
	require.NoError(t, err)
	eng, err := wasmengine.New(ctx, wasmengine.WithData(cat.Data()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close(ctx) })
	conn, ok := cat.Connector("local")
	require.True(t, ok)
	ow := &oauthWorld{srv: srv, conn: conn, client: hostabi.Client{ID: cfg.ClientID, Secret: cfg.ClientSecret},
		prompt: &syncBuffer{}, checked: &urlLog{}}
	opts := native.Options{Home: t.TempDir(), NoWatch: true, Prompt: ow.prompt, Browser: autoBrowser,
		AuthTimeout: 10 * time.Second, HTTPTimeout: 5 * time.Second,
		CheckURL: func(ctx context.Context, u *url.URL, purpose string, hop int, from *url.URL) error {
			ow.checked.add(fmt.Sprintf("%s %d %s", purpose, hop, u.Redacted()))
			return grantwire.CheckURL(ctx, eng, u, purpose, hop, from)
		}}
	if tweak != nil {
		tweak(&opts, &ow.conn)
	}
	sh, err := native.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	ow.oauth = sh.Capabilities().OAuth
	return ow
}

func TestAuthorizeWithPKCE(t *testing.T) {
	ctx := context.Background()
	var seen string
	ow := newOAuthWorld(t, authserver.Config{ClientID: "cid", ClientSecret: "csecret", Account: "ada@example.com",
		GrantedScopes: []string{"openid", "mail.read"}},
		func(o *native.Options, _ *hostabi.Connector) {
			o.Browser = func(u string) error { seen = u; return autoBrowser(u) }
		})
	r := ow.oauth.Authorize(ctx, ow.conn, ow.client, []string{"openid", "mail.read", "mail.send"})
	require.Equal(t, hostabi.AuthOK, r.Status, "%+v", r.Token.Error)
	require.Equal(t, 200, r.Token.Status)
	require.NotEmpty(t, r.Token.AccessToken)
	require.True(t, ow.srv.Live(r.Token.RefreshToken))
	require.Equal(t, int64(3600), r.Token.ExpiresIn)
	require.Equal(t, []string{"openid", "mail.read"}, r.Token.Scopes, "the granted scopes as the server reported them")
	require.Equal(t, "ada@example.com", r.Token.Account)

	u, err := url.Parse(seen)
	require.NoError(t, err)
	q := u.Query()
	require.Regexp(t, `^http://127\.0\.0\.1:[0-9]+/callback$`, q.Get("redirect_uri"))
	require.Equal(t, "code", q.Get("response_type"))
	require.Equal(t, "cid", q.Get("client_id"))
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.Len(t, q.Get("code_challenge"), 43)
	state, err := base64.RawURLEncoding.DecodeString(q.Get("state"))
	require.NoError(t, err)
	require.Len(t, state, 32)
	require.Equal(t, "offline", q.Get("access_type"), "auth_params from the catalog")
	require.Equal(t, "openid mail.read mail.send", q.Get("scope"))
	require.Empty(t, q.Get("client_secret"))

	require.Equal(t, []string{
		"authorization 0 " + ow.srv.AuthorizationURL(),
		"token 0 " + ow.srv.TokenURL(),
		"userinfo 0 " + ow.srv.UserinfoURL(),
	}, ow.checked.all(), "every URL passed the transport rule before a request went out")
	require.Contains(t, ow.prompt.String(), "Waiting for the local authorization")
}

var staticPages = regexp.MustCompile(`^<!doctype html><meta charset=utf-8><title>grantwire</title><p>[A-Za-z ;,.]+</p>\n$`)

func assertStatic(t *testing.T, resp *http.Response, status int) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, "%s", b)
	require.Regexp(t, staticPages, string(b), "a static page")
	for _, bad := range []string{"<script", "alert", "evil", "wrong-state", "INJECT"} {
		require.NotContains(t, string(b), bad)
	}
	require.Equal(t, "default-src 'none'", resp.Header.Get("Content-Security-Policy"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	return string(b)
}

// Hostile callbacks are refused without consuming anything and without echoing a byte of
// what they carried; the real callback still completes, and only once.
func TestHostileCallbacks(t *testing.T) {
	ctx := context.Background()
	script := `<script>alert("INJECT")</script>`
	var ow *oauthWorld
	var secondStatus int
	browser := func(authURL string) error {
		u, _ := url.Parse(authURL)
		redirect, _ := url.Parse(u.Query().Get("redirect_uri"))
		state := u.Query().Get("state")
		cbURL := func(q url.Values) string { return redirect.String() + "?" + q.Encode() }
		c := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		get := func(raw string, host string) *http.Response {
			req, err := http.NewRequest(http.MethodGet, raw, nil)
			require.NoError(t, err)
			if host != "" {
				req.Host = host
			}
			resp, err := c.Do(req)
			require.NoError(t, err)
			return resp
		}

		// Wrong state, missing state, a doubled state, script in every parameter.
		assertStatic(t, get(cbURL(url.Values{"code": {"evil-code"}, "state": {"wrong-state"}}), ""), 400)
		assertStatic(t, get(cbURL(url.Values{"code": {"evil-code"}}), ""), 400)
		assertStatic(t, get(cbURL(url.Values{"code": {"evil-code"}, "state": {state, state}}), ""), 400)
		assertStatic(t, get(cbURL(url.Values{"code": {script}, "state": {script}, "error": {script},
			"error_description": {script}, script: {script}}), ""), 400)
		// The right state with a wrong Host header (DNS rebinding, another origin).
		for _, host := range []string{"localhost:" + redirect.Port(), "evil.example", "127.0.0.1"} {
			assertStatic(t, get(cbURL(url.Values{"code": {"evil-code"}, "state": {state}}), host), 400)
		}
		// Other paths and methods.
		assertStatic(t, get(redirect.Scheme+"://"+redirect.Host+"/favicon.ico", ""), 404)
		assertStatic(t, get(redirect.Scheme+"://"+redirect.Host+"/callback/"+url.PathEscape(script), ""), 404)
		resp, err := c.Post(cbURL(url.Values{"code": {"evil-code"}, "state": {state}}), "text/plain", strings.NewReader(script))
		require.NoError(t, err)
		assertStatic(t, resp, 405)
		require.Equal(t, 0, ow.srv.Stats().CodeExchanges, "nothing was consumed")

		// The real consent: the authorization server redirects to the callback.
		resp = get(authURL, "")
		require.Equal(t, http.StatusFound, resp.StatusCode)
		loc := resp.Header.Get("Location")
		_ = resp.Body.Close()
		require.Contains(t, assertStatic(t, get(loc, ""), 200), "Authorization complete")

		// A second callback, even with the right state, is gone.
		resp = get(cbURL(url.Values{"code": {"evil-code"}, "state": {state}}), "")
		secondStatus = resp.StatusCode
		assertStatic(t, resp, 410)
		return nil
	}
	ow = newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) { o.Browser = browser })
	r := ow.oauth.Authorize(ctx, ow.conn, ow.client, []string{"mail.read"})
	require.Equal(t, hostabi.AuthOK, r.Status, "%+v", r.Token)
	require.Equal(t, 410, secondStatus)
	require.Equal(t, 1, ow.srv.Stats().CodeExchanges)
	p := ow.prompt.String()
	require.Contains(t, p, "state mismatch")
	require.Contains(t, p, "no state parameter")
	require.Contains(t, p, "wrong Host header")
	require.NotContains(t, p, "INJECT")
	require.NotContains(t, p, "evil")
}

// An error from the provider with the right state ends the wait at once: access_denied is
// a denial, other codes are reported — and a script in the error is not repeated.
func TestCallbackErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		errParam string
		status   string
		code     string
	}{
		{"access_denied", hostabi.AuthDenied, "access_denied"},
		{"temporarily_unavailable", hostabi.AuthError, "temporarily_unavailable"},
		{`<script>alert("INJECT")</script>`, hostabi.AuthError, "unrecognised_error"},
	} {
		t.Run(c.code, func(t *testing.T) {
			var body *http.Response
			browser := func(authURL string) error {
				u, _ := url.Parse(authURL)
				q := url.Values{"state": {u.Query().Get("state")}, "error": {c.errParam},
					"error_description": {`<script>alert("INJECT")</script>`}}
				resp, err := http.Get(u.Query().Get("redirect_uri") + "?" + q.Encode())
				require.NoError(t, err)
				body = resp
				assertStatic(t, resp, 200)
				return nil
			}
			ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) { o.Browser = browser })
			start := time.Now()
			r := ow.oauth.Authorize(ctx, ow.conn, ow.client, []string{"mail.read"})
			require.Less(t, time.Since(start), 3*time.Second, "no wait for the timeout")
			require.NotNil(t, body)
			require.Equal(t, c.status, r.Status)
			require.Equal(t, c.code, r.Token.Error)
			require.Equal(t, 0, ow.srv.Stats().TokenRequests)
		})
	}
}

func TestAuthorizeDeniedByServer(t *testing.T) {
	ow := newOAuthWorld(t, authserver.Config{ClientID: "cid", Deny: true}, nil)
	start := time.Now()
	r := ow.oauth.Authorize(context.Background(), ow.conn, ow.client, []string{"mail.read"})
	require.Equal(t, hostabi.AuthDenied, r.Status)
	require.Less(t, time.Since(start), 3*time.Second)
	require.Equal(t, 1, ow.srv.Stats().Denials)
}

func TestAuthorizeHeadless(t *testing.T) {
	ctx := context.Background()
	t.Run("no browser and nobody to ask", func(t *testing.T) {
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) { o.Browser = nil })
		r := ow.oauth.Authorize(ctx, ow.conn, ow.client, []string{"mail.read"})
		require.Equal(t, hostabi.AuthInteractiveRequired, r.Status)
		require.Empty(t, ow.checked.all(), "decided before anything else")
	})
	t.Run("a browser that fails and nobody to ask", func(t *testing.T) {
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) {
			o.Browser = func(string) error { return errors.New("xdg-open: not found") }
		})
		r := ow.oauth.Authorize(ctx, ow.conn, ow.client, []string{"mail.read"})
		require.Equal(t, hostabi.AuthInteractiveRequired, r.Status)
	})
	t.Run("print the URL and wait", func(t *testing.T) {
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) {
			o.Browser = func(string) error { return errors.New("xdg-open: not found") }
			o.Interactive = true
		})
		go func() { // the person reading the prompt
			re := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/authorize\?\S+`)
			for range 200 {
				if m := re.FindString(ow.prompt.String()); m != "" {
					_ = autoBrowser(m)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		r := ow.oauth.Authorize(ctx, ow.conn, ow.client, []string{"mail.read"})
		require.Equal(t, hostabi.AuthOK, r.Status, "%+v", r.Token)
		require.Contains(t, ow.prompt.String(), "open this URL in a browser")
	})
	t.Run("timeout", func(t *testing.T) {
		var port string
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) {
			o.Browser = func(u string) error {
				pu, _ := url.Parse(u)
				ru, _ := url.Parse(pu.Query().Get("redirect_uri"))
				port = ru.Port()
				return nil // opened, but nobody answers
			}
			o.AuthTimeout = 300 * time.Millisecond
		})
		r := ow.oauth.Authorize(ctx, ow.conn, ow.client, []string{"mail.read"})
		require.Equal(t, hostabi.AuthError, r.Status)
		require.Equal(t, "timeout", r.Token.Error)
		require.Contains(t, ow.prompt.String(), "No authorization arrived within 300ms")
		_, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		require.Error(t, err, "the listener is closed")
	})
	t.Run("canceled", func(t *testing.T) {
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) {
			o.Browser = func(string) error { return nil }
		})
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		r := ow.oauth.Authorize(cctx, ow.conn, ow.client, []string{"mail.read"})
		require.Equal(t, hostabi.AuthError, r.Status)
		require.Equal(t, "canceled", r.Token.Error)
		require.Less(t, time.Since(start), 2*time.Second)
	})
}

func TestRefresh(t *testing.T) {
	ctx := context.Background()
	ow := newOAuthWorld(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 120}, nil)
	rt := ow.srv.Issue([]string{"mail.read"})

	r := ow.oauth.Refresh(ctx, ow.conn, ow.client, rt)
	require.Equal(t, 200, r.Status, "%+v", r)
	require.Empty(t, r.Error)
	require.NotEmpty(t, r.AccessToken)
	require.NotEqual(t, rt, r.RefreshToken, "rotated")
	require.Equal(t, int64(120), r.ExpiresIn)
	require.True(t, ow.srv.Live(r.RefreshToken))
	require.False(t, ow.srv.Live(rt))

	// Reusing the retired token: invalid_grant, and the family is revoked.
	r2 := ow.oauth.Refresh(ctx, ow.conn, ow.client, rt)
	require.Equal(t, hostabi.TokenResponse{Status: 400, Error: "invalid_grant"}, r2)
	require.False(t, ow.srv.Live(r.RefreshToken))
	require.Equal(t, 1, ow.srv.Stats().ReuseDetected)

	rt = ow.srv.Issue([]string{"mail.read"})
	for _, c := range []struct {
		f    authserver.Failure
		want hostabi.TokenResponse
	}{
		{authserver.Failure{Status: 401, Error: "invalid_client"}, hostabi.TokenResponse{Status: 401, Error: "invalid_client"}},
		{authserver.Failure{Error: "invalid_grant"}, hostabi.TokenResponse{Status: 400, Error: "invalid_grant"}},
		{authserver.Failure{Status: 500}, hostabi.TokenResponse{Status: 500, Error: "server_error"}},
		{authserver.Failure{Status: 503, Error: `<script>INJECT</script>`}, hostabi.TokenResponse{Status: 503, Error: "unrecognised_error"}},
		{authserver.Failure{Status: 200, Error: "bad_refresh_token"}, hostabi.TokenResponse{Status: 400, Error: "bad_refresh_token"}},
		{authserver.Failure{Status: 200}, hostabi.TokenResponse{Status: 200, Error: "invalid_token_response"}},
	} {
		ow.srv.Script(c.f)
		require.Equal(t, c.want, ow.oauth.Refresh(ctx, ow.conn, ow.client, rt))
	}
	require.True(t, ow.srv.Live(rt), "scripted failures consumed nothing")

	// Wrong client secret.
	bad := ow.client
	bad.Secret = "nope"
	require.Equal(t, hostabi.TokenResponse{Status: 401, Error: "invalid_client"}, ow.oauth.Refresh(ctx, ow.conn, bad, rt))
}

func TestRefreshTimeout(t *testing.T) {
	ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) {
		o.HTTPTimeout = 200 * time.Millisecond
	})
	rt := ow.srv.Issue(nil)
	ow.srv.Script(authserver.Failure{Delay: 2 * time.Second})
	start := time.Now()
	r := ow.oauth.Refresh(context.Background(), ow.conn, ow.client, rt)
	require.Equal(t, hostabi.TokenResponse{Error: "timeout"}, r)
	require.Less(t, time.Since(start), 1500*time.Millisecond)
}

// A redirect from the token endpoint is never followed (it would replay the refresh token
// and client secret to the new location): the hop receives nothing.
func TestTokenEndpointRedirectIsNeverFollowed(t *testing.T) {
	var hits atomic.Int32
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer trap.Close()
	ow := newOAuthWorld(t, authserver.Config{ClientID: "cid", ClientSecret: "cs"}, nil)
	rt := ow.srv.Issue(nil)
	ow.srv.Script(authserver.Failure{Redirect: trap.URL + "/token"})
	r := ow.oauth.Refresh(context.Background(), ow.conn, ow.client, rt)
	require.Equal(t, hostabi.TokenResponse{Status: 307, Error: "redirect_refused"}, r)
	require.Zero(t, hits.Load())
	require.True(t, ow.srv.Live(rt))
}

// Every URL passes the transport rule before a request goes out: a refused URL is never
// contacted, and a redirect hop the rule refuses is never requested.
func TestTransportRuleBeforeEveryRequest(t *testing.T) {
	ctx := context.Background()
	t.Run("refused token URL", func(t *testing.T) {
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, c *hostabi.Connector) {
			base := o.CheckURL
			o.CheckURL = func(ctx context.Context, u *url.URL, purpose string, hop int, from *url.URL) error {
				if purpose == "token" {
					return errors.New("refused by the test rule")
				}
				return base(ctx, u, purpose, hop, from)
			}
		})
		r := ow.oauth.Refresh(ctx, ow.conn, ow.client, ow.srv.Issue(nil))
		require.Equal(t, 0, r.Status)
		require.Contains(t, r.Error, "refused URL")
		require.Equal(t, 0, ow.srv.Stats().TokenRequests)
	})
	t.Run("plain http to a remote host", func(t *testing.T) {
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(_ *native.Options, c *hostabi.Connector) {
			c.TokenURL = "http://192.0.2.1/token"
		})
		r := ow.oauth.Refresh(ctx, ow.conn, ow.client, "rt")
		require.Contains(t, r.Error, "plain HTTP is allowed only to a loopback IP address")
	})
	t.Run("no rule configured", func(t *testing.T) {
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(o *native.Options, _ *hostabi.Connector) { o.CheckURL = nil })
		r := ow.oauth.Refresh(ctx, ow.conn, ow.client, ow.srv.Issue(nil))
		require.Contains(t, r.Error, "no transport rule")
		require.Equal(t, 0, ow.srv.Stats().TokenRequests)
	})
	t.Run("userinfo redirect to a link-local address", func(t *testing.T) {
		redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		}))
		defer redir.Close()
		ow := newOAuthWorld(t, authserver.Config{ClientID: "cid"}, func(_ *native.Options, c *hostabi.Connector) {
			c.UserinfoURL = redir.URL + "/userinfo"
		})
		r := ow.oauth.Authorize(ctx, ow.conn, ow.client, []string{"mail.read"})
		require.Equal(t, hostabi.AuthOK, r.Status)
		require.Equal(t, "", r.Token.Account, "no account from a refused hop")
		require.Contains(t, ow.checked.all(), "userinfo 1 http://169.254.169.254/latest/meta-data")
	})
}
