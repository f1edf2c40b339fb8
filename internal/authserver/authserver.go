// Package authserver is a small, real OAuth 2.0 authorization server on 127.0.0.1 for
// grantwire's tests and demo: an authorization endpoint (automatic consent, or
// error=access_denied), a token endpoint with the authorization_code grant and PKCE S256
// verification (RFC 7636), the refresh_token grant with rotation and reuse detection (a
// reused refresh token is invalid_grant and revokes its whole family, as OAuth 2.0
// Security BCP §4.14 recommends), scripted failures (401, invalid_grant, 500, slow
// answers, redirects), and a userinfo endpoint.
//
// It speaks HTTP on the loopback only, answers with static pages that echo nothing, and
// never logs a token. It imports the standard library only; nothing in grantwire's product
// imports it.
package authserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config configures the server. Zero values mean the documented defaults.
type Config struct {
	// ClientID is the only client accepted ("" accepts any client id).
	ClientID string
	// ClientSecret, when set, must accompany every token request (client_secret_post or
	// client_secret_basic).
	ClientSecret string
	// Account is the email the userinfo endpoint returns (default "user@example.com").
	Account string
	// GrantedScopes are the scopes consent grants; nil grants what was requested.
	GrantedScopes []string
	// Deny makes the authorization endpoint answer error=access_denied.
	Deny bool
	// ExpiresIn is the access tokens' lifetime in seconds (default 3600).
	ExpiresIn int64
	// NoRotation keeps refresh tokens valid across refreshes (default: every refresh
	// issues a new refresh token and retires the one presented).
	NoRotation bool
	// KeepFamilyOnReuse only refuses a reused refresh token (default: a reuse also
	// revokes every token of its family).
	KeepFamilyOnReuse bool
	// TokenPrefix starts every issued token (default "gw"); tests plant distinctive values.
	TokenPrefix string
	// Now tells the time (default time.Now).
	Now func() time.Time
}

// Failure scripts the answer to one upcoming token request.
type Failure struct {
	// Grant limits the failure to "authorization_code" or "refresh_token" requests ("" any).
	Grant string
	// Delay holds the answer back (a slow server); alone, the request is then served.
	Delay time.Duration
	// Status is the HTTP status to answer (400 when only Error is set).
	Status int
	// Error is the OAuth error code of the answer (RFC 6749 §5.2).
	Error string
	// Redirect answers 307 to this URL instead.
	Redirect string
}

// Stats counts what the server saw.
type Stats struct {
	Authorizations int // codes issued
	Denials        int // error=access_denied answers
	CodeExchanges  int // successful authorization_code grants
	Refreshes      int // successful refresh_token grants
	ReuseDetected  int // a retired refresh token (or a used code) presented again
	InvalidGrants  int // invalid_grant answers (scripted ones included)
	TokenRequests  int // every token endpoint request
	Userinfo       int // successful userinfo answers
}

type code struct {
	clientID, redirectURI, challenge string
	scopes                           []string
	expires                          time.Time
	used                             bool
	family                           int
}

type refresh struct {
	family int
	live   bool
	scopes []string
}

type access struct {
	family  int
	expires time.Time
}

// Server is a running authorization server.
type Server struct {
	mu       sync.Mutex
	cfg      Config
	codes    map[string]*code
	refresh  map[string]*refresh
	access   map[string]*access
	revoked  map[int]bool
	families int
	script   []Failure
	stats    Stats

	ln   net.Listener
	srv  *http.Server
	base string
}

