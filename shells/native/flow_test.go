package native_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/grantwire/grantwire/catalog"
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
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/shells/native"
)

// The OAuth flows run end to end: the policy says what to request, the OS shell sends it
// to the local authorization server over real HTTP and plays the loopback.

// catalogWith is the test catalog with some fields of the "local" provider replaced.
func catalogWith(srv *authserver.Server, change map[string]any) []byte {
	var doc map[string]map[string]map[string]any
	if err := json.Unmarshal(testCatalog(srv), &doc); err != nil {
		panic(err)
	}
	for k, v := range change {
		doc["connectors"]["local"][k] = v
	}
	b, _ := json.Marshal(doc)
	return b
}

func TestConnectWithPKCE(t *testing.T) {
	ctx := context.Background()
	var seen string
	w := newWorld(t, worldOpts{
		server:  &authserver.Config{ClientID: "cid", ClientSecret: "csecret", Account: "ada@example.com", GrantedScopes: []string{"openid", "mail.read"}},
		browser: func(u string) error { seen = u; return autoBrowser(u) },
	})
	configure(t, w, "cid", "csecret")
	res, err := w.client.Connect(ctx, "local", []string{"openid", "mail.read", "mail.send"}, nil)
	require.NoError(t, err)
	require.Equal(t, "ada@example.com", res.Account)
	require.Equal(t, []string{"mail.read", "openid"}, res.Scopes, "the connection holds what the server granted")
	require.Equal(t, []string{"mail.send"}, res.NotGranted)
	require.NotEmpty(t, res.Warnings)

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
	require.Equal(t, "mail.read mail.send openid", q.Get("scope"))
	require.Empty(t, q.Get("client_secret"))
	require.Equal(t, []string{
		"POST " + w.srv.TokenURL(),
		"GET " + w.srv.UserinfoURL(),
	}, w.checked.all(), "the shell sent the exchange and the userinfo request, nothing else")
	require.Contains(t, w.prompt.String(), "The browser shows the local authorization")
	require.Equal(t, 1, w.srv.Stats().CodeExchanges)
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
	var w *world
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
		assertStatic(t, get(cbURL(url.Values{"code": {"evil-code"}, "state": {"wrong-state"}}), ""), 400)
		assertStatic(t, get(cbURL(url.Values{"code": {"evil-code"}}), ""), 400)
		assertStatic(t, get(cbURL(url.Values{"code": {"evil-code"}, "state": {state, state}}), ""), 400)
		assertStatic(t, get(cbURL(url.Values{"code": {script}, "state": {script}, "error": {script},
			"error_description": {script}, script: {script}}), ""), 400)
		for _, host := range []string{"localhost:" + redirect.Port(), "evil.example", "127.0.0.1"} {
			assertStatic(t, get(cbURL(url.Values{"code": {"evil-code"}, "state": {state}}), host), 400)
		}
		assertStatic(t, get(redirect.Scheme+"://"+redirect.Host+"/favicon.ico", ""), 404)
		assertStatic(t, get(redirect.Scheme+"://"+redirect.Host+"/callback/"+url.PathEscape(script), ""), 404)
		resp, err := c.Post(cbURL(url.Values{"code": {"evil-code"}, "state": {state}}), "text/plain", strings.NewReader(script))
		require.NoError(t, err)
		assertStatic(t, resp, 405)
		require.Equal(t, 0, w.srv.Stats().CodeExchanges, "nothing was consumed")

		resp = get(authURL, "")
		require.Equal(t, http.StatusFound, resp.StatusCode)
		loc := resp.Header.Get("Location")
		_ = resp.Body.Close()
		require.Contains(t, assertStatic(t, get(loc, ""), 200), "Authorization complete")

		resp = get(cbURL(url.Values{"code": {"evil-code"}, "state": {state}}), "")
		secondStatus = resp.StatusCode
		assertStatic(t, resp, 410)
		return nil
	}
	w = newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid"}, browser: func(u string) error { go browser(u); return nil }})
	configure(t, w, "cid", "")
	_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return secondStatus != 0 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 410, secondStatus)
	require.Equal(t, 1, w.srv.Stats().CodeExchanges)
	p := w.prompt.String()
	require.Contains(t, p, "state mismatch")
	require.Contains(t, p, "no state parameter")
	require.Contains(t, p, "wrong Host header")
	require.NotContains(t, p, "INJECT")
	require.NotContains(t, p, "evil")
}

