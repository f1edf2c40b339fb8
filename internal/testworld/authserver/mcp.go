package authserver

// What a remote MCP server's authorization server publishes and accepts, for grantwire's
// remote MCP client (docs/behaviour.md#remote-mcp-servers): authorization server metadata
// (RFC 8414) at /.well-known/oauth-authorization-server, dynamic client registration
// (RFC 7591) at /register, client ID metadata documents (an https client_id the server
// fetches and checks), a token verifier for resource servers (in process, as an
// introspection endpoint would answer), and protected resource metadata (RFC 9728) for the
// resource server to publish. Registered clients are checked at /authorize and /token.

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Metadata is the server's authorization server metadata (RFC 8414 §2), as served.
func (s *Server) Metadata() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metadataLocked()
}

func (s *Server) issuer() string {
	if s.cfg.Issuer != "" {
		return s.cfg.Issuer
	}
	return s.base
}

func (s *Server) metadataLocked() map[string]any {
	m := map[string]any{
		"issuer":                                         s.issuer(),
		"authorization_endpoint":                         s.base + "/authorize",
		"token_endpoint":                                 s.base + "/token",
		"revocation_endpoint":                            s.base + "/revoke",
		"registration_endpoint":                          s.base + "/register",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post"},
		"client_id_metadata_document_supported":          s.cfg.CIMDClient != nil,
		"authorization_response_iss_parameter_supported": s.cfg.Issuer != "",
	}
	if g := s.machineGrants(); g != nil {
		m["grant_types_supported"] = append(m["grant_types_supported"].([]string), g...)
	}
	if s.cfg.ClientKey != nil {
		m["token_endpoint_auth_methods_supported"] = append(m["token_endpoint_auth_methods_supported"].([]string), AuthPrivateKeyJWT)
		m["token_endpoint_auth_signing_alg_values_supported"] = []string{"ES256", "RS256"}
	}
	if s.cfg.ScopesSupported != nil {
		m["scopes_supported"] = s.cfg.ScopesSupported
	}
	if s.cfg.NoRegistration {
		delete(m, "registration_endpoint")
	}
	for k, v := range s.cfg.MetadataOverride {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	m := s.metadataLocked()
	s.stats.MetadataRequests++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, m)
}

// registered is one client registered dynamically or described by a metadata document.
type registered struct {
	secret       string
	redirectURIs []string
	authMethod   string
}

// redirectAllowed: RFC 8252 §7.3 — a loopback IP redirect URI matches a registered one
// whatever its port; anything else must match exactly.
func (c *registered) redirectAllowed(redirect string) bool {
	for _, r := range c.redirectURIs {
		if r == redirect {
			return true
		}
		a, err1 := url.Parse(r)
		b, err2 := url.Parse(redirect)
		if err1 == nil && err2 == nil && isLoopbackRedirect(redirect) && a.Scheme == b.Scheme &&
			a.Hostname() == b.Hostname() && a.Path == b.Path && a.RawQuery == b.RawQuery {
			return true
		}
	}
	return false
}

