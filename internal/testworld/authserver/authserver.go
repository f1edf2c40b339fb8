// Package authserver is the test worlds' one fake OAuth 2.0 / MCP authorization server,
// an http.Handler for fault injection, shared by every test that needs one: an
// authorization endpoint (automatic consent, or error=access_denied), a token endpoint with
// the authorization_code grant and PKCE S256 verification (RFC 7636), the refresh_token
// grant with rotation and reuse detection (a reused refresh token is invalid_grant and
// revokes its whole family, as OAuth 2.0 Security BCP §4.14 recommends), scripted failures
// (401, invalid_grant, 500, slow answers, redirects, no answer), a userinfo endpoint, the
// revocation endpoint (RFC 7009), the device authorization grant (RFC 8628, device.go)
// with a scriptable user, and for remote MCP servers authorization server metadata (RFC
// 8414), dynamic client registration (RFC 7591), client ID metadata documents and a token
// verifier (mcp.go).
//
// It answers with static pages that echo nothing, never logs a token, and listens on the
// loopback only (Start). One server can play several providers at once, each under its own
// path (ProviderURL, providers.go) or at a catalog's own URLs (ServeProviders, world.go):
// tokens issued for one provider are refused by another, and scripted answers, consents
// and authorization outcomes are queued per provider.
//
// Three kinds of tests use it:
//   - the CLI's end-to-end tests, the shells' tests, `make demo` and `make authserver`
//     (internal/cmd/authserver): a real server on 127.0.0.1 (Start, Config);
//   - the conformance corpus: NewWorld makes the server a scenario expects, Load follows
//     the scenario's token_server script; the in-memory host (internal/testworld/memhost)
//     answers its HTTP capability from the handler in process, the OS shell's runner
//     (internal/testworld/nativeshell) over HTTP;
//   - runners in other languages (the Node shell's shells/wasm/node/run.mjs, the Python
//     shell's): the control API (Worlds, control.go) creates a world per scenario,
//     scripts it, sets its simulated clock and reads its counters over HTTP, so that a
//     foreign shell meets the very server the Go shells meet.
//
// It imports the standard library only; nothing in grantwire's product imports it.
package authserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
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
	// SequentialNames names issued access and refresh tokens access-<provider>-NNNN and
	// refresh-<provider>-NNNN (access-NNNN, refresh-NNNN at the root endpoints) with one
	// counter from 0001, the access token before the refresh token of one answer: the
	// conformance corpus's names. Codes count on a counter of their own:
	// code-<provider>-NNNN, device codes device-<provider>-NNNN shown as CODE-NNNN. Every
	// name is then deterministic, so that two runs of a scenario ask the same questions.
	SequentialNames bool
	// DeviceApprove: the user of a device code nothing scripted approves it at the first
	// poll (default: the verification page, Approve or Deny decides).
	DeviceApprove bool
	// Issuer, when set, is sent as the iss parameter of every authorization response
	// (RFC 9207); Issuers sets it per provider (ProviderURL), overriding it.
	Issuer  string
	Issuers map[string]string
	// ClientAuth is how clients must authenticate at the token and revocation endpoints
	// (RFC 8414's token_endpoint_auth_method): AuthBasic (HTTP Basic, the form-encoded id
	// and secret, RFC 6749 §2.3.1), AuthPost (client_id and client_secret in the form),
	// AuthNone (the client_id in the form, no secret), or AuthDefault (RFC 8414's default:
	// HTTP Basic for a client that presents a secret, none for one that does not). ""
	// accepts any of them. A request authenticated otherwise, or with a secret sent two
	// ways, is answered 401 invalid_client and changes nothing. ProviderClientAuth sets it
	// per provider, overriding it.
	ClientAuth         string
	ProviderClientAuth map[string]string
	// Now tells the time (default time.Now).
	Now func() time.Time

	// Remote MCP (mcp.go). ScopesSupported is the metadata's scopes_supported (nil: not
	// published). NoRegistration publishes no registration endpoint; RegistrationAnswer,
	// when set, is answered to every registration instead of a real one (hostile-server
	// tests). RequireRegistration refuses clients that are not registered (dynamically or
	// by a client ID metadata document). CIMDClient fetches client ID metadata documents
	// (https client ids; nil: not supported). MetadataOverride replaces (nil deletes)
	// members of the metadata.
	ScopesSupported     []string
	NoRegistration      bool
	RegistrationAnswer  map[string]any
	RequireRegistration bool
	CIMDClient          *http.Client
	MetadataOverride    map[string]any

	// Machine grants (machine.go). ClientCredentials accepts the client credentials grant
	// from a confidential client. ClientKey, the client's public key (EC P-256 or RSA),
	// accepts private_key_jwt client authentication (RFC 7523 §2.2). AssertionKey accepts
	// the JWT bearer grant (RFC 7523 §2.1) with JWTs it signed (aud the issuer), and is the
	// key of the ID tokens the identity provider on /idp/token exchanges for ID-JAGs
	// (RFC 8693, SEP-990; aud IDPClientID, the client there, when set), which the JWT
	// bearer grant takes too.
	ClientCredentials bool
	ClientKey         crypto.PublicKey
	AssertionKey      crypto.PublicKey
	IDPClientID       string

	// DeviceExpiresIn and DeviceInterval are the lifetime and polling interval of device
	// codes in seconds (default 900 and 5; device.go).
	DeviceExpiresIn, DeviceInterval int64
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
	// BeforeAnswer, alone, serves the request as usual (a refresh rotates) and runs
	// between the server's answer and its sending: the client's world changes just as the
	// provider has answered (a test stops the client's database there).
	BeforeAnswer func()
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
	// RefreshRequests counts every refresh_token grant request, answered or refused,
	// scripted ones included.
	RefreshRequests int
	Userinfo        int // successful userinfo answers
	Revocations     int // revocation requests (RFC 7009)
	// Remote MCP: metadata requests, registration requests, client ID metadata documents
	// fetched.
	MetadataRequests, Registrations, MetadataDocuments int
	// RefreshResources is the resource parameter (RFC 8707) of every successful refresh.
	RefreshResources []string
	// The device authorization grant (device.go): codes issued, polls received, decisions,
	// tokens issued for a device code, and polls sooner than the interval.
	DeviceCodes, DevicePolls, DeviceApprovals, DeviceDenials, DeviceExchanges, TooFast int
	// ExchangeRequests counts every authorization_code grant request, answered or refused.
	ExchangeRequests int
	// RevokedTokens counts refresh tokens revoked at the revocation endpoint.
	RevokedTokens int
	// InvalidClients counts requests refused for their client authentication.
	InvalidClients int
	// Machine grants (machine.go): access tokens issued for a client credentials or JWT
	// bearer grant, JWT bearer grants among them, token exchanges asked of the identity
	// provider.
	MachineGrants, JWTBearerGrants, TokenExchanges int
}

