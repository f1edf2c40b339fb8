package host

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	_ "crypto/sha512" // with crypto/sha256, the hashes crypto.Hash.New uses
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/grantwire/grantwire/core"
)

// The "$jwt" template (hostabi/README.md): a JWT the host signs with a private key the
// policy names by reference (RFC 7523 client assertions). The policy gives every claim
// (iat and exp from a clock fact, jti from entropy) and the algorithms the server accepts;
// the host picks the key's algorithm, refuses it when it is not among them, and signs.
// Errors never carry the key.
func (o *Op) jwt(arg any) (any, error) {
	m, ok := arg.(map[string]any)
	if !ok {
		return nil, errors.New("host: $jwt needs an object")
	}
	keyV, err := o.subst(m["key"])
	if err != nil {
		return nil, err
	}
	keyPEM, ok := keyV.(string)
	if !ok {
		return nil, errors.New("host: $jwt needs a key")
	}
	claims, err := o.subst(m["claims"])
	if err != nil {
		return nil, err
	}
	if _, ok := claims.(map[string]any); !ok {
		return nil, errors.New("host: $jwt needs claims, an object")
	}
	header := map[string]any{}
	if h, ok := m["header"]; ok {
		hv, err := o.subst(h)
		if err != nil {
			return nil, err
		}
		if header, ok = hv.(map[string]any); !ok {
			return nil, errors.New("host: $jwt's header must be an object")
		}
	}
	var algs []string
	if a, ok := m["algs"]; ok {
		if algs, err = o.strings(a, 0); err != nil {
			return nil, err
		}
	}
	return SignJWT(keyPEM, header, claims, algs)
}

// SignJWT signs claims with the PEM private key (EC P-256/P-384/P-521 or RSA) under the
// key's algorithm (ES256, ES384, ES512, RS256), which must be in algs when algs is not
// empty; header members beside alg are kept.
func SignJWT(keyPEM string, header map[string]any, claims any, algs []string) (string, error) {
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		return "", err
	}
	alg, hash, err := jwtAlg(key)
	if err != nil {
		return "", err
	}
	if len(algs) > 0 && !slices.Contains(algs, alg) {
		return "", fmt.Errorf("host: the private key signs %s, and the server accepts only %v", alg, algs)
	}
	h := map[string]any{}
	for k, v := range header {
		h[k] = v
	}
	h["alg"] = alg
	hb, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	hh := hash.New()
	hh.Write([]byte(input))
	digest := hh.Sum(nil)
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return "", err
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		sig = make([]byte, 2*size)
		r.FillBytes(sig[:size])
		s.FillBytes(sig[size:])
	case *rsa.PrivateKey:
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, hash, digest); err != nil {
			return "", err
		}
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func jwtAlg(key crypto.Signer) (string, crypto.Hash, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", crypto.SHA256, nil
		case elliptic.P384():
			return "ES384", crypto.SHA384, nil
		case elliptic.P521():
			return "ES512", crypto.SHA512, nil
		}
	case *rsa.PrivateKey:
		return "RS256", crypto.SHA256, nil
	}
	return "", 0, errors.New("host: the private key is neither EC (P-256, P-384, P-521) nor RSA")
}

// parsePrivateKey reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1 RSA); its errors
// never quote the key.
func parsePrivateKey(s string) (crypto.Signer, error) {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return nil, errors.New("host: the private key is not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, errors.New("host: the private key cannot sign")
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("host: the private key (PEM %q) is not PKCS #8, SEC 1 or PKCS #1", b.Type)
}

// --- DPoP (RFC 9449): keys, and proofs signed by SignJWT ----------------------------------

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
