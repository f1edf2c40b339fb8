package memhost

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// TokenAnswer is a scripted answer of the token endpoint. Status 0 means no answer at all
// (Error names the transport failure: "timeout" or "refused"); NotJSON answers a body
// that is not JSON.
type TokenAnswer struct {
	Status       int
	Error        string
	AccessToken  string
	RefreshToken string
	ExpiresIn    int64
	Scope        *string
	NotJSON      bool
}

// AuthorizeAnswer is a scripted outcome of an authorization: "ok" (consent, then the code
// exchange answers Token when set, else fresh tokens for Scopes or the requested scopes),
// "denied" (the user refused: Error, default access_denied, in the callback),
// "interactive_required" (no browser here), "timeout" (nobody answered) or "error" (the
// exchange fails with HTTPStatus and Error). Iss, when set, is sent in the callback.
type AuthorizeAnswer struct {
	Status       string
	Error        string
	HTTPStatus   int
	AccessToken  string
	RefreshToken string
	ExpiresIn    int64
	Scopes       []string
	Account      string
	Iss          *string
	// NoIss sends no iss at all, not even the provider's issuer.
	NoIss bool
	// NoRefresh: the code exchange issues no refresh token.
	NoRefresh bool
	// NotJSON: the code exchange answers 200 with a page that is not JSON.
	NotJSON bool
	// Polls are the token endpoint's answers to a device code's first polls, before the
	// outcome: "authorization_pending", "slow_down", or "timeout" (no answer in time).
	Polls []string
	// Device shapes the device authorization answer.
	Device *DeviceAnswer
}

// DeviceAnswer shapes a device authorization answer: the code's lifetime and polling
// interval (seconds; 900 and 5 when zero), or a refusal (Error with HTTPStatus, default
// 400).
type DeviceAnswer struct {
	ExpiresIn  int64
	Interval   int64
	Error      string
	HTTPStatus int
}

// deviceCode is an issued device code and what its user does (RFC 8628).
type deviceCode struct {
	provider string
	scopes   []string
	answer   AuthorizeAnswer
	expires  time.Time
	polls    int
}

// RevokeAnswer is a scripted answer of the revocation endpoint: Status 0 is no answer at
// all (Error "timeout" or "refused"), any other status is answered with Error as the body's
// error; the token is then not revoked.
type RevokeAnswer struct {
	Status int
	Error  string
}

// Client authentication methods at the token and revocation endpoints (RFC 8414
// token_endpoint_auth_method), as the server sees a request.
const (
	AuthBasic = "client_secret_basic"
	AuthPost  = "client_secret_post"
	AuthNone  = "none"
	// AuthMixed is a request that presents a secret both ways (refused: RFC 6749 §2.3).
	AuthMixed = "mixed"
)

// Server is the scripted authorization server: refresh tokens rotate on every use, a
// reused refresh token is invalid_grant (reuse detection), and scripted answers replace
// the next ones. It is the world's HTTP capability (an http.RoundTripper): requests reach
// it at the catalog's endpoint URLs.
type Server struct {
	w          *World
	endpoints  []endpoint
	live       map[string]string // refresh token → provider
	used       map[string]bool
	next       map[string][]TokenAnswer // provider → scripted refresh answers
	auth       map[string][]AuthorizeAnswer
	codes      map[string]*grantCode
	accounts   map[string]string // access token → account
	issuers    map[string]string // provider → issuer sent as iss
	clientAuth map[string]clientAuth
	revokes    map[string][]RevokeAnswer
	devices    map[string]*deviceCode
	latest     map[string]*deviceCode // provider → its last device code
	Rotate     bool
	ExpiresIn  int64
	// BeforeRefresh, when set, runs at the start of every refresh request, outside the
	// world's lock: a test uses it to let another process act while a request is in flight.
	BeforeRefresh func(provider string)
	issued        int
	codesIssued   int // codes count apart, so tokens are numbered as a server without codes would
	requests      int
	sent          []string // refresh tokens presented, in order
	reused        int
	revoked       []string
	exchanges     int      // authorization_code requests
	revocations   int      // revocation requests
	authSeen      []string // how each token request authenticated, in order
}