// Client authentication methods (Config.ClientAuth), as a request presents them
// (ClientAuthSeen).
const (
	AuthBasic   = "client_secret_basic"
	AuthPost    = "client_secret_post"
	AuthNone    = "none"
	AuthDefault = "default"
	// AuthMixed is a request that presents a secret both ways (always refused).
	AuthMixed = "mixed"
)

type code struct {
	clientID, redirectURI, challenge string
	scopes                           []string
	expires                          time.Time
	used                             bool
	family                           int
	provider                         string
	consent                          *Consent // scripted, or nil
	resource                         string   // RFC 8707
}

type refresh struct {
	family   int
	live     bool
	scopes   []string
	provider string
	account  string
	resource string
}

type access struct {
	family   int
	expires  time.Time
	provider string
	account  string
	scopes   []string
	resource string
}

// Server is a running authorization server.
type Server struct {
	mu          sync.Mutex
	cfg         Config
	codes       map[string]*code
	refresh     map[string]*refresh
	access      map[string]*access
	revoked     map[int]bool
	families    int
	script      []Failure
	stats       Stats
	issued      int                  // the SequentialNames counter
	codesIssued int                  // the SequentialNames counter of codes
	answers     map[string][]Answer  // provider → scripted refresh answers
	consents    map[string][]Consent // provider → scripted consents
	// device.go
	devices     map[string]*deviceCode
	deviceUsers map[string][]DeviceUser // provider → scripted device users
	revokes     map[string][]Answer     // provider → scripted revocation answers
	authSeen    []string                // how each token request authenticated
	clients     map[string]*registered  // remote MCP: registered clients (mcp.go)
	// world.go: the catalog's endpoints played, the scripted outcomes of authorizations,
	// and whether nobody reads a provider's latest device code.
	routes         []route
	authorizations map[string][]Authorization
	away           map[string]bool
	// machine.go: client assertions' jti seen, the identity provider's signing key
	jtis   map[string]bool
	idpKey *ecdsa.PrivateKey

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
	if cfg.DeviceExpiresIn == 0 {
		cfg.DeviceExpiresIn = 900
	}
	if cfg.DeviceInterval == 0 {
		cfg.DeviceInterval = 5
	}
	idpKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // the system's randomness failed
	}
	return &Server{cfg: cfg, jtis: map[string]bool{}, idpKey: idpKey, codes: map[string]*code{}, refresh: map[string]*refresh{},
		access: map[string]*access{}, revoked: map[int]bool{}, answers: map[string][]Answer{},
		consents: map[string][]Consent{}, revokes: map[string][]Answer{}, clients: map[string]*registered{},
		devices: map[string]*deviceCode{}, deviceUsers: map[string][]DeviceUser{},
		authorizations: map[string][]Authorization{}, away: map[string]bool{}}
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

