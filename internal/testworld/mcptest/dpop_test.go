package mcptest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/host"
)

// A proof the Go host signs verifies, and its thumbprint, computed here, is the host's
// (the cnf.jkt a token is bound to); a proof whose claims were changed does not.
func TestVerifyProof(t *testing.T) {
	keyPEM, jwk, err := host.NewDPoPKey(nil)
	require.NoError(t, err)
	p, err := host.DPoPProof(keyPEM, jwk, "POST", "http://rs.example/mcp", "tok", "", time.Unix(1_790_000_000, 0), nil)
	require.NoError(t, err)
	claims, jkt, err := verifyProof(p)
	require.NoError(t, err)
	require.Equal(t, host.JWKThumbprint(jwk), jkt)
	require.Equal(t, "POST", claims["htm"])

	other, err := host.DPoPProof(keyPEM, jwk, "GET", "http://rs.example/mcp", "tok", "", time.Unix(1_790_000_000, 0), nil)
	require.NoError(t, err)
	parts, otherParts := strings.Split(p, "."), strings.Split(other, ".")
	_, _, err = verifyProof(parts[0] + "." + otherParts[1] + "." + parts[2])
	require.Error(t, err, "claims changed")
	bare, err := host.SignJWT(keyPEM, map[string]any{"typ": "JWT", "jwk": jwk}, map[string]any{}, nil)
	require.NoError(t, err)
	_, _, err = verifyProof(bare)
	require.Error(t, err, "not typ dpop+jwt")
}