// clientAuth is how a provider's clients must authenticate: Method, or when it is empty
// RFC 8414's default (client_secret_basic for a client that presents a secret, none for
// one that does not); SecretRequired refuses a client without a secret.
type clientAuth struct {
	Method         string
	SecretRequired bool
}

type endpoint struct {
	provider, kind string
	re             *regexp.Regexp
}

type grantCode struct {
	provider, challenge, redirect, account string
	scopes                                 []string
	answer                                 AuthorizeAnswer
}

func newServer(w *World) *Server {
	return &Server{w: w, live: map[string]string{}, used: map[string]bool{},
		next: map[string][]TokenAnswer{}, auth: map[string][]AuthorizeAnswer{},
		codes: map[string]*grantCode{}, accounts: map[string]string{}, issuers: map[string]string{},
		clientAuth: map[string]clientAuth{}, revokes: map[string][]RevokeAnswer{},
		devices: map[string]*deviceCode{}, latest: map[string]*deviceCode{}, Rotate: true, ExpiresIn: 3600}
}

// Serve makes the server answer a provider's endpoints (URLs may hold "{tenant}"); an
// "issuer" entry is sent as the iss of every authorization response (RFC 9207).
func (s *Server) Serve(provider string, urls map[string]string) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	for kind, u := range urls {
		if u == "" {
			continue
		}
		if kind == "issuer" {
			s.issuers[provider] = u
			continue
		}
		pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(u), regexp.QuoteMeta("{tenant}"), "[^/]+") + "$"
		s.endpoints = append(s.endpoints, endpoint{provider, kind, regexp.MustCompile(pattern)})
	}
}

// ClientAuth sets how a provider's clients must authenticate at the token and revocation
// endpoints: method ("client_secret_basic", "client_secret_post" or "none"), or "" for
// RFC 8414's default (HTTP Basic for a client that presents a secret, none for one that
// does not); secretRequired refuses a client that presents no secret. A request that
// authenticates otherwise is answered 401 invalid_client and changes nothing.
func (s *Server) ClientAuth(provider, method string, secretRequired bool) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.clientAuth[provider] = clientAuth{Method: method, SecretRequired: secretRequired}
}

// ScriptRevoke queues answers for the next revocation requests of a provider.
func (s *Server) ScriptRevoke(provider string, rs ...RevokeAnswer) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.revokes[provider] = append(s.revokes[provider], rs...)
}

// Exchanges is the number of authorization_code requests received.
func (s *Server) Exchanges() int {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.exchanges
}

// Revocations is the number of revocation requests received.
func (s *Server) Revocations() int {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.revocations
}

// AuthSeen returns how every token request authenticated the client, in order
// (client_secret_basic, client_secret_post, none or mixed).
func (s *Server) AuthSeen() []string {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return append([]string(nil), s.authSeen...)
}

// authMethod says how a request authenticates the client: the method, the client id and
// whether a secret was presented. HTTP Basic credentials are form-encoded (RFC 6749 §2.3.1).
func authMethod(req *http.Request, form url.Values) (method, id string, secret bool) {
	user, pass, basic := req.BasicAuth()
	if basic {
		if u, err := url.QueryUnescape(user); err == nil {
			user = u
		}
		if p, err := url.QueryUnescape(pass); err == nil {
			pass = p
		}
	}
	_, posted := form["client_secret"]
	switch {
	case basic && posted:
		return AuthMixed, user, true
	case basic:
		return AuthBasic, user, pass != ""
	case posted:
		return AuthPost, form.Get("client_id"), form.Get("client_secret") != ""
	}
	return AuthNone, form.Get("client_id"), false
}