// RevocationURL is the token revocation endpoint (RFC 7009).
func (s *Server) RevocationURL() string { return s.base + "/revoke" }

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
	rt := s.token("rt", "")
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

// token names a new token of kind "at", "rt", "code" or "device" (a device code) for a
// provider, or "client" or "secret" (a registered client's id and secret).
func (s *Server) token(kind, provider string) string {
	if name, ok := map[string]string{"at": "access", "rt": "refresh", "code": "code", "device": "device"}[kind]; ok && s.cfg.SequentialNames {
		n := &s.issued
		if kind == "code" || kind == "device" {
			n = &s.codesIssued
		}
		*n++
		if provider != "" {
			name += "-" + provider
		}
		return fmt.Sprintf("%s-%04d", name, *n)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return s.cfg.TokenPrefix + "_" + kind + "_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// Handler serves /authorize, /token and /userinfo, and each provider's endpoints under
// /p/<provider>/ (see ProviderURL).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) { s.authorize(w, r, "") })
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) { s.tokenEndpoint(w, r, "") })
	mux.HandleFunc("/userinfo", func(w http.ResponseWriter, r *http.Request) { s.userinfo(w, r, "") })
	mux.HandleFunc("/revoke", func(w http.ResponseWriter, r *http.Request) { s.revoke(w, r, "") })
	mux.HandleFunc("/devicecode", func(w http.ResponseWriter, r *http.Request) { s.deviceAuthorization(w, r, "", "") })
	mux.HandleFunc("/device", s.verification)
	mux.HandleFunc("/p/", s.providerEndpoint)
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.serveMetadata)
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/idp/token", s.idpToken)
	mux.HandleFunc("/url/", s.catalogEndpoint)
	return mux
}

const (
	pageBadRequest = "<!doctype html><title>authserver</title><p>Invalid authorization request.</p>\n"
	pageSignIn     = "<!doctype html><title>authserver</title><p>Sign in.</p>\n"
)

