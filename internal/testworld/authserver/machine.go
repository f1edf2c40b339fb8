package authserver

// Machine grants (issue 21 §1): the client credentials grant (RFC 6749 §4.4, SEP-1046)
// with client_secret_basic/post or private_key_jwt (RFC 7523 §2.2), the JWT bearer grant
// (RFC 7523 §2.1, SEP-1933), and, as an identity provider on /idp/token, the token
// exchange (RFC 8693) of an ID token for an ID-JAG (SEP-990) that the JWT bearer grant
// then takes. Just enough to test grantwire's side against: keys are the test's, JWTs
// are checked for their signature (ES256, RS256), iss/sub, aud and exp.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
)

// Grant types and token types of the machine grants.
const (
	ClientCredentialsGrant = "client_credentials"
	JWTBearerGrant         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	TokenExchangeGrant     = "urn:ietf:params:oauth:grant-type:token-exchange"
	clientAssertionType    = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	idJAGType              = "urn:ietf:params:oauth:token-type:id-jag"
	idTokenType            = "urn:ietf:params:oauth:token-type:id_token"
	// AuthPrivateKeyJWT is a request that authenticates with a client assertion
	// (ClientAuthSeen).
	AuthPrivateKeyJWT = "private_key_jwt"
)

// machineGrants are the grant types the metadata adds for the configuration.
func (s *Server) machineGrants() []string {
	var g []string
	if s.cfg.ClientCredentials {
		g = append(g, ClientCredentialsGrant)
	}
	if s.cfg.AssertionKey != nil {
		g = append(g, JWTBearerGrant)
	}
	return g
}

// SignJWT signs claims with an EC P-256 (ES256) or RSA (RS256) key: what a workload's
// issuer or an identity provider gives a test.
func SignJWT(key crypto.Signer, typ string, claims map[string]any) (string, error) {
	alg := "RS256"
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		alg = "ES256"
	}
	h, _ := json.Marshal(map[string]any{"alg": alg, "typ": typ})
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	d := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, d[:])
		if err != nil {
			return "", err
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:]); err != nil {
			return "", err
		}
	default:
		return "", errors.New("authserver: an EC P-256 or RSA key")
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// verifyJWT checks a compact JWS's signature with pub (ES256 on P-256, RS256: VerifyJWS)
// and its exp against the server's clock; it answers the header and the claims.
func (s *Server) verifyJWT(tok string, pub crypto.PublicKey) (map[string]any, map[string]any, error) {
	h, c, err := VerifyJWS(tok, pub)
	if err != nil {
		return nil, nil, err
	}
	if h["alg"] != "ES256" && h["alg"] != "RS256" {
		return nil, nil, errors.New("the server takes ES256 and RS256 only")
	}
	exp, ok := c["exp"].(float64)
	if !ok || float64(s.cfg.Now().Unix()) >= exp {
		return nil, nil, errors.New("expired or no exp")
	}
	return h, c, nil
}

// audIs says whether a JWT's aud is (or lists) one of want.
func audIs(c map[string]any, want ...string) bool {
	switch a := c["aud"].(type) {
	case string:
		return slices.Contains(want, a)
	case []any:
		for _, v := range a {
			if s, ok := v.(string); ok && slices.Contains(want, s) {
				return true
			}
		}
	}
	return false
}

// clientAssertion authenticates a private_key_jwt request (RFC 7523 §3): signed by
// ClientKey, iss and sub the client id, aud the issuer or the token endpoint. Called with
// the lock held.
func (s *Server) clientAssertion(r *http.Request) (string, bool) {
	if s.cfg.ClientKey == nil || r.PostForm.Get("client_assertion_type") != clientAssertionType {
		return "", false
	}
	_, c, err := s.verifyJWT(r.PostForm.Get("client_assertion"), s.cfg.ClientKey)
	if err != nil {
		return "", false
	}
	iss, _ := c["iss"].(string)
	if iss == "" || c["sub"] != iss || !audIs(c, s.issuer(), s.base+"/token") ||
		(s.cfg.ClientID != "" && iss != s.cfg.ClientID) {
		return "", false
	}
	if id := r.PostForm.Get("client_id"); id != "" && id != iss {
		return "", false
	}
	if jti, _ := c["jti"].(string); jti == "" || s.jtis[jti] {
		return "", false // RFC 7523 §3: a jti seen before is replayed
	} else {
		s.jtis[jti] = true
	}
	return iss, true
}