// New returns a server that is not listening yet (see Start, or use Handler).
func New(cfg Config) *Server {
	if cfg.Account == "" {
		cfg.Account = "user@example.com"
	}
	if cfg.ExpiresIn == 0 {
		cfg.ExpiresIn = 3600
	}
	if cfg.TokenPrefix == "" {
		cfg.TokenPrefix = "gw"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Server{cfg: cfg, codes: map[string]*code{}, refresh: map[string]*refresh{},
		access: map[string]*access{}, revoked: map[int]bool{}}
}

// Start listens on addr ("" means 127.0.0.1:0) and serves until Close. Only loopback
// addresses are accepted.
func Start(cfg Config, addr string) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("authserver: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%w: %s", ErrNotLoopback, host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("authserver: %w", err)
	}
	s := New(cfg)
	s.ln = ln
	s.base = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the server's base URL (http://127.0.0.1:<port>).
func (s *Server) URL() string { return s.base }

// AuthorizationURL, TokenURL and UserinfoURL are the endpoints.
func (s *Server) AuthorizationURL() string { return s.base + "/authorize" }

// TokenURL is the token endpoint.
func (s *Server) TokenURL() string { return s.base + "/token" }

// UserinfoURL is the userinfo endpoint.
func (s *Server) UserinfoURL() string { return s.base + "/userinfo" }

// Close stops the server.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

// Configure changes the configuration of a running server.
func (s *Server) Configure(change func(*Config)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.cfg)
}

// Script queues answers for the next token requests, in order.
func (s *Server) Script(f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, f...)
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Issue mints a live refresh token for scopes in a new family, as a past authorization
// would have (for forwarded connections).
func (s *Server) Issue(scopes []string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.families++
	rt := s.token("rt")
	s.refresh[rt] = &refresh{family: s.families, live: true, scopes: slices.Clone(scopes)}
	return rt
}

// Live reports whether a refresh token is currently valid.
func (s *Server) Live(refreshToken string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refresh[refreshToken]
	return ok && r.live && !s.revoked[r.family]
}

// LiveRefreshTokens returns how many refresh tokens are valid right now.
func (s *Server) LiveRefreshTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.refresh {
		if r.live && !s.revoked[r.family] {
			n++
		}
	}
	return n
}

func (s *Server) token(kind string) string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return s.cfg.TokenPrefix + "_" + kind + "_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// Handler serves /authorize, /token and /userinfo.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.tokenEndpoint)
	mux.HandleFunc("/userinfo", s.userinfo)
	return mux
}

const pageBadRequest = "<!doctype html><title>authserver</title><p>Invalid authorization request.</p>\n"

func isLoopbackRedirect(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Fragment != "" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback() && u.Port() != ""
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if (s.cfg.ClientID != "" && q.Get("client_id") != s.cfg.ClientID) || q.Get("client_id") == "" || !isLoopbackRedirect(redirect) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(pageBadRequest))
		return
	}
	back, _ := url.Parse(redirect)
	v := back.Query()
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	switch {
	case q.Get("response_type") != "code":
		v.Set("error", "unsupported_response_type")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		v.Set("error", "invalid_request")
	case s.cfg.Deny:
		v.Set("error", "access_denied")
		s.stats.Denials++
	default:
		scopes := strings.Fields(q.Get("scope"))
		if s.cfg.GrantedScopes != nil {
			scopes = slices.Clone(s.cfg.GrantedScopes)
		}
		c := s.token("code")
		s.codes[c] = &code{clientID: q.Get("client_id"), redirectURI: redirect, challenge: q.Get("code_challenge"),
			scopes: scopes, expires: s.cfg.Now().Add(time.Minute)}
		v.Set("code", c)
		s.stats.Authorizations++
	}
	back.RawQuery = v.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, back.String(), http.StatusFound)
}

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) oauthError(w http.ResponseWriter, status int, code string) {
	if code == "invalid_grant" {
		s.stats.InvalidGrants++
	}
	if status == http.StatusUnauthorized && code == "invalid_client" {
		w.Header().Set("WWW-Authenticate", `Basic realm="authserver"`)
	}
	writeJSON(w, status, map[string]string{"error": code})
}

// nextFailure pops the first scripted failure that applies to grant.
func (s *Server) nextFailure(grant string) (Failure, bool) {
	for i, f := range s.script {
		if f.Grant == "" || f.Grant == grant {
			s.script = append(s.script[:i], s.script[i+1:]...)
			return f, true
		}
	}
	return Failure{}, false
}

