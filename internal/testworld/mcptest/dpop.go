package mcptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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

// verifyProof checks a proof's header (typ dpop+jwt, ES256, a public P-256 jwk) and
// signature, and returns its claims and the jwk's RFC 7638 thumbprint.
func verifyProof(jws string) (map[string]any, string, error) {
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return nil, "", errors.New("not a JWS")
	}
	var hdr struct {
		Typ, Alg string
		JWK      map[string]any
	}
	var claims map[string]any
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, "", err
	}
	if err := errors.Join(json.Unmarshal(hb, &hdr), json.Unmarshal(cb, &claims)); err != nil {
		return nil, "", err
	}
	if hdr.Typ != "dpop+jwt" || hdr.Alg != "ES256" || hdr.JWK["kty"] != "EC" || hdr.JWK["crv"] != "P-256" || hdr.JWK["d"] != nil || len(sig) != 64 {
		return nil, "", errors.New("not an ES256 DPoP proof with a public jwk")
	}
	x, _ := base64.RawURLEncoding.DecodeString(hdr.JWK["x"].(string))
	y, _ := base64.RawURLEncoding.DecodeString(hdr.JWK["y"].(string))
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, "", errors.New("the proof's signature does not verify")
	}
	tb, _ := json.Marshal(map[string]any{"crv": hdr.JWK["crv"], "kty": hdr.JWK["kty"], "x": hdr.JWK["x"], "y": hdr.JWK["y"]})
	th := sha256.Sum256(tb)
	return claims, base64.RawURLEncoding.EncodeToString(th[:]), nil
}

// DPoPProofs counts the requests whose DPoP proof and binding verified; DPoPNonces the
// requests refused for want of the server's nonce.
func (s *Server) DPoPProofs() int64 { return s.dpop.proofs.Load() }
func (s *Server) DPoPNonces() int64 { return s.dpop.nonces.Load() }
