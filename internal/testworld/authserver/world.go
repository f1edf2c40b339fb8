package authserver

// The server as the conformance corpus's authorization server (conformance/README.md): it
// plays each OAuth provider of a catalog at the catalog's own URLs, reached at
// /url/<scheme>/<host>/<path> (CatalogPath), and follows a scenario's script of the
// token_server (Script, Load): the refresh, revocation and authorization outcomes the
// scenario queues. The in-memory host (internal/testworld/memhost) serves its HTTP
// capability from this handler in process, the OS shell's corpus run reaches it over
// HTTP, and foreign shells' runners reach it over HTTP too, scripting it through the
// control API (control.go).

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/grantwire/grantwire/conformance"
)

// Provider is a catalog connector as the server plays it: the members of a catalog entry
// (catalog/README.md) that say where its endpoints are, which issuer it names in its
// authorization responses (RFC 9207), and how its clients authenticate. Entries of
// another type than oauth_pkce are not served.
type Provider struct {
	Type                    string `json:"type"`
	AuthorizationURL        string `json:"authorization_url,omitempty"`
	TokenURL                string `json:"token_url,omitempty"`
	UserinfoURL             string `json:"userinfo_url,omitempty"`
	RevocationURL           string `json:"revocation_url,omitempty"`
	DeviceAuthorizationURL  string `json:"device_authorization_url,omitempty"`
	Issuer                  string `json:"issuer,omitempty"`
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	ClientSecretRequired    bool   `json:"client_secret_required,omitempty"`
}

// UnmarshalJSON reads a catalog entry, leaving out the members the server has no use for
// (even under a decoder that refuses unknown members).
func (p *Provider) UnmarshalJSON(b []byte) error {
	type entry Provider
	var e entry
	err := json.Unmarshal(b, &e)
	*p = Provider(e)
	return err
}

// TypeOAuth is the catalog type of the providers the server plays.
const TypeOAuth = "oauth_pkce"

// ClientAuth is how the provider's clients must authenticate at its token and revocation
// endpoints: its token_endpoint_auth_method, else client_secret_basic when it requires a
// secret, else RFC 8414's default (AuthDefault).
func (p Provider) ClientAuth() string {
	switch {
	case p.TokenEndpointAuthMethod != "":
		return p.TokenEndpointAuthMethod
	case p.ClientSecretRequired:
		return AuthBasic
	}
	return AuthDefault
}

// route is where one of a provider's endpoints answers: the catalog's URL, a "{tenant}"
// in it matching any path segment.
type route struct {
	provider, endpoint string // endpoint: authorize, token, userinfo, revoke or devicecode
	re                 *regexp.Regexp
}

// ServeProviders makes the server play each provider at its catalog URLs (see Provider),
// naming itself as its issuer says and expecting its clients to authenticate as it says.
func (s *Server) ServeProviders(ps map[string]Provider) {
	s.mu.Lock()
	defer s.mu.Unlock()
	issuers, auth := maps.Clone(s.cfg.Issuers), maps.Clone(s.cfg.ProviderClientAuth)
	if issuers == nil {
		issuers = map[string]string{}
	}
	if auth == nil {
		auth = map[string]string{}
	}
	for _, id := range slices.Sorted(maps.Keys(ps)) {
		p := ps[id]
		if p.Type != TypeOAuth {
			continue
		}
		for endpoint, u := range map[string]string{"authorize": p.AuthorizationURL, "token": p.TokenURL,
			"userinfo": p.UserinfoURL, "revoke": p.RevocationURL, "devicecode": p.DeviceAuthorizationURL} {
			if u == "" {
				continue
			}
			pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(u), regexp.QuoteMeta("{tenant}"), "[^/]+") + "$"
			s.routes = append(s.routes, route{id, endpoint, regexp.MustCompile(pattern)})
		}
		if p.Issuer != "" {
			issuers[id] = p.Issuer
		}
		auth[id] = p.ClientAuth()
	}
	s.cfg.Issuers, s.cfg.ProviderClientAuth = issuers, auth
}