func (s *Server) tokenEndpoint(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.mu.Lock()
		s.stats.TokenRequests++
		s.oauthError(w, http.StatusBadRequest, "invalid_request")
		s.mu.Unlock()
		return
	}
	grant := r.PostForm.Get("grant_type")
	s.mu.Lock()
	s.stats.TokenRequests++
	f, scripted := s.nextFailure(grant)
	s.mu.Unlock()
	if scripted && f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if scripted {
		switch {
		case f.Redirect != "":
			w.Header().Set("Location", f.Redirect)
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		case f.Status != 0 || f.Error != "":
			status := f.Status
			if status == 0 {
				status = http.StatusBadRequest
			}
			code := f.Error
			if code == "" && status >= 500 {
				code = "server_error"
			}
			s.oauthError(w, status, code)
			return
		}
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if (s.cfg.ClientID != "" && subtle.ConstantTimeCompare([]byte(id), []byte(s.cfg.ClientID)) != 1) ||
		(s.cfg.ClientSecret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.cfg.ClientSecret)) != 1) {
		s.oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	switch grant {
	case "authorization_code":
		s.exchange(w, r, id)
	case "refresh_token":
		s.refreshGrant(w, r)
	default:
		s.oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
	}
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (s *Server) exchange(w http.ResponseWriter, r *http.Request, clientID string) {
	c, ok := s.codes[r.PostForm.Get("code")]
	switch {
	case !ok:
		s.oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	case c.used:
		// RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
		s.stats.ReuseDetected++
		if c.family != 0 {
			s.revoked[c.family] = true
		}
		s.oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	c.used = true
	verifier := r.PostForm.Get("code_verifier")
	if s.cfg.Now().After(c.expires) || c.clientID != clientID || c.redirectURI != r.PostForm.Get("redirect_uri") ||
		verifier == "" || subtle.ConstantTimeCompare([]byte(s256(verifier)), []byte(c.challenge)) != 1 {
		s.oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	s.families++
	c.family = s.families
	rt := s.token("rt")
	s.refresh[rt] = &refresh{family: c.family, live: true, scopes: c.scopes}
	s.stats.CodeExchanges++
	writeJSON(w, http.StatusOK, s.issue(c.family, c.scopes, rt))
}

func (s *Server) issue(family int, scopes []string, rt string) tokenAnswer {
	at := s.token("at")
	s.access[at] = &access{family: family, expires: s.cfg.Now().Add(time.Duration(s.cfg.ExpiresIn) * time.Second)}
	return tokenAnswer{AccessToken: at, TokenType: "Bearer", ExpiresIn: s.cfg.ExpiresIn, RefreshToken: rt,
		Scope: strings.Join(scopes, " ")}
}

func (s *Server) refreshGrant(w http.ResponseWriter, r *http.Request) {
	presented := r.PostForm.Get("refresh_token")
	rt, ok := s.refresh[presented]
	switch {
	case !ok || s.revoked[rt.family]:
		s.oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	case !rt.live:
		s.stats.ReuseDetected++
		if !s.cfg.KeepFamilyOnReuse {
			s.revoked[rt.family] = true
		}
		s.oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	next := ""
	if !s.cfg.NoRotation {
		rt.live = false
		next = s.token("rt")
		s.refresh[next] = &refresh{family: rt.family, live: true, scopes: rt.scopes}
	}
	s.stats.Refreshes++
	writeJSON(w, http.StatusOK, s.issue(rt.family, rt.scopes, next))
}

func (s *Server) userinfo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	a, found := s.access[tok]
	if !ok || !found || s.revoked[a.family] || s.cfg.Now().After(a.expires) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	s.stats.Userinfo++
	writeJSON(w, http.StatusOK, map[string]any{"sub": fmt.Sprintf("user-%d", a.family), "email": s.cfg.Account, "email_verified": true})
}

// ErrNotLoopback is returned by Start for a non-loopback address.
var ErrNotLoopback = errors.New("authserver: not a loopback address")