// machineGrant answers a client_credentials or jwt-bearer grant: an access token for the
// scopes and resource asked for, no refresh token. Called with the lock held.
func (s *Server) machineGrant(w http.ResponseWriter, r *http.Request, grant, method, provider string) {
	switch grant {
	case ClientCredentialsGrant:
		if !s.cfg.ClientCredentials {
			s.oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
			return
		}
		if method == AuthNone {
			s.stats.InvalidClients++
			s.oauthError(w, http.StatusUnauthorized, "invalid_client") // a public client has no credentials
			return
		}
	case JWTBearerGrant:
		if s.cfg.AssertionKey == nil {
			s.oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
			return
		}
		a := r.PostForm.Get("assertion")
		key := s.cfg.AssertionKey
		if h, _, err := s.verifyJWT(a, s.idpKey.Public()); err == nil && h["typ"] == "oauth-id-jag+jwt" {
			key = s.idpKey.Public() // an ID-JAG this server's identity provider issued
		}
		_, c, err := s.verifyJWT(a, key)
		if err != nil || !audIs(c, s.issuer(), s.base+"/token") {
			s.stats.InvalidGrants++
			s.oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		if res, _ := c["resource"].(string); res != "" && res != r.PostForm.Get("resource") {
			s.stats.InvalidGrants++
			s.oauthError(w, http.StatusBadRequest, "invalid_target")
			return
		}
		s.stats.JWTBearerGrants++
	}
	scopes := strings.Fields(r.PostForm.Get("scope"))
	if s.cfg.GrantedScopes != nil {
		scopes = s.cfg.GrantedScopes
	}
	s.families++
	s.stats.MachineGrants++
	writeJSON(w, http.StatusOK, s.issue(mint{family: s.families, scopes: scopes, provider: provider,
		account: s.cfg.Account, expiresIn: s.cfg.ExpiresIn, resource: r.PostForm.Get("resource")}))
}

// idpToken is the identity provider's token endpoint: the token exchange of an ID token
// (signed by AssertionKey, aud IDPClientID when set) for an ID-JAG whose audience is the
// authorization server asked for (SEP-990).
func (s *Server) idpToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.TokenExchanges++
	f := r.PostForm
	if f.Get("grant_type") != TokenExchangeGrant || f.Get("requested_token_type") != idJAGType ||
		f.Get("subject_token_type") != idTokenType || s.cfg.AssertionKey == nil {
		s.oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	_, c, err := s.verifyJWT(f.Get("subject_token"), s.cfg.AssertionKey)
	if err != nil || (s.cfg.IDPClientID != "" && (f.Get("client_id") != s.cfg.IDPClientID || !audIs(c, s.cfg.IDPClientID))) {
		s.oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	now := s.cfg.Now().Unix()
	jag, err := SignJWT(s.idpKey, "oauth-id-jag+jwt", map[string]any{
		"iss": s.base + "/idp", "sub": c["sub"], "aud": f.Get("audience"), "resource": f.Get("resource"),
		"client_id": s.cfg.ClientID, "scope": f.Get("scope"), "iat": now, "exp": now + 300, "jti": s.token("jag", ""),
	})
	if err != nil {
		s.oauthError(w, http.StatusInternalServerError, "server_error")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": jag, "issued_token_type": idJAGType, "token_type": "N_A", "expires_in": 300,
	})
}

// IDPTokenURL is the identity provider's token endpoint (the token exchange, RFC 8693).
func (s *Server) IDPTokenURL() string { return s.base + "/idp/token" }