// authRefusal is why a request's client authentication is refused ("" when accepted);
// called with the world's lock held.
func (s *Server) authRefusal(provider, method, id string, secret bool) string {
	want := s.clientAuth[provider]
	switch {
	case id == "":
		return "no client id"
	case method == AuthMixed:
		return "a secret sent two ways"
	case want.SecretRequired && !secret:
		return "no client secret"
	case want.Method != "" && method != want.Method:
		return "authenticated with " + method + ", registered for " + want.Method
	case want.Method == "" && method == AuthPost:
		return "a secret in the form, registered for client_secret_basic (RFC 8414's default)"
	case method != AuthNone && !secret:
		return "an empty secret"
	}
	return ""
}

// Issue registers a refresh token as valid for a provider (as a past authorization would).
func (s *Server) Issue(provider, refresh string) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.live[refresh] = provider
}

// Script queues answers for the next refreshes of a provider.
func (s *Server) Script(provider string, rs ...TokenAnswer) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.next[provider] = append(s.next[provider], rs...)
}

// ScriptAuthorize queues outcomes for the next authorizations of a provider.
func (s *Server) ScriptAuthorize(provider string, rs ...AuthorizeAnswer) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.auth[provider] = append(s.auth[provider], rs...)
}

// Configure sets rotation and the lifetime of issued access tokens (seconds).
func (s *Server) Configure(rotate bool, expiresIn int64) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.Rotate, s.ExpiresIn = rotate, expiresIn
}

// RequestCount is the number of refresh requests received.
func (s *Server) RequestCount() int {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.requests
}

