package host_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

func pemKey(t *testing.T, typ string, der []byte) string {
	t.Helper()
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func pkcs8(t *testing.T, k any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	return pemKey(t, "PRIVATE KEY", der)
}

// SignJWT signs with the key's own algorithm: ES256/ES384/ES512 (r||s, RFC 7518 §3.4)
// and RS256 (PKCS #1 v1.5), each verified with the standard library (authserver.VerifyJWS);
// header members beside alg are kept, and a caller's alg cannot override the key's.
func TestSignJWTVerifies(t *testing.T) {
	claims := map[string]any{"iss": "client", "aud": "https://as.example", "iat": 1800000000, "exp": 1800000300, "jti": "j1"}
	header := map[string]any{"typ": "JWT", "alg": "none"}
	for _, c := range []struct {
		alg   string
		curve elliptic.Curve
	}{{"ES256", elliptic.P256()}, {"ES384", elliptic.P384()}, {"ES512", elliptic.P521()}} {
		k, err := ecdsa.GenerateKey(c.curve, rand.Reader)
		require.NoError(t, err)
		sec1, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		for _, p := range []string{pkcs8(t, k), pemKey(t, "EC PRIVATE KEY", sec1)} {
			tok, err := host.SignJWT(p, header, claims, []string{"RS256", c.alg})
			require.NoError(t, err, c.alg)
			h, cl, err := authserver.VerifyJWS(tok, &k.PublicKey)
			require.NoError(t, err, "%s: r||s, each padded to the curve size", c.alg)
			require.Equal(t, map[string]any{"typ": "JWT", "alg": c.alg}, h)
			require.Equal(t, "j1", cl["jti"])
			require.Equal(t, float64(1800000300), cl["exp"])
		}
	}

	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	for _, p := range []string{pkcs8(t, k), pemKey(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k))} {
		tok, err := host.SignJWT(p, nil, claims, nil)
		require.NoError(t, err, "no algs: the key's algorithm")
		h, _, err := authserver.VerifyJWS(tok, &k.PublicKey)
		require.NoError(t, err)
		require.Equal(t, "RS256", h["alg"])
	}
}

// An algorithm the server does not accept is refused, and no error quotes the key (or
// any part of it): a wrong key type, a key that is not PEM, a PEM that is no key.
func TestSignJWTRefusesAndNeverQuotesTheKey(t *testing.T) {
	claims := map[string]any{"iss": "c"}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ec := pkcs8(t, k)
	_, err = host.SignJWT(ec, nil, claims, []string{"RS256", "PS256"})
	require.ErrorContains(t, err, "ES256")
	require.ErrorContains(t, err, "RS256")

	body := strings.Join(strings.Split(strings.TrimSpace(ec), "\n")[1:4], "")
	for name, bad := range map[string]string{
		"not PEM":     strings.ReplaceAll(ec, "-----", ""),
		"not a key":   pemKey(t, "PRIVATE KEY", []byte("0123456789abcdef0123456789abcdef")),
		"truncated":   ec[:len(ec)/2] + "\n-----END PRIVATE KEY-----\n",
		"right alg":   ec,
		"refused alg": ec,
	} {
		algs := []string{"ES256"}
		if name == "refused alg" {
			algs = []string{"EdDSA"}
		}
		_, err := host.SignJWT(bad, nil, claims, algs)
		if name == "right alg" {
			require.NoError(t, err)
			continue
		}
		require.Error(t, err, name)
		for _, piece := range []string{body, body[:16], body[len(body)-16:]} {
			require.NotContains(t, err.Error(), piece, "%s: the error quotes the key", name)
		}
	}
}

// The "$jwt" template signs through the operation's secret references: the key is a
// reference the policy names, the claims may hold references too.
func TestJWTTemplate(t *testing.T) {
	w, h := world()
	op := h.Begin("t")
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	key := pkcs8(t, k)
	op.Describe("arg#key", key)
	op.Describe("arg#id", "client-1")
	require.NoError(t, op.Apply(context.Background(), effects(t, `[
		{"kind":"keyring.set","user":"j","value":{"$jwt":{"key":{"$ref":"arg#key"},"algs":["ES256"],"header":{"typ":"JWT"},
			"claims":{"iss":{"$ref":"arg#id"},"sub":{"$ref":"arg#id"},"aud":"https://as.example","iat":{"$number":"1800000000"}}}}}
	]`)))
	tok := w.Keyring()[svc+"\x00j"]
	hd, cl, err := authserver.VerifyJWS(tok, &k.PublicKey)
	require.NoError(t, err)
	require.Equal(t, "ES256", hd["alg"])
	require.Equal(t, "client-1", cl["iss"])
	require.Equal(t, float64(1800000000), cl["iat"])

	for name, tmpl := range map[string]string{
		"refused alg": `{"$jwt":{"key":{"$ref":"arg#key"},"algs":["RS256"],"claims":{}}}`,
		"no claims":   `{"$jwt":{"key":{"$ref":"arg#key"}}}`,
		"no key":      `{"$jwt":{"claims":{}}}`,
		"not object":  `{"$jwt":"x"}`,
	} {
		err := op.Apply(context.Background(), effects(t, `[{"kind":"keyring.set","user":"j2","value":`+tmpl+`}]`))
		require.Error(t, err, name)
		require.NotContains(t, err.Error(), "PRIVATE KEY", name)
	}
}
