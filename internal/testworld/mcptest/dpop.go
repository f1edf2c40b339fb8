package mcptest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// DPoP (RFC 9449 §7) in front of the SDK's bearer middleware, when Options.DPoP: a
// request with `Authorization: DPoP <token>` must carry one DPoP proof that verifies with
// its own public jwk (ES256), for this method and URL (htu without query), with ath the
// token's hash, iat within 300 s, a jti never seen, and the server's nonce when
// Options.DPoPNonce is set (else 401 use_dpop_nonce with DPoP-Nonce); the token must be
// bound to that key (Token.JKT, the cnf.jkt). A bearer-scheme token is refused (a
// DPoP-bound token sent as a bearer token is a downgrade). Then the request goes on as
// `Authorization: Bearer <token>`. A request without Authorization passes (the SDK
// middleware answers its 401).
type dpopGuard struct {
	o       Options
	jtis    sync.Map
	proofs  atomic.Int64
	nonces  atomic.Int64
	refused atomic.Int64
}

func (g *dpopGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authz := r.Header.Get("Authorization")
		if authz == "" {
			next.ServeHTTP(w, r)
			return
		}
		tok, ok := strings.CutPrefix(authz, "DPoP ")
		if !ok {
			g.refuse(w, `DPoP error="invalid_token", error_description="a DPoP-bound token needs the DPoP scheme"`, "")
			return
		}
		proofs := r.Header.Values("DPoP")
		if len(proofs) != 1 {
			g.refuse(w, `DPoP error="invalid_dpop_proof"`, "")
			return
		}
		claims, jkt, err := verifyProof(proofs[0])
		if err != nil {
			g.refuse(w, `DPoP error="invalid_dpop_proof"`, "")
			return
		}
		sum := sha256.Sum256([]byte(tok))
		htu := "http://" + r.Host + r.URL.Path
		iat, _ := claims["iat"].(float64)
		jti, _ := claims["jti"].(string)
		if claims["htm"] != r.Method || claims["htu"] != htu || claims["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) ||
			jti == "" || time.Since(time.Unix(int64(iat), 0)).Abs() > 300*time.Second {
			g.refuse(w, `DPoP error="invalid_dpop_proof"`, "")
			return
		}
		if _, seen := g.jtis.LoadOrStore(jti, true); seen {
			g.refuse(w, `DPoP error="invalid_dpop_proof", error_description="jti reused"`, "")
			return
		}
		if g.o.DPoPNonce != "" && claims["nonce"] != g.o.DPoPNonce {
			g.nonces.Add(1)
			g.refuse(w, `DPoP error="use_dpop_nonce"`, g.o.DPoPNonce)
			return
		}
		t, err := g.o.Verify(tok)
		if err != nil || t.JKT != jkt {
			g.refuse(w, `DPoP error="invalid_token"`, "")
			return
		}
		g.proofs.Add(1)
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Del("DPoP")
		next.ServeHTTP(w, r)
	})
}

func (g *dpopGuard) refuse(w http.ResponseWriter, challenge, nonce string) {
	g.refused.Add(1)
	w.Header().Set("WWW-Authenticate", challenge)
	if nonce != "" {
		w.Header().Set("DPoP-Nonce", nonce)
	}
	http.Error(w, "unauthorized", http.StatusUnauthorized)
}

// verifyProof checks a proof's header (typ dpop+jwt, a public P-256 jwk) and its ES256
// signature (authserver.VerifyJWS), and returns its claims and the jwk's RFC 7638 thumbprint.
func verifyProof(jws string) (map[string]any, string, error) {
	hb, err := base64.RawURLEncoding.DecodeString(strings.SplitN(jws, ".", 2)[0])
	if err != nil {
		return nil, "", err
	}
	var hdr struct {
		Typ string
		JWK map[string]any
	}
	if err := json.Unmarshal(hb, &hdr); err != nil {
		return nil, "", err
	}
	pub, err := authserver.PublicJWK(hdr.JWK)
	if err != nil || hdr.Typ != "dpop+jwt" {
		return nil, "", errors.New("not an ES256 DPoP proof with a public jwk")
	}
	_, claims, err := authserver.VerifyJWS(jws, pub)
	if err != nil {
		return nil, "", err
	}
	tb, _ := json.Marshal(map[string]any{"crv": hdr.JWK["crv"], "kty": hdr.JWK["kty"], "x": hdr.JWK["x"], "y": hdr.JWK["y"]})
	th := sha256.Sum256(tb)
	return claims, base64.RawURLEncoding.EncodeToString(th[:]), nil
}

// DPoPProofs counts the requests whose DPoP proof and binding verified; DPoPNonces the
// requests refused for want of the server's nonce.
func (s *Server) DPoPProofs() int64 { return s.dpop.proofs.Load() }
func (s *Server) DPoPNonces() int64 { return s.dpop.nonces.Load() }