func isLoopbackRedirect(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Fragment != "" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback() && u.Port() != ""
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request, provider string) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	known := s.knownClient(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if (s.cfg.ClientID != "" && q.Get("client_id") != s.cfg.ClientID) || q.Get("client_id") == "" || !isLoopbackRedirect(redirect) || !known {
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
	var consent *Consent
	if cq := s.consents[provider]; len(cq) > 0 {
		consent, s.consents[provider] = &cq[0], cq[1:]
	} else if a, ok := s.nextAuthorization(provider); ok {
		c := consentOf(a)
		consent = &c
	}
	if consent != nil && consent.Abandon {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(pageSignIn))
		return
	}
	switch {
	case consent != nil && consent.NoIss:
	case consent != nil && consent.Iss != nil:
		v.Set("iss", *consent.Iss)
	case s.cfg.Issuers[provider] != "":
		v.Set("iss", s.cfg.Issuers[provider])
	case s.cfg.Issuer != "":
		v.Set("iss", s.cfg.Issuer)
	}
	switch {
	case q.Get("response_type") != "code":
		v.Set("error", "unsupported_response_type")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		v.Set("error", "invalid_request")
	case s.cfg.Deny || (consent != nil && consent.Deny):
		v.Set("error", "access_denied")
		s.stats.Denials++
	case consent != nil && consent.Error != "" && consent.Status == 0:
		v.Set("error", consent.Error)
	default:
		scopes := strings.Fields(q.Get("scope"))
		if s.cfg.GrantedScopes != nil {
			scopes = slices.Clone(s.cfg.GrantedScopes)
		}
		if consent != nil && consent.Scopes != nil {
			scopes = slices.Clone(consent.Scopes)
		}
		c := s.token("code", provider)
		s.codes[c] = &code{clientID: q.Get("client_id"), redirectURI: redirect, challenge: q.Get("code_challenge"),
			scopes: scopes, expires: s.cfg.Now().Add(time.Minute), provider: provider, consent: consent,
			resource: q.Get("resource")}
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

// posted answers a request that is not a POST 405 (Allow: POST) and says whether it was one.
func posted(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return false
	}
	return true
}

// readForm reads a request's form, its body bounded to 64 KiB; the caller answers its error.
func readForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	return r.ParseForm()
}

