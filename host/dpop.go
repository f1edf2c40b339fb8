package host

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/grantwire/grantwire/core"
)

// DPoPAlg is the one DPoP signing algorithm grantwire's hosts create keys for (the
// policy's data.grantwire.dpop.alg).
const DPoPAlg = "ES256"

// The "dpop.key" need (hostabi/README.md): a fresh ECDSA P-256 key pair for DPoP (RFC
// 9449). The private key, PEM PKCS #8, is registered as "<key>#key" and answered as a
// description; the public JWK and its thumbprint (RFC 7638) are not secrets and are
// answered as they are.
func (o *Op) dpopKey(n core.Need) (any, error) {
	if alg := n.Str("alg"); alg != DPoPAlg {
		return nil, fmt.Errorf("host: dpop.key needs alg %q", DPoPAlg)
	}
	keyPEM, jwk, err := NewDPoPKey(o.h.caps.Entropy)
	if err != nil {
		return hostError(err)
	}
	return map[string]any{"key": o.register(n.Key, "key", keyPEM), "jwk": jwk, "jkt": JWKThumbprint(jwk)}, nil
}

// NewDPoPKey creates an ECDSA P-256 key: the private key as PEM PKCS #8 and the public
// key as a JWK {kty, crv, x, y}.
func NewDPoPKey(entropy io.Reader) (string, map[string]any, error) {
	if entropy == nil {
		entropy = rand.Reader
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), entropy)
	if err != nil {
		return "", nil, fmt.Errorf("no DPoP key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", nil, fmt.Errorf("no DPoP key: %w", err)
	}
	jwk, err := publicJWK(&k.PublicKey)
	if err != nil {
		return "", nil, err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), jwk, nil
}

func publicJWK(pub *ecdsa.PublicKey) (map[string]any, error) {
	b, err := pub.Bytes() // 0x04 || X || Y
	if err != nil || len(b) != 65 {
		return nil, errors.New("host: the DPoP key is not an uncompressed P-256 point")
	}
	enc := base64.RawURLEncoding.EncodeToString
	return map[string]any{"kty": "EC", "crv": "P-256", "x": enc(b[1:33]), "y": enc(b[33:])}, nil
}

// JWKThumbprint is the RFC 7638 SHA-256 thumbprint of an EC public JWK, BASE64URL without
// padding (the cnf.jkt a DPoP-bound token carries).
func JWKThumbprint(jwk map[string]any) string {
	b, _ := json.Marshal(map[string]any{"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]})
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// DPoPProof signs a DPoP proof JWT (RFC 9449 §4.2) with the PEM private key: header typ
// dpop+jwt, alg ES256 and the public jwk; claims jti (16 bytes of entropy), htm, htu, iat
// (now), ath (BASE64URL(SHA-256(accessToken)) when accessToken is not empty) and nonce
// (when not empty). htu must already be without query and fragment. Its errors never
// carry the key or the token.
func DPoPProof(keyPEM string, jwk map[string]any, htm, htu, accessToken, nonce string, now time.Time, entropy io.Reader) (string, error) {
	if entropy == nil {
		entropy = rand.Reader
	}
	jti := make([]byte, 16)
	if _, err := io.ReadFull(entropy, jti); err != nil {
		return "", fmt.Errorf("no entropy for a DPoP proof: %w", err)
	}
	claims := map[string]any{
		"jti": base64.RawURLEncoding.EncodeToString(jti),
		"htm": htm, "htu": htu, "iat": now.Unix(),
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	return SignJWT(keyPEM, map[string]any{"typ": "dpop+jwt", "jwk": jwk}, claims, []string{DPoPAlg})
}
