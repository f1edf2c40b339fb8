package authserver

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// Several providers on one server: /p/<provider>/…/authorize, /p/<provider>/…/token,
// /p/<provider>/…/userinfo, …/revoke, …/devicecode and …/device. Path segments between the provider and the endpoint (a tenant,
// say) are accepted and ignored. A token is bound to the provider that issued it: another
// provider's token endpoint answers invalid_grant, its userinfo endpoint 401.

var providerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ProviderURL is the base of a provider's endpoints: append "/authorize", "/token" or
// "/userinfo" (optionally after more path segments, such as a tenant).
func (s *Server) ProviderURL(provider string) string { return s.base + "/p/" + provider }

func (s *Server) providerEndpoint(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/p/"), "/")
	if len(parts) < 2 || !providerName.MatchString(parts[0]) {
		http.NotFound(w, r)
		return
	}
	switch endpoint := parts[len(parts)-1]; {
	case endpoint == "device":
		s.verification(w, r)
	case !s.serveEndpoint(w, r, parts[0], endpoint, ""):
		http.NotFound(w, r)
	}
}

// serveEndpoint answers a provider's endpoint (authorize, token, userinfo, revoke,
// devicecode, whose verification URI is verification, or the server's own when ""); it
// reports false, answering nothing, for another endpoint.
func (s *Server) serveEndpoint(w http.ResponseWriter, r *http.Request, provider, endpoint, verification string) bool {
	switch endpoint {
	case "authorize":
		s.authorize(w, r, provider)
	case "token":
		s.tokenEndpoint(w, r, provider)
	case "userinfo":
		s.userinfo(w, r, provider)
	case "revoke":
		s.revoke(w, r, provider)
	case "devicecode":
		s.deviceAuthorization(w, r, provider, verification)
	default:
		return false
	}
	return true
}

// IssueToken makes refreshToken a live refresh token of provider ("" for the root
// endpoints) in a new family, as a past authorization would have; a token of that name
// is replaced.
func (s *Server) IssueToken(provider, refreshToken string, scopes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.families++
	s.refresh[refreshToken] = &refresh{family: s.families, live: true, scopes: slices.Clone(scopes), provider: provider}
}

// Answer scripts the whole answer to one upcoming refresh_token request of a provider. It
// is sent as it is: what was presented is not checked, and the only state it changes is
// that the refresh token it names is valid afterwards. A Failure queued with Script for
// the same request is answered first.
type Answer struct {
	// Status is the HTTP status (default 200, or 400 with an Error).
	Status int
	// Error is the OAuth error code; the body is then {"error": Error}.
	Error string
	// AccessToken, RefreshToken and ExpiresIn (omitted when empty or zero) make the body
	// of a token answer.
	AccessToken  string
	RefreshToken string
	ExpiresIn    int64
	// Scope, when set, is the answer's scope member.
	Scope *string
	// NotJSON answers an HTML page with the status; Drop closes the connection without
	// an answer, and Hold answers nothing until the client gives up (Status is then
	// ignored).
	NotJSON bool
	Drop    bool
	Hold    bool
	// During, when set, runs while the request is in flight, before the answer is
	// written (outside the server's lock): another process acts meanwhile.
	During func()
	// DuringID, when set, is sent back in the Grantwire-During header: a runner on the
	// other side of the HTTP connection acts then, before it hands the answer on (see
	// Script).
	DuringID string
}

// ScriptRefresh queues answers for a provider's next refresh_token requests, in order.
func (s *Server) ScriptRefresh(provider string, a ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[provider] = append(s.answers[provider], a...)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, a Answer) {
	if a.During != nil {
		a.During()
	}
	if a.DuringID != "" {
		w.Header().Set(DuringHeader, a.DuringID)
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
		if a.Error != "" {
			status = http.StatusBadRequest
		}
	}
	switch {
	case a.Hold:
		<-r.Context().Done()
		return
	case a.Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case a.NotJSON:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(pageSignIn))
		return
	case a.Error != "":
		s.mu.Lock()
		s.oauthError(w, status, a.Error)
		s.mu.Unlock()
		return
	}
	body := map[string]any{"token_type": "Bearer"}
	if a.AccessToken != "" {
		body["access_token"] = a.AccessToken
	}
	if a.RefreshToken != "" {
		body["refresh_token"] = a.RefreshToken
	}
	if a.ExpiresIn != 0 {
		body["expires_in"] = a.ExpiresIn
	}
	if a.Scope != nil {
		body["scope"] = *a.Scope
	}
	writeJSON(w, status, body)
}

// Consent scripts the outcome of a provider's next authorization: what the user at the
// authorization endpoint decides, and what the code exchange then answers.
type Consent struct {
	// Deny answers error=access_denied.
	Deny bool
	// Error without Status: the authorization endpoint redirects back with this error.
	// Error with Status: a code is issued, and its exchange fails with this HTTP status
	// and OAuth error.
	Error  string
	Status int
	// Scopes are the scopes granted (nil: the configured or requested ones).
	Scopes []string
	// AccessToken and RefreshToken name the issued tokens (empty: generated); the refresh
	// token is live afterwards.
	AccessToken  string
	RefreshToken string
	// ExpiresIn is the access token's lifetime (0: the configured one).
	ExpiresIn int64
	// Account is the email userinfo answers for the issued access token (empty: the
	// configured account).
	Account string
	// Iss, when set, is sent as the authorization response's iss parameter (RFC 9207),
	// instead of the configured Issuer; NoIss sends none at all.
	Iss   *string
	NoIss bool
	// NoRefresh: the code exchange issues no refresh token.
	NoRefresh bool
	// NotJSON: the code exchange answers 200 with a page that is not JSON.
	NotJSON bool
	// Abandon: the user never finishes; the authorization endpoint shows its page and
	// redirects nowhere.
	Abandon bool
}

// ScriptConsent queues outcomes for a provider's next authorizations, in order.
func (s *Server) ScriptConsent(provider string, c ...Consent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range c {
		x.Scopes = slices.Clone(x.Scopes)
		s.consents[provider] = append(s.consents[provider], x)
	}
}