func (s *Server) tokenEndpoint(w http.ResponseWriter, r *http.Request, provider string) {
	if !posted(w, r) {
		return
	}
	if err := readForm(w, r); err != nil {
		s.mu.Lock()
		s.stats.TokenRequests++
		s.oauthError(w, http.StatusBadRequest, "invalid_request")
		s.mu.Unlock()
		return
	}
	grant := r.PostForm.Get("grant_type")
	s.mu.Lock()
	s.stats.TokenRequests++
	switch grant {
	case "refresh_token":
		s.stats.RefreshRequests++
	case "authorization_code":
		s.stats.ExchangeRequests++
	}
	method, _, _ := clientAuthOf(r)
	s.authSeen = append(s.authSeen, method)
	f, scripted := s.nextFailure(grant)
	var answer *Answer
	if aq := s.answers[provider]; !scripted && grant == "refresh_token" && len(aq) > 0 {
		answer, s.answers[provider] = &aq[0], aq[1:]
		if rt := answer.RefreshToken; rt != "" && answer.Status < 300 && !answer.Drop && !answer.Hold {
			// The token a scripted answer issues is valid afterwards, in a family of its own.
			s.families++
			s.refresh[rt] = &refresh{family: s.families, live: true, provider: provider}
		}
	}
	s.mu.Unlock()
	if answer != nil {
		s.answer(w, r, *answer)
		return
	}
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
	if scripted && f.BeforeAnswer != nil {
		rec, out := httptest.NewRecorder(), w
		defer func() {
			s.mu.Unlock()
			f.BeforeAnswer()
			s.mu.Lock()
			maps.Copy(out.Header(), rec.Header())
			out.WriteHeader(rec.Code)
			_, _ = out.Write(rec.Body.Bytes())
		}()
		w = rec
	}
	id, ok := s.authenticate(r, provider)
	if ok {
		// A client registered here (remote MCP) must authenticate as it registered.
		method, _, secret := clientAuthOf(r)
		ok = s.clientAuthenticates(id, secret, method == AuthBasic)
	}
	if !ok {
		s.oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	switch grant {
	case "authorization_code":
		s.exchange(w, r, id, provider)
	case "refresh_token":
		s.refreshGrant(w, r, provider)
	case ClientCredentialsGrant, JWTBearerGrant:
		s.machineGrant(w, r, grant, method, provider)
	case DeviceGrant:
		if s.devicePoll(w, r, id, provider) {
			s.mu.Unlock()
			<-r.Context().Done() // no answer in time: the client gives up
			s.mu.Lock()
		}
	default:
		s.oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
	}
}

// clientAuthOf says how a request authenticates its client: the method (AuthBasic,
// AuthPost, AuthNone or AuthMixed), the client id and the secret. HTTP Basic credentials
// are form-encoded (RFC 6749 §2.3.1). The request's form must be parsed.
func clientAuthOf(r *http.Request) (method, id, secret string) {
	user, pass, basic := r.BasicAuth()
	if basic {
		if u, err := url.QueryUnescape(user); err == nil {
			user = u
		}
		if p, err := url.QueryUnescape(pass); err == nil {
			pass = p
		}
	}
	_, posted := r.PostForm["client_secret"]
	if _, jwt := r.PostForm["client_assertion"]; jwt {
		if basic || posted {
			return AuthMixed, user, pass
		}
		return AuthPrivateKeyJWT, r.PostForm.Get("client_id"), ""
	}
	switch {
	case basic && posted:
		return AuthMixed, user, pass
	case basic:
		return AuthBasic, user, pass
	case posted:
		return AuthPost, r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	return AuthNone, r.PostForm.Get("client_id"), ""
}

// authenticate checks a token or revocation request's client authentication against the
// configuration (ClientID, ClientSecret, ClientAuth); it answers the client id. Called
// with the lock held.
func (s *Server) authenticate(r *http.Request, provider string) (string, bool) {
	method, id, secret := clientAuthOf(r)
	if method == AuthPrivateKeyJWT {
		id, ok := s.clientAssertion(r)
		if !ok {
			s.stats.InvalidClients++
		}
		return id, ok
	}
	want := s.cfg.ClientAuth
	if m, ok := s.cfg.ProviderClientAuth[provider]; ok {
		want = m
	}
	ok := method != AuthMixed && (method == AuthNone) == (secret == "")
	switch want {
	case AuthBasic, AuthPost, AuthNone:
		ok = ok && method == want
	case AuthDefault:
		ok = ok && method != AuthPost
	}
	if (s.cfg.ClientID != "" && subtle.ConstantTimeCompare([]byte(id), []byte(s.cfg.ClientID)) != 1) ||
		(s.cfg.ClientSecret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.cfg.ClientSecret)) != 1) {
		ok = false
	}
	if !ok {
		s.stats.InvalidClients++
	}
	return id, ok
}

// ClientAuthSeen returns how every token request authenticated its client, in order
// (AuthBasic, AuthPost, AuthNone or AuthMixed).
func (s *Server) ClientAuthSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authSeen)
}

