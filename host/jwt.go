package host

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
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

var _, _ = sha256.New, sha512.New // link the hashes crypto.Hash.New uses

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