// CatalogPath is the path at which the server answers a catalog URL
// scheme://host/path?query: /url/scheme/host/path?query (the query, if any, follows).
func CatalogPath(u *url.URL) string {
	p := "/url/" + u.Scheme + "/" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

// Routes reports whether the server plays a provider endpoint at a catalog URL (query
// ignored).
func (s *Server) Routes(raw string) bool {
	provider, _ := s.route(strings.SplitN(raw, "?", 2)[0])
	return provider != ""
}

func (s *Server) route(u string) (provider, endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.routes {
		if r.re.MatchString(u) {
			return r.provider, r.endpoint
		}
	}
	return "", ""
}

// catalogEndpoint answers /url/<scheme>/<host>/<path> as the provider whose endpoint
// that URL is; a URL no provider answers gets no answer (the connection is closed).
func (s *Server) catalogEndpoint(w http.ResponseWriter, r *http.Request) {
	scheme, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/url/"), "/")
	host, path, _ := strings.Cut(rest, "/")
	origin := scheme + "://" + host
	provider, endpoint := s.route(origin + "/" + path)
	if !s.serveEndpoint(w, r, provider, endpoint, origin+"/device") {
		drop(w)
	}
}

// drop closes the connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// Authorization is a scripted outcome of a provider's next authorization, whichever flow
// it takes (the corpus's token_server.authorize entries). Status is "ok" (consent: tokens
// for Scopes, or the requested scopes), "denied" (the user refuses: Error, default
// access_denied), "error" (a code is issued, and its exchange fails with HTTPStatus,
// default 400, and Error, default server_error), "timeout" (nobody answers; with a
// device code: pending until it expires) or "interactive_required" (nobody is there: no
// browser, or nobody reads the device code). Iss is sent as the callback's iss instead of
// the provider's issuer, NoIss sends none; NoRefresh issues no refresh token; NotJSON
// answers the exchange with a page that is not JSON. Polls answer a device code's first
// polls, before the outcome: authorization_pending, slow_down, or timeout (no answer in
// time); Device shapes the device authorization answer.
//
// It is the corpus's own type (conformance.AuthorizeResult, the token_server.authorize
// entries), so that a scenario's script reaches the server as it is written.
type Authorization = conformance.AuthorizeResult

// DeviceAnswer shapes a device authorization answer (conformance.DeviceSpec): the code's
// lifetime and polling interval in seconds (the configuration's when zero), or a refusal
// (Error, with HTTPStatus, default 400).
type DeviceAnswer = conformance.DeviceSpec

// ScriptAuthorize queues outcomes for a provider's next authorizations, in order (it
// panics on a Status not listed at Authorization). A consent (ScriptConsent) or a device
// user (ScriptDevice) queued for the same provider goes first.
func (s *Server) ScriptAuthorize(provider string, a ...Authorization) {
	for _, x := range a {
		if err := checkAuthorization(x); err != nil {
			panic(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range a {
		x.Scopes, x.Polls = slices.Clone(x.Scopes), slices.Clone(x.Polls)
		s.authorizations[provider] = append(s.authorizations[provider], x)
	}
}

func checkAuthorization(a Authorization) error {
	if !slices.Contains([]string{"ok", "denied", "error", "timeout", "interactive_required"}, a.Status) {
		return fmt.Errorf("authserver: an authorization's status is ok, denied, error, timeout or interactive_required, not %q", a.Status)
	}
	return nil
}

// nextAuthorization pops the provider's next scripted outcome; s.mu is held.
func (s *Server) nextAuthorization(provider string) (Authorization, bool) {
	q := s.authorizations[provider]
	if len(q) == 0 {
		return Authorization{}, false
	}
	s.authorizations[provider] = q[1:]
	return q[0], true
}

// Browser is asked by a test world's browser before it opens an authorization: when the
// provider's next scripted outcome is that nobody answers ("timeout") or that there is no
// browser ("interactive_required"), it is used up and answered; otherwise "" (the
// authorization endpoint plays the rest).
func (s *Server) Browser(provider string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.authorizations[provider]; len(q) > 0 && (q[0].Status == "timeout" || q[0].Status == "interactive_required") {
		s.authorizations[provider] = q[1:]
		return q[0].Status
	}
	return ""
}

// Unattended reports whether nobody reads the provider's latest device code (its scripted
// outcome is interactive_required): a test world's prompt then shows it to nobody.
func (s *Server) Unattended(provider string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.away[provider]
}

// consentOf is what the user at the authorization endpoint does.
func consentOf(a Authorization) Consent {
	switch a.Status {
	case "ok":
		return Consent{Scopes: a.Scopes, AccessToken: a.AccessToken, RefreshToken: a.RefreshToken, ExpiresIn: a.ExpiresIn,
			Account: a.Account, Iss: a.Iss, NoIss: a.NoIss, NoRefresh: a.NoRefresh, NotJSON: a.NotJSON}
	case "denied":
		c := Consent{Deny: true, Iss: a.Iss, NoIss: a.NoIss}
		if a.Error != "" && a.Error != "access_denied" {
			c.Deny, c.Error = false, a.Error
		}
		return c
	case "error":
		c := Consent{Error: a.Error, Status: a.HTTPStatus, Iss: a.Iss, NoIss: a.NoIss}
		if c.Error == "" {
			c.Error = "server_error"
		}
		if c.Status == 0 {
			c.Status = http.StatusBadRequest
		}
		return c
	}
	return Consent{Abandon: true}
}

// deviceUserOf is what the user of a device code does.
func deviceUserOf(a Authorization) DeviceUser {
	u := DeviceUser{Decision: DeviceApprove, Polls: a.Polls, Consent: Consent{Scopes: a.Scopes, AccessToken: a.AccessToken,
		RefreshToken: a.RefreshToken, ExpiresIn: a.ExpiresIn, Account: a.Account, NoRefresh: a.NoRefresh}}
	switch a.Status {
	case "denied":
		u.Decision, u.Consent = DeviceDeny, Consent{Error: a.Error}
	case "timeout", "interactive_required":
		u.Decision = DeviceExpire
	case "error":
		u.Consent = Consent{Error: a.Error, Status: a.HTTPStatus}
	}
	if d := a.Device; d != nil {
		u.ExpiresIn, u.Interval, u.Error, u.Status = d.ExpiresIn, d.Interval, d.Error, d.HTTPStatus
	}
	return u
}

// Reply is a scripted answer of the token endpoint to a refresh, or of the revocation
// endpoint (the corpus's token_server.refresh and .revoke entries). Status 0 is no
// answer at all: with Error "timeout" the server answers nothing until the client gives
// up, otherwise it closes the connection. NotJSON answers an HTML page; Scope, when
// given, is the answer's scope member; a RefreshToken it issues is valid afterwards.
//
// During marks a refresh answer during which another process acts. Over the control API
// it is a string the runner chose: the answer carries it back in the Grantwire-During
// header (DuringHeader), and the runner performs that action before it hands the answer
// to its host. In Go, Do runs while the request is in flight instead.
type Reply struct {
	conformance.TokenAnswer
	During string `json:"during,omitempty"`
	Do     func() `json:"-"`
}

// DuringHeader names the header of an answer during which the runner acts (Reply.During).
const DuringHeader = "Grantwire-During"

func (r Reply) answer() Answer {
	a := Answer{Status: r.Status, Error: r.Error, AccessToken: r.AccessToken, RefreshToken: r.RefreshToken,
		ExpiresIn: r.ExpiresIn, Scope: r.Scope, NotJSON: r.NotJSON, During: r.Do, DuringID: r.During}
	if r.Status == 0 {
		a.Hold, a.Drop = r.Error == "timeout", r.Error != "timeout"
	}
	return a
}

// Script is one piece of a scenario's script of the server (the corpus's token_server),
// applied by Load in this order: the catalog's providers to play (Providers, see
// ServeProviders), rotation (Rotate: every refresh retires the refresh token presented
// and issues a new one; default true) and the access tokens' lifetime (ExpiresIn,
// seconds; 0 keeps it), how a provider's clients must authenticate when it differs from
// the catalog (ClientAuth: client_secret_basic, client_secret_post, none, or "" for RFC
// 8414's default), the answers of the revocation endpoint (Revoke), refresh tokens the
// server accepts as a past authorization would have issued them (Issued), the answers to
// the next refreshes (Refresh) and the outcomes of the next authorizations (Authorize).
// Lists are queued after what is already queued for the provider.
type Script struct {
	Providers  map[string]Provider        `json:"providers,omitempty"`
	Rotate     *bool                      `json:"rotate,omitempty"`
	ExpiresIn  int64                      `json:"expires_in,omitempty"`
	ClientAuth map[string]string          `json:"client_auth,omitempty"`
	Revoke     map[string][]Reply         `json:"revoke,omitempty"`
	Issued     map[string][]string        `json:"issued,omitempty"`
	Refresh    map[string][]Reply         `json:"refresh,omitempty"`
	Authorize  map[string][]Authorization `json:"authorize,omitempty"`
}

// Load applies a piece of a scenario's script (see Script), or nothing when an outcome's
// status is unknown.
func (s *Server) Load(sc Script) error {
	for _, q := range sc.Authorize {
		for _, a := range q {
			if err := checkAuthorization(a); err != nil {
				return err
			}
		}
	}
	if sc.Providers != nil {
		s.ServeProviders(sc.Providers)
	}
	s.Configure(func(c *Config) {
		if sc.Rotate != nil {
			c.NoRotation = !*sc.Rotate
		}
		if sc.ExpiresIn != 0 {
			c.ExpiresIn = sc.ExpiresIn
		}
		if len(sc.ClientAuth) > 0 {
			c.ProviderClientAuth = maps.Clone(c.ProviderClientAuth)
			if c.ProviderClientAuth == nil {
				c.ProviderClientAuth = map[string]string{}
			}
			for p, m := range sc.ClientAuth {
				if m == "" {
					m = AuthDefault
				}
				c.ProviderClientAuth[p] = m
			}
		}
	})
	for _, p := range slices.Sorted(maps.Keys(sc.Revoke)) {
		for _, r := range sc.Revoke[p] {
			s.ScriptRevoke(p, r.answer())
		}
	}
	for _, p := range slices.Sorted(maps.Keys(sc.Issued)) {
		for _, rt := range sc.Issued[p] {
			s.IssueToken(p, rt, nil)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(sc.Refresh)) {
		for _, r := range sc.Refresh[p] {
			s.ScriptRefresh(p, r.answer())
		}
	}
	for _, p := range slices.Sorted(maps.Keys(sc.Authorize)) {
		s.ScriptAuthorize(p, sc.Authorize[p]...)
	}
	return nil
}

// NewWorld returns a server as the corpus's scenarios expect it (conformance's
// TokenServerSpec), telling the time by now: deterministic names (SequentialNames), a
// reused refresh token refused without revoking its family, and a device code nothing
// scripted approved at its first poll.
func NewWorld(now func() time.Time) *Server {
	return New(Config{SequentialNames: true, KeepFamilyOnReuse: true, DeviceApprove: true, Now: now})
}