// ScriptRevoke queues answers for a provider's next revocation requests ("" for the root
// endpoint): Status and Error, or Drop; the token is then not revoked.
func (s *Server) ScriptRevoke(provider string, a ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revokes[provider] = append(s.revokes[provider], a...)
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (s *Server) exchange(w http.ResponseWriter, r *http.Request, clientID, provider string) {
	c, ok := s.codes[r.PostForm.Get("code")]
	switch {
	case !ok || c.provider != provider:
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
	if cs := c.consent; cs != nil && cs.Error != "" {
		s.oauthError(w, cs.Status, cs.Error)
		return
	}
	if cs := c.consent; cs != nil && cs.NotJSON {
		s.stats.CodeExchanges++
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(pageSignIn))
		return
	}
	s.families++
	c.family = s.families
	m := mint{family: c.family, scopes: c.scopes, provider: provider, account: s.cfg.Account, refresh: true,
		expiresIn: s.cfg.ExpiresIn, resource: c.resource}
	if cs := c.consent; cs != nil {
		m.consent(*cs)
	}
	s.stats.CodeExchanges++
	writeJSON(w, http.StatusOK, s.issue(m))
}

// mint is what one token answer issues: an access token, and a refresh token of the same
// family when refresh is set; names left empty are generated (the access token first).
type mint struct {
	family     int
	scopes     []string
	provider   string
	account    string
	refresh    bool
	access, rt string
	expiresIn  int64
	resource   string
}

// consent applies what a scripted consent decided about the tokens (scopes are applied
// where each grant chooses them).
func (m *mint) consent(cs Consent) {
	m.refresh = !cs.NoRefresh
	m.access, m.rt = cs.AccessToken, cs.RefreshToken
	if cs.Account != "" {
		m.account = cs.Account
	}
	if cs.ExpiresIn != 0 {
		m.expiresIn = cs.ExpiresIn
	}
}

func (s *Server) issue(m mint) tokenAnswer {
	if m.access == "" {
		m.access = s.token("at", m.provider)
	}
	if !m.refresh {
		m.rt = ""
	} else if m.rt == "" {
		m.rt = s.token("rt", m.provider)
	}
	s.access[m.access] = &access{family: m.family, provider: m.provider, account: m.account,
		expires: s.cfg.Now().Add(time.Duration(m.expiresIn) * time.Second), scopes: m.scopes, resource: m.resource}
	if m.refresh {
		s.refresh[m.rt] = &refresh{family: m.family, live: true, scopes: m.scopes, provider: m.provider, account: m.account,
			resource: m.resource}
	}
	return tokenAnswer{AccessToken: m.access, TokenType: "Bearer", ExpiresIn: m.expiresIn, RefreshToken: m.rt,
		Scope: strings.Join(m.scopes, " ")}
}

func (s *Server) refreshGrant(w http.ResponseWriter, r *http.Request, provider string) {
	presented := r.PostForm.Get("refresh_token")
	rt, ok := s.refresh[presented]
	switch {
	case !ok || s.revoked[rt.family] || rt.provider != provider:
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
	if !s.cfg.NoRotation {
		rt.live = false
	}
	s.stats.Refreshes++
	resource := rt.resource
	if r.PostForm.Get("resource") != "" {
		resource = r.PostForm.Get("resource")
	}
	s.stats.RefreshResources = append(s.stats.RefreshResources, r.PostForm.Get("resource"))
	writeJSON(w, http.StatusOK, s.issue(mint{family: rt.family, scopes: rt.scopes, provider: provider,
		account: rt.account, refresh: !s.cfg.NoRotation, expiresIn: s.cfg.ExpiresIn, resource: resource}))
}

func (s *Server) userinfo(w http.ResponseWriter, r *http.Request, provider string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	a, found := s.access[tok]
	if !ok || !found || s.revoked[a.family] || a.provider != provider || s.cfg.Now().After(a.expires) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	s.stats.Userinfo++
	account := a.account
	if account == "" {
		account = s.cfg.Account
	}
	writeJSON(w, http.StatusOK, map[string]any{"sub": fmt.Sprintf("user-%d", a.family), "email": account, "email_verified": true})
}

// revoke is the revocation endpoint (RFC 7009): a refresh token presented there is
// revoked with its family; anything else is answered 200 as the RFC asks.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request, provider string) {
	if !posted(w, r) {
		return
	}
	if err := readForm(w, r); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.stats.Revocations++
	var scripted *Answer
	if q := s.revokes[provider]; len(q) > 0 {
		scripted, s.revokes[provider] = &q[0], q[1:]
	}
	if scripted != nil {
		s.mu.Unlock()
		s.answer(w, r, *scripted)
		return
	}
	defer s.mu.Unlock()
	// RFC 7009 §2.1: the client authenticates as at the token endpoint.
	if _, ok := s.authenticate(r, provider); !ok {
		s.oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	if rt, ok := s.refresh[r.PostForm.Get("token")]; ok && rt.provider == provider {
		if !s.revoked[rt.family] {
			s.stats.RevokedTokens++
		}
		s.revoked[rt.family] = true
	}
	w.WriteHeader(http.StatusOK)
}

// ErrNotLoopback is returned by Start for a non-loopback address.
var ErrNotLoopback = errors.New("authserver: not a loopback address")
