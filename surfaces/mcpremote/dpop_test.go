package mcpremote

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/mcp"
)

func testDPoPKey(t *testing.T, retries int) *mcp.DPoPKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	b, err := k.PublicKey.Bytes()
	require.NoError(t, err)
	enc := base64.RawURLEncoding.EncodeToString
	jwk := map[string]any{"kty": "EC", "crv": "P-256", "x": enc(b[1:33]), "y": enc(b[33:])}
	return mcp.NewDPoPKey(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), jwk, retries)
}

func proofClaims(t *testing.T, proof string) map[string]any {
	t.Helper()
	parts := strings.Split(proof, ".")
	require.Len(t, parts, 3)
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(b, &c))
	return c
}

// TestDPoPTransport: a DPoP-bound token goes out as `Authorization: DPoP` with a fresh
// proof (htm, htu without the query, ath, a new jti each time) and the body on every
// attempt; a 401 use_dpop_nonce with a DPoP-Nonce is answered by sending again with that
// nonce, at most NonceRetries times, and the nonce is kept for the next request; a bearer
// token (not the Handler's DPoP-bound one) passes unchanged.
func TestDPoPTransport(t *testing.T) {
	const tok = "dpop-bound-access-token"
	var mu sync.Mutex
	var seen []*http.Request
	var bodies []string
	nonces := []string{"n1", "n2", "n3"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		seen, bodies = append(seen, r), append(bodies, string(b))
		if r.URL.Query().Get("nonce") == "" {
			w.WriteHeader(http.StatusOK)
			return
		}
		// demands a new nonce every time: the client stops after NonceRetries
		n := nonces[0]
		nonces = nonces[1:]
		w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
		w.Header().Set("DPoP-Nonce", n)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()

	h := &Handler{current: &mcp.Bearer{AccessToken: tok, TokenType: "DPoP", DPoP: testDPoPKey(t, 1)}}
	c := h.WithDPoP(srv.Client())

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp?nonce=1#frag", strings.NewReader(`{"jsonrpc":"2.0"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "one retry, then the server's answer")
	require.Len(t, seen, 2)
	sum := sha256.Sum256([]byte(tok))
	var jtis []any
	for i, r := range seen {
		require.Equal(t, "DPoP "+tok, r.Header.Get("Authorization"))
		require.Equal(t, `{"jsonrpc":"2.0"}`, bodies[i], "the body on every attempt")
		c := proofClaims(t, r.Header.Get("DPoP"))
		require.Equal(t, "POST", c["htm"])
		require.Equal(t, srv.URL+"/mcp", c["htu"])
		require.Equal(t, base64.RawURLEncoding.EncodeToString(sum[:]), c["ath"])
		jtis = append(jtis, c["jti"])
	}
	require.Nil(t, proofClaims(t, seen[0].Header.Get("DPoP"))["nonce"])
	require.Equal(t, "n1", proofClaims(t, seen[1].Header.Get("DPoP"))["nonce"])
	require.NotEqual(t, jtis[0], jtis[1], "a fresh jti")

	// The server's last nonce goes on the next request.
	req, _ = http.NewRequest(http.MethodGet, srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "n2", proofClaims(t, seen[2].Header.Get("DPoP"))["nonce"])

	// Another token (a bearer one) passes as it is.
	req, _ = http.NewRequest(http.MethodGet, srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer other-token")
	resp, err = c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "Bearer other-token", seen[3].Header.Get("Authorization"))
	require.Empty(t, seen[3].Header.Get("DPoP"))

	// The key never prints.
	b := h.current
	j, _ := json.Marshal(b)
	for _, out := range []string{string(j), fmt.Sprintf("%v %+v %#v %s", b, b, b, b.DPoP), fmt.Sprintf("%+v %#v", *b.DPoP, *b.DPoP)} {
		require.NotContains(t, out, "PRIVATE KEY")
	}
}
