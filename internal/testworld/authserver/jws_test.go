package authserver_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// VerifyJWS takes what SignJWT signs, with the right key only, and refuses a token whose
// header names another algorithm than the key's or whose claims were changed.
func TestVerifyJWS(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	for _, c := range []struct {
		key crypto.Signer
		alg string
	}{{ec, "ES256"}, {rk, "RS256"}} {
		tok, err := authserver.SignJWT(c.key, "JWT", map[string]any{"sub": "s"})
		require.NoError(t, err)
		h, cl, err := authserver.VerifyJWS(tok, c.key.Public())
		require.NoError(t, err, c.alg)
		require.Equal(t, map[string]any{"alg": c.alg, "typ": "JWT"}, h)
		require.Equal(t, "s", cl["sub"])

		parts := strings.Split(tok, ".")
		changed, err := authserver.SignJWT(c.key, "JWT", map[string]any{"sub": "t"})
		require.NoError(t, err)
		for name, bad := range map[string]string{
			"claims changed": parts[0] + "." + strings.Split(changed, ".")[1] + "." + parts[2],
			"not a JWS":      parts[0] + "." + parts[1],
		} {
			_, _, err := authserver.VerifyJWS(bad, c.key.Public())
			require.Error(t, err, "%s: %s", c.alg, name)
		}
	}
	tok, err := authserver.SignJWT(ec, "JWT", map[string]any{})
	require.NoError(t, err)
	_, _, err = authserver.VerifyJWS(tok, other.Public())
	require.Error(t, err, "another key")
	_, _, err = authserver.VerifyJWS(tok, rk.Public())
	require.Error(t, err, "an ES256 token under an RSA key")
}