// register is the dynamic client registration endpoint (RFC 7591): a native client with
// loopback redirect URIs gets a client id (and a secret unless it asked for none).
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if !posted(w, r) {
		return
	}
	var req struct {
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		ApplicationType         string   `json:"application_type"`
		GrantTypes              []string `json:"grant_types"`
		ClientName              string   `json:"client_name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Registrations++
	if len(req.RedirectURIs) == 0 || slices.ContainsFunc(req.RedirectURIs, func(u string) bool { return !isLoopbackRedirect(u) }) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri"})
		return
	}
	if s.cfg.RegistrationAnswer != nil {
		writeJSON(w, http.StatusCreated, s.cfg.RegistrationAnswer)
		return
	}
	method := req.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic"
	}
	id := s.token("client", "")
	c := &registered{redirectURIs: slices.Clone(req.RedirectURIs), authMethod: method}
	answer := map[string]any{
		"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": method,
		"grant_types": req.GrantTypes, "application_type": req.ApplicationType, "client_name": req.ClientName,
		"client_id_issued_at": s.cfg.Now().Unix(),
	}
	if method != "none" {
		c.secret = s.token("secret", "")
		answer["client_secret"] = c.secret
		answer["client_secret_expires_at"] = 0
	}
	s.clients[id] = c
	writeJSON(w, http.StatusCreated, answer)
}

// clientFor returns the registered client of an id, fetching a client ID metadata
// document for an https id. Called without s.mu held.
func (s *Server) clientFor(ctx context.Context, id string) (*registered, bool) {
	s.mu.Lock()
	c, ok := s.clients[id]
	hc := s.cfg.CIMDClient
	s.mu.Unlock()
	if ok || hc == nil || !strings.HasPrefix(id, "https://") {
		return c, ok
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&doc) != nil || doc.ClientID != id {
		return nil, false
	}
	c = &registered{redirectURIs: doc.RedirectURIs, authMethod: "none"}
	s.mu.Lock()
	s.clients[id] = c
	s.stats.MetadataDocuments++
	s.mu.Unlock()
	return c, true
}

// knownClient checks an /authorize request's client against the registrations (when the
// server has any rules for clients: RequireRegistration or a metadata document client).
func (s *Server) knownClient(r *http.Request) bool {
	s.mu.Lock()
	require := s.cfg.RequireRegistration
	s.mu.Unlock()
	id := r.URL.Query().Get("client_id")
	if !require && !strings.HasPrefix(id, "https://") {
		return true
	}
	c, ok := s.clientFor(r.Context(), id)
	return ok && c.redirectAllowed(r.URL.Query().Get("redirect_uri"))
}

// clientAuthenticates checks a token request's client against its registration.
func (s *Server) clientAuthenticates(id, secret string, basic bool) bool {
	c, ok := s.clients[id]
	if !ok {
		return !s.cfg.RequireRegistration
	}
	switch c.authMethod {
	case "none":
		return !basic && secret == ""
	case "client_secret_basic":
		return basic && subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
	default:
		return !basic && subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
	}
}

// Clients returns how many clients are registered (dynamically or by a metadata document).
func (s *Server) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// TokenInfo is what a resource server learns about an access token.
type TokenInfo struct {
	Scopes  []string
	Expires time.Time
	// Resource is the resource indicator (RFC 8707) the token was issued for.
	Resource string
}

// ErrInvalidToken: the token is unknown, expired or revoked.
var ErrInvalidToken = errors.New("authserver: invalid token")

// Verify answers what an introspection endpoint (RFC 7662) would: the scopes, expiry and
// resource of a live access token issued by this server.
func (s *Server) Verify(token string) (TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.access[token]
	if !ok || s.revoked[a.family] || s.cfg.Now().After(a.expires) {
		return TokenInfo{}, ErrInvalidToken
	}
	return TokenInfo{Scopes: slices.Clone(a.scopes), Expires: a.expires, Resource: a.resource}, nil
}

// RevokeAll revokes every token issued so far (an administrator pulling access).
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i <= s.families; i++ {
		s.revoked[i] = true
	}
}

// ProtectedResourceMetadata is the RFC 9728 document a resource server at resource
// publishes naming this server as its authorization server.
func (s *Server) ProtectedResourceMetadata(resource string, scopes []string) map[string]any {
	m := map[string]any{
		"resource":                 resource,
		"authorization_servers":    []string{s.issuer()},
		"bearer_methods_supported": []string{"header"},
	}
	if scopes != nil {
		m["scopes_supported"] = scopes
	}
	return m
}

// PRMHandler serves a protected resource metadata document (RFC 9728 §3).
func PRMHandler(doc map[string]any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		writeJSON(w, http.StatusOK, doc)
	})
}
