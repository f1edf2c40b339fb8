package host_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// verifyES256 checks a compact JWS's ES256 signature with a public JWK
// (authserver.VerifyJWS) and returns its header and claims.
func verifyES256(t *testing.T, jws string, jwk map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	pub, err := authserver.PublicJWK(jwk)
	require.NoError(t, err)
	h, c, err := authserver.VerifyJWS(jws, pub)
	require.NoError(t, err, "the proof verifies with the public JWK")
	require.Equal(t, "ES256", h["alg"])
	return h, c
}

// dpop.key answers the private key as a description only, with the public JWK and its
// thumbprint; a $jwt proof the policy builds with it verifies against that JWK, and
// DPoPProof (what the RoundTripper of surfaces/mcpremote signs with) carries the claims
// of RFC 9449 §4.2, a fresh jti each time.
func TestDPoPKeyAndProofs(t *testing.T) {
	_, h := world()
	op := h.Begin("t")
	f := fetch(t, op, `{"key":"dpopkey","kind":"dpop.key","alg":"ES256"}`)
	b, _ := json.Marshal(f)
	require.NotContains(t, string(b), "PRIVATE KEY")
	require.Equal(t, "dpopkey#key", f["key"].(map[string]any)["$ref"])
	jwk := f["jwk"].(map[string]any)
	require.Equal(t, "EC", jwk["kty"])
	require.Equal(t, "P-256", jwk["crv"])
	require.Equal(t, host.JWKThumbprint(jwk), f["jkt"])
	keyPEM, ok := op.Secret("dpopkey#key")
	require.True(t, ok)
	require.Contains(t, keyPEM, "BEGIN PRIVATE KEY")

	_, err := op.Fetch(t.Context(), need(t, `{"key":"k2","kind":"dpop.key","alg":"RS256"}`))
	require.Error(t, err, "only ES256")

	now := time.Unix(1_790_000_000, 0)
	p1, err := host.DPoPProof(keyPEM, jwk, "POST", "https://rs.example.com/mcp", "tok-secret", "n-1", now, nil)
	require.NoError(t, err)
	hd, c := verifyES256(t, p1, jwk)
	require.Equal(t, "dpop+jwt", hd["typ"])
	require.Equal(t, "ES256", hd["alg"])
	require.Equal(t, jwk, hd["jwk"])
	sum := sha256.Sum256([]byte("tok-secret"))
	require.Equal(t, base64.RawURLEncoding.EncodeToString(sum[:]), c["ath"])
	require.Equal(t, "POST", c["htm"])
	require.Equal(t, "https://rs.example.com/mcp", c["htu"])
	require.Equal(t, "n-1", c["nonce"])
	require.EqualValues(t, now.Unix(), c["iat"])
	require.NotContains(t, p1, "tok-secret")
	p2, err := host.DPoPProof(keyPEM, jwk, "POST", "https://as.example.com/token", "", "", now, nil)
	require.NoError(t, err)
	_, c2 := verifyES256(t, p2, jwk)
	require.NotEqual(t, c["jti"], c2["jti"], "a fresh jti")
	require.NotContains(t, c2, "ath")
	require.NotContains(t, c2, "nonce")

	// What the policy's $jwt template signs with the key by reference.
	p3, err := host.SignJWT(keyPEM, map[string]any{"typ": "dpop+jwt", "jwk": jwk}, map[string]any{"jti": "j", "htm": "POST"}, []string{"ES256"})
	require.NoError(t, err)
	verifyES256(t, p3, jwk)
}