// An error from the provider with the right state ends the wait at once; the policy says
// what it means, and a script in the error is not repeated.
func TestCallbackErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		errParam string
		code     string
		contains string
	}{
		{"access_denied", "CONSENT_DENIED", "access_denied"},
		{"temporarily_unavailable", "PROVIDER_ERROR", "temporarily_unavailable"},
		{`<script>alert("INJECT")</script>`, "PROVIDER_ERROR", "unrecognised_error"},
	} {
		t.Run(c.code+"/"+c.contains, func(t *testing.T) {
			browser := func(authURL string) error {
				go func() {
					u, _ := url.Parse(authURL)
					q := url.Values{"state": {u.Query().Get("state")}, "error": {c.errParam},
						"error_description": {`<script>alert("INJECT")</script>`}}
					resp, err := http.Get(u.Query().Get("redirect_uri") + "?" + q.Encode())
					if err == nil {
						assertStatic(t, resp, 200)
					}
				}()
				return nil
			}
			w := newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid"}, browser: browser})
			configure(t, w, "cid", "")
			start := time.Now()
			_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, nil)
			require.Less(t, time.Since(start), 5*time.Second, "no wait for the timeout")
			var ge *grantwire.Error
			require.ErrorAs(t, err, &ge)
			require.Equal(t, c.code, ge.Code)
			require.Contains(t, ge.Message, c.contains)
			require.NotContains(t, ge.Message, "INJECT")
			require.Equal(t, 0, w.srv.Stats().TokenRequests)
		})
	}
}

func TestConnectDeniedByServer(t *testing.T) {
	w := newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid", Deny: true}})
	configure(t, w, "cid", "")
	start := time.Now()
	_, err := w.client.Connect(context.Background(), "local", []string{"mail.read"}, nil)
	require.ErrorIs(t, err, grantwire.ErrConsentDenied)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, 1, w.srv.Stats().Denials)
}