// Sent returns the refresh tokens presented to the token endpoint, in order (test code
// only: these are secrets).
func (s *Server) Sent() []string {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// Reused counts refreshes that presented a refresh token already used once.
func (s *Server) Reused() int {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.reused
}

// Revoked returns the tokens revoked at the revocation endpoint, in order.
func (s *Server) Revoked() []string {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return append([]string(nil), s.revoked...)
}

func (s *Server) token(prefix string) string {
	s.issued++
	return fmt.Sprintf("%s-%04d", prefix, s.issued)
}

// unavailable consumes an "interactive_required" outcome at the head of the script.
func (s *Server) unavailable(provider string) bool {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if q := s.auth[provider]; len(q) > 0 && q[0].Status == "interactive_required" {
		s.auth[provider] = q[1:]
		return true
	}
	return false
}

// authorize plays the user at the authorization endpoint: it answers the callback's query
// parameters, or nil when nobody answers (timeout).
func (s *Server) authorize(provider, authURL, redirect string) (map[string]string, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, fmt.Errorf("memhost: authorization URL: %w", err)
	}
	q := u.Query()
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if p, kind := s.route(strings.SplitN(authURL, "?", 2)[0]); p != provider || kind != "authorization_url" {
		return nil, fmt.Errorf("memhost: %s is not %s's authorization endpoint", u.Redacted(), provider)
	}
	a := AuthorizeAnswer{Status: "ok"}
	if list := s.auth[provider]; len(list) > 0 {
		a, s.auth[provider] = list[0], list[1:]
	}
	out := map[string]string{"state": q.Get("state")}
	if iss, ok := s.issuers[provider]; ok {
		out["iss"] = iss
	}
	if a.Iss != nil {
		out["iss"] = *a.Iss
	}
	if a.NoIss {
		delete(out, "iss")
	}
	switch a.Status {
	case "timeout":
		return nil, nil
	case "denied":
		out["error"] = a.Error
		if a.Error == "" {
			out["error"] = "access_denied"
		}
		return out, nil
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("redirect_uri") != redirect {
		out["error"] = "invalid_request"
		return out, nil
	}
	scopes := a.Scopes
	if scopes == nil {
		scopes = strings.FieldsFunc(q.Get("scope"), func(r rune) bool { return r == ' ' || r == ',' })
	}
	account := a.Account
	if account == "" {
		account = "user@example.com"
	}
	s.codesIssued++
	code := fmt.Sprintf("code-%s-%04d", provider, s.codesIssued)
	s.codes[code] = &grantCode{provider: provider, challenge: q.Get("code_challenge"),
		redirect: redirect, account: account, scopes: scopes, answer: a}
	out["code"] = code
	return out, nil
}

func (s *Server) route(u string) (provider, kind string) {
	for _, e := range s.endpoints {
		if e.re.MatchString(u) {
			return e.provider, e.kind
		}
	}
	return "", ""
}

type netError struct{ timeout bool }

func (e netError) Error() string   { return "memhost: no answer" }
func (e netError) Timeout() bool   { return e.timeout }
func (e netError) Temporary() bool { return false }

// RoundTrip implements http.RoundTripper: the request is answered by the endpoint its URL
// names.
func (s *Server) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		body = b
	}
	u := *req.URL
	u.RawQuery = ""
	s.w.mu.Lock()
	provider, kind := s.route(u.String())
	s.w.mu.Unlock()
	rec := httptest.NewRecorder()
	switch kind {
	case "token_url":
		form, err := url.ParseQuery(string(body))
		if err != nil || req.Method != http.MethodPost {
			writeJSON(rec, 400, map[string]any{"error": "invalid_request"})
			break
		}
		method, id, secret := authMethod(req, form)
		s.w.mu.Lock()
		s.authSeen = append(s.authSeen, method)
		refused := s.authRefusal(provider, method, id, secret)
		if form.Get("grant_type") == "authorization_code" {
			s.exchanges++
		}
		s.w.mu.Unlock()
		if refused != "" {
			if form.Get("grant_type") == "refresh_token" {
				s.w.mu.Lock()
				s.requests++
				s.w.mu.Unlock()
			}
			writeJSON(rec, 401, map[string]any{"error": "invalid_client"})
			break
		}
		if ans, fail := s.tokenEndpoint(provider, form); fail != nil {
			return nil, fail
		} else {
			ans(rec)
		}
	case "userinfo_url":
		auth := req.Header.Get("Authorization")
		s.w.mu.Lock()
		account, ok := s.accounts[strings.TrimPrefix(auth, "Bearer ")]
		s.w.mu.Unlock()
		if !hasPrefixFold(auth, "Bearer ") || !ok {
			writeJSON(rec, 401, map[string]any{"error": "invalid_token"})
			break
		}
		writeJSON(rec, 200, map[string]any{"email": account, "sub": "subject-1"})
	case "device_authorization_url":
		form, err := url.ParseQuery(string(body))
		if err != nil || req.Method != http.MethodPost {
			writeJSON(rec, 400, map[string]any{"error": "invalid_request"})
			break
		}
		s.deviceAuthorization(provider, req.URL, form)(rec)
	case "revocation_url":
		form, err := url.ParseQuery(string(body))
		if err != nil || req.Method != http.MethodPost {
			writeJSON(rec, 400, map[string]any{"error": "invalid_request"})
			break
		}
		method, id, secret := authMethod(req, form)
		s.w.mu.Lock()
		s.revocations++
		var scripted *RevokeAnswer
		if q := s.revokes[provider]; len(q) > 0 {
			scripted, s.revokes[provider] = &q[0], q[1:]
		}
		refused := s.authRefusal(provider, method, id, secret)
		if scripted == nil && refused == "" {
			s.revoked = append(s.revoked, form.Get("token"))
			delete(s.live, form.Get("token"))
		}
		s.w.mu.Unlock()
		switch {
		case scripted != nil && scripted.Status == 0:
			return nil, netError{timeout: scripted.Error == "timeout"}
		case scripted != nil:
			writeJSON(rec, scripted.Status, map[string]any{"error": scripted.Error})
		case refused != "":
			writeJSON(rec, 401, map[string]any{"error": "invalid_client"})
		default:
			rec.WriteHeader(200)
		}
	default:
		return nil, &url.Error{Op: req.Method, URL: req.URL.Redacted(), Err: syscall.ECONNREFUSED}
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// tokenEndpoint answers one token request, or fails it without an answer.
func (s *Server) tokenEndpoint(provider string, form url.Values) (func(http.ResponseWriter), error) {
	switch form.Get("grant_type") {
	case "refresh_token":
		if s.BeforeRefresh != nil {
			s.BeforeRefresh(provider)
		}
		return s.refresh(provider, form.Get("refresh_token"))
	case "authorization_code":
		return s.exchange(provider, form), nil
	case deviceGrant:
		return s.devicePoll(provider, form.Get("device_code"))
	}
	return func(w http.ResponseWriter) { writeJSON(w, 400, map[string]any{"error": "unsupported_grant_type"}) }, nil
}

func (s *Server) refresh(provider, refresh string) (func(http.ResponseWriter), error) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.requests++
	s.sent = append(s.sent, refresh)
	if s.used[refresh] {
		s.reused++
	}
	if q := s.next[provider]; len(q) > 0 {
		s.next[provider] = q[1:]
		return s.scripted(provider, q[0])
	}
	if s.used[refresh] || s.live[refresh] != provider {
		return errorAnswer(400, "invalid_grant"), nil
	}
	r := map[string]any{"access_token": s.token("access-" + provider), "expires_in": s.ExpiresIn, "token_type": "Bearer"}
	if s.Rotate {
		s.used[refresh] = true
		delete(s.live, refresh)
		next := s.token("refresh-" + provider)
		s.live[next] = provider
		r["refresh_token"] = next
	}
	return jsonAnswer(200, r), nil
}

