package authserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// VerifyJWS checks a compact JWS's signature with pub, with the standard library and
// independently of the hosts that sign: the header's alg must be the key's, ES256, ES384
// or ES512 for an ECDSA key on P-256, P-384 or P-521 (r||s, each padded to the curve's
// size, RFC 7518 §3.4), RS256 for an RSA key (PKCS #1 v1.5). It answers the header and
// the claims. What the server, the fake MCP server and the tests of every signer check.
func VerifyJWS(tok string, pub crypto.PublicKey) (header, claims map[string]any, err error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, nil, errors.New("not a compact JWS")
	}
	for i, into := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(b, into); err != nil {
			return nil, nil, err
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, nil, err
	}
	input := []byte(parts[0] + "." + parts[1])
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		alg, d := "", []byte(nil)
		switch k.Curve {
		case elliptic.P256():
			s := sha256.Sum256(input)
			alg, d = "ES256", s[:]
		case elliptic.P384():
			s := sha512.Sum384(input)
			alg, d = "ES384", s[:]
		case elliptic.P521():
			s := sha512.Sum512(input)
			alg, d = "ES512", s[:]
		}
		if alg == "" || header["alg"] != alg {
			return nil, nil, fmt.Errorf("bad %v signature", header["alg"])
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size || !ecdsa.Verify(k, d, new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])) {
			return nil, nil, fmt.Errorf("bad %v signature", header["alg"])
		}
	case *rsa.PublicKey:
		d := sha256.Sum256(input)
		if header["alg"] != "RS256" || rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig) != nil {
			return nil, nil, fmt.Errorf("bad %v signature", header["alg"])
		}
	default:
		return nil, nil, errors.New("no key")
	}
	return header, claims, nil
}

// PublicJWK is the public key of an EC JWK on P-256 ({kty EC, crv P-256, x, y}, no d), as
// a DPoP proof's header carries it.
func PublicJWK(jwk map[string]any) (*ecdsa.PublicKey, error) {
	xs, _ := jwk["x"].(string)
	ys, _ := jwk["y"].(string)
	x, err1 := base64.RawURLEncoding.DecodeString(xs)
	y, err2 := base64.RawURLEncoding.DecodeString(ys)
	if jwk["kty"] != "EC" || jwk["crv"] != "P-256" || jwk["d"] != nil || xs == "" || ys == "" || errors.Join(err1, err2) != nil {
		return nil, errors.New("not a public EC P-256 jwk")
	}
	return &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}, nil
}