func TestConnectHeadless(t *testing.T) {
	ctx := context.Background()
	t.Run("no browser and nobody to ask", func(t *testing.T) {
		w := newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid"}, browser: noBrowser})
		configure(t, w, "cid", "")
		_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, nil)
		require.ErrorIs(t, err, grantwire.ErrInteractiveAuthRequired)
		require.Empty(t, w.checked.all(), "decided before any request")
	})
	t.Run("a browser that fails and nobody to ask", func(t *testing.T) {
		w := newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid"},
			browser: func(string) error { return errors.New("xdg-open: not found") }})
		configure(t, w, "cid", "")
		_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, nil)
		require.ErrorIs(t, err, grantwire.ErrInteractiveAuthRequired)
		require.Empty(t, w.checked.all())
	})
	t.Run("print the URL and wait", func(t *testing.T) {
		w := newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid"},
			browser: func(string) error { return errors.New("xdg-open: not found") },
			tweak:   func(o *native.Options) { o.Interactive = true }})
		configure(t, w, "cid", "")
		go func() { // the person reading the prompt
			re := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/authorize\?\S+`)
			for range 500 {
				if m := re.FindString(w.prompt.String()); m != "" {
					_ = autoBrowser(m)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, nil)
		require.NoError(t, err)
		require.Contains(t, w.prompt.String(), "open this URL in a browser")
	})
	t.Run("timeout", func(t *testing.T) {
		var port string
		w := newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid"}, browser: func(u string) error {
			pu, _ := url.Parse(u)
			ru, _ := url.Parse(pu.Query().Get("redirect_uri"))
			port = ru.Port()
			return nil // opened, but nobody answers
		}})
		configure(t, w, "cid", "")
		_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, nil, grantwire.ConnectOptions{Timeout: time.Second})
		var ge *grantwire.Error
		require.ErrorAs(t, err, &ge)
		require.Equal(t, "AUTHORIZATION_TIMEOUT", ge.Code)
		require.Equal(t, 4, ge.Exit)
		require.Contains(t, w.prompt.String(), "No authorization arrived within 1s")
		_, derr := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		require.Error(t, derr, "the listener is closed")
	})
	t.Run("canceled", func(t *testing.T) {
		w := newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid"}, browser: func(string) error { return nil }})
		configure(t, w, "cid", "")
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		_, err := w.client.Connect(cctx, "local", []string{"mail.read"}, nil)
		require.ErrorIs(t, err, hostabi.ErrCanceled)
		require.Less(t, time.Since(start), 3*time.Second)
		st, err := w.client.Status(ctx, "local")
		require.NoError(t, err)
		require.False(t, st[0].Configured, "nothing was stored")
	})
}

func noBrowser(string) error { return errors.New("no browser") }

// A provider that refuses the client's credentials is a configuration error naming the
// secret, not a reconnect that cannot work.
func TestInvalidClientIsAConfigurationError(t *testing.T) {
	ctx := context.Background()
	w := connected(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 30}, worldOpts{})
	configure(t, w, "cid", "wrong-secret")
	_, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
	var ge *grantwire.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, "CONFIGURATION", ge.Code)
	require.Equal(t, 3, ge.Exit)
	require.Contains(t, ge.Fix, "grantwire configure local --client-id <id> --client-secret-stdin")
}

// A token endpoint that does not answer in time is a provider error, soon.
func TestRefreshTimeout(t *testing.T) {
	w := connected(t, authserver.Config{ClientID: "cid", ExpiresIn: 30}, worldOpts{
		tweak: func(o *native.Options) { o.HTTPTimeout = 300 * time.Millisecond }})
	w.srv.Script(authserver.Failure{Delay: 3 * time.Second})
	start := time.Now()
	_, err := w.client.GetAccessToken(context.Background(), "local", []string{"mail.read"}, "builtin:chat")
	var ge *grantwire.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, "PROVIDER_ERROR", ge.Code)
	require.Contains(t, ge.Message, "could not be reached (no answer in time)")
	require.Less(t, time.Since(start), 2500*time.Millisecond)
}

// A redirect from the token endpoint is never followed (it would replay the refresh token
// and client secret to the new location): the hop receives nothing.
func TestTokenEndpointRedirectIsNeverFollowed(t *testing.T) {
	var hits atomic.Int32
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer trap.Close()
	w := connected(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 30}, worldOpts{})
	w.srv.Script(authserver.Failure{Redirect: trap.URL + "/token"})
	_, err := w.client.GetAccessToken(context.Background(), "local", []string{"mail.read"}, "builtin:chat")
	var ge *grantwire.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, "PROVIDER_ERROR", ge.Code)
	require.Contains(t, ge.Message, "status 307")
	require.Zero(t, hits.Load())
}

// The transport rule judges every URL before a request goes out: a refused URL is never
// contacted, and a redirect is never followed to a link-local address.
func TestTransportRuleBeforeEveryRequest(t *testing.T) {
	ctx := context.Background()
	t.Run("plain http to a remote host", func(t *testing.T) {
		// Refused when the catalog is read, before any shell is asked anything.
		sh, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = sh.Close() })
		var sent urlLog
		caps := sh.Capabilities()
		caps.HTTP = logTransport{&sent, caps.HTTP}
		_, err = grantwire.New(ctx, grantwire.WithCapabilities(caps),
			grantwire.WithCatalog(catalog.Bytes(catalogWith(nil, map[string]any{"token_url": "http://192.0.2.1/token"}))))
		var ge *grantwire.Error
		require.ErrorAs(t, err, &ge)
		require.Equal(t, "CONFIGURATION", ge.Code)
		require.Contains(t, ge.Message, "plain HTTP is allowed only to a loopback IP address")
		require.Empty(t, sent.all(), "nothing was sent")
	})
	t.Run("userinfo redirect to a link-local address", func(t *testing.T) {
		redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		}))
		defer redir.Close()
		srv, err := authserver.Start(authserver.Config{ClientID: "cid"}, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		w := newWorld(t, worldOpts{browser: autoBrowser, options: []grantwire.Option{
			grantwire.WithCatalog(catalog.Bytes(catalogWith(srv, map[string]any{"userinfo_url": redir.URL + "/userinfo"})))}})
		w.srv = srv
		configure(t, w, "cid", "")
		res, err := w.client.Connect(ctx, "local", []string{"mail.read"}, nil)
		require.NoError(t, err)
		require.Equal(t, "", res.Account, "no account from a redirect")
		for _, u := range w.checked.all() {
			require.NotContains(t, u, "169.254", "the hop was never requested")
		}
	})
}