func (s *Server) scripted(provider string, a TokenAnswer) (func(http.ResponseWriter), error) {
	switch {
	case a.Status == 0:
		return nil, netError{timeout: a.Error == "timeout"}
	case a.NotJSON:
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(a.Status)
			_, _ = io.WriteString(w, "<html>sign in</html>")
		}, nil
	case a.Error != "":
		return errorAnswer(a.Status, a.Error), nil
	}
	r := map[string]any{"token_type": "Bearer"}
	if a.AccessToken != "" {
		r["access_token"] = a.AccessToken
	}
	if a.RefreshToken != "" {
		r["refresh_token"] = a.RefreshToken
		s.live[a.RefreshToken] = provider
	}
	if a.ExpiresIn != 0 {
		r["expires_in"] = a.ExpiresIn
	}
	if a.Scope != nil {
		r["scope"] = *a.Scope
	}
	return jsonAnswer(a.Status, r), nil
}

func errorAnswer(status int, code string) func(http.ResponseWriter) {
	return jsonAnswer(status, map[string]any{"error": code})
}

func jsonAnswer(status int, v any) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { writeJSON(w, status, v) }
}

func (s *Server) exchange(provider string, form url.Values) func(http.ResponseWriter) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	code := form.Get("code")
	g, ok := s.codes[code]
	delete(s.codes, code) // single use
	if !ok || g.provider != provider || form.Get("redirect_uri") != g.redirect {
		return errorAnswer(400, "invalid_grant")
	}
	sum := sha256.Sum256([]byte(form.Get("code_verifier")))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		return errorAnswer(400, "invalid_grant")
	}
	a := g.answer
	if a.Status == "error" {
		status := a.HTTPStatus
		if status == 0 {
			status = 400
		}
		return errorAnswer(status, a.Error)
	}
	return s.tokens(g)
}

// tokens answers a granted authorization: an access token, a refresh token unless
// NoRefresh, the scopes; the access token names the account at userinfo.
func (s *Server) tokens(g *grantCode) func(http.ResponseWriter) {
	a, provider := g.answer, g.provider
	if a.NotJSON {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(200)
			_, _ = io.WriteString(w, "<html>sign in</html>")
		}
	}
	access := a.AccessToken
	if access == "" {
		access = s.token("access-" + provider)
	}
	refresh := a.RefreshToken
	if refresh == "" && !a.NoRefresh {
		refresh = s.token("refresh-" + provider)
	}
	expires := a.ExpiresIn
	if expires == 0 {
		expires = s.ExpiresIn
	}
	scopes := append([]string(nil), g.scopes...)
	sort.Strings(scopes)
	r := map[string]any{"access_token": access, "expires_in": expires, "token_type": "Bearer", "scope": strings.Join(scopes, " ")}
	if refresh != "" {
		r["refresh_token"] = refresh
		s.live[refresh] = provider
	}
	s.accounts[access] = g.account
	return jsonAnswer(200, r)
}

var _ http.RoundTripper = (*Server)(nil)

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

// deviceAuthorization issues a device code (RFC 8628 §3.2) whose user does what the
// provider's next scripted authorization says (consent by default).
func (s *Server) deviceAuthorization(provider string, at *url.URL, form url.Values) func(http.ResponseWriter) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	a := AuthorizeAnswer{Status: "ok"}
	if list := s.auth[provider]; len(list) > 0 {
		a, s.auth[provider] = list[0], list[1:]
	}
	d := DeviceAnswer{}
	if a.Device != nil {
		d = *a.Device
	}
	if d.Error != "" {
		status := d.HTTPStatus
		if status == 0 {
			status = 400
		}
		return errorAnswer(status, d.Error)
	}
	if d.ExpiresIn == 0 {
		d.ExpiresIn = 900
	}
	if d.Interval == 0 {
		d.Interval = 5
	}
	s.codesIssued++
	code := fmt.Sprintf("device-%s-%04d", provider, s.codesIssued)
	user := fmt.Sprintf("CODE-%04d", s.codesIssued)
	scopes := a.Scopes
	if scopes == nil {
		scopes = strings.FieldsFunc(form.Get("scope"), func(r rune) bool { return r == ' ' || r == ',' })
	}
	dc := &deviceCode{provider: provider, scopes: scopes, answer: a, expires: s.w.now.Add(time.Duration(d.ExpiresIn) * time.Second)}
	s.devices[code] = dc
	s.latest[provider] = dc
	verify := at.Scheme + "://" + at.Host + "/device"
	return jsonAnswer(200, map[string]any{
		"device_code": code, "user_code": user, "verification_uri": verify,
		"verification_uri_complete": verify + "?user_code=" + user,
		"expires_in":                d.ExpiresIn, "interval": d.Interval,
	})
}

// deviceUnattended reports whether the user of the provider's last device code is not
// there to read it (its scripted authorization is interactive_required).
func (s *Server) deviceUnattended(provider string) bool {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	dc := s.latest[provider]
	return dc != nil && dc.answer.Status == "interactive_required"
}

// devicePoll answers a poll with a device code (RFC 8628 §3.5): expired_token once the
// code has expired, the scripted answers of the first polls, then the user's decision:
// tokens (the code is then used up), access_denied, authorization_pending for ever
// (timeout), or a scripted error.
func (s *Server) devicePoll(provider, code string) (func(http.ResponseWriter), error) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	dc, ok := s.devices[code]
	if !ok || dc.provider != provider {
		return errorAnswer(400, "invalid_grant"), nil
	}
	if !s.w.now.Before(dc.expires) {
		return errorAnswer(400, "expired_token"), nil
	}
	a := dc.answer
	if dc.polls < len(a.Polls) {
		p := a.Polls[dc.polls]
		dc.polls++
		if p == "timeout" {
			return nil, netError{timeout: true}
		}
		return errorAnswer(400, p), nil
	}
	dc.polls++
	switch a.Status {
	case "denied":
		e := a.Error
		if e == "" {
			e = "access_denied"
		}
		return errorAnswer(400, e), nil
	case "timeout", "interactive_required":
		return errorAnswer(400, "authorization_pending"), nil
	case "error":
		status := a.HTTPStatus
		if status == 0 {
			status = 400
		}
		return errorAnswer(status, a.Error), nil
	}
	delete(s.devices, code) // used up
	g := &grantCode{provider: provider, scopes: dc.scopes, answer: a, account: a.Account}
	if g.account == "" {
		g.account = "user@example.com"
	}
	return s.tokens(g), nil
}
