package main_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/mcptest"
)

// jwtAccessToken reads an access token oidc-provider issued as a JWT for a resource
// server (its signature is the provider's; the test trusts the provider it started): the
// audience, scopes, expiry and the DPoP key it is bound to (cnf.jkt).
func jwtAccessToken(tok, issuer string) (mcptest.Token, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return mcptest.Token{}, errors.New("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return mcptest.Token{}, err
	}
	var c struct {
		Iss   string `json:"iss"`
		Aud   any    `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
		Cnf   struct {
			JKT string `json:"jkt"`
		} `json:"cnf"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return mcptest.Token{}, err
	}
	if c.Iss != issuer || time.Unix(c.Exp, 0).Before(time.Now()) {
		return mcptest.Token{}, errors.New("not the provider's, or expired")
	}
	aud, _ := c.Aud.(string)
	return mcptest.Token{Scopes: strings.Fields(c.Scope), Expires: time.Unix(c.Exp, 0), Resource: aud, JKT: c.Cnf.JKT}, nil
}

// keyringValue reads an entry as the native shell stores it: a value over 1024
// characters is in parts "<user>#0", "<user>#1", ... under a manifest
// "\x00gaia-chunked\x00<count>:<crc32>" (shells/native/keyring.go).
func (w *e2e) keyringValue(user string) string {
	w.t.Helper()
	v := w.keyring(user)
	rest, ok := strings.CutPrefix(v, "\x00gaia-chunked\x00")
	if !ok {
		return v
	}
	n, err := strconv.Atoi(strings.SplitN(rest, ":", 2)[0])
	require.NoError(w.t, err, "manifest %q", rest)
	var b strings.Builder
	for i := range n {
		b.WriteString(w.keyring(user + "#" + strconv.Itoa(i)))
	}
	return b.String()
}

// TestOutsideOIDCDPoPMCP: DPoP (RFC 9449, SEP-1932) against oidc-provider with its dPoP
// feature, which requires DPoP-bound tokens of the client and its nonce on every proof:
// `mcp auth` exchanges the code with a proof of a fresh key (again with the provider's
// nonce after use_dpop_nonce) and stores the DPoP-bound token with its key; `mcp proxy`
// (access tokens live 30 s, under the 60 s margin: it refreshes) refreshes with a proof
// and calls a tool on an MCP server that accepts only `Authorization: DPoP` with a
// proof bound to the token's cnf.jkt and carrying the server's nonce. The private key
// never appears in any output, file under the home (the decision log included).
func TestOutsideOIDCDPoPMCP(t *testing.T) {
	o := outside(t)
	t.Parallel()
	p := startOIDCWith(t, o, map[string]any{"accessTTL": 30, "dpopRequired": true, "dpopNonce": true,
		"resourceServer": map[string]any{"scope": "mcp:tools"}})
	srv, err := mcptest.Start(mcptest.Options{
		Issuer: p.issuer, ScopesSupported: []string{"mcp:tools"}, DPoP: true, DPoPNonce: "rs-nonce-" + randHex(8),
		Verify: func(tok string) (mcptest.Token, error) { return jwtAccessToken(tok, p.issuer) },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	w := newOutsideWorld(t, nil)
	w.authURL = p.issuer + "/auth"
	decisions := filepath.Join(w.home, "decisions.jsonl")
	w.env = append(w.env, "GRANTWIRE_DECISION_LOG="+decisions)
	t.Cleanup(func() { p.plantTokens(w) })
	w.plant(p.clientSecret)

	r := w.gw(p.clientSecret+"\n", "mcp", "add", "notes", "--url", srv.URL, "--client-id", p.clientID, "--issuer", p.issuer, "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	s := w.start(nil, "mcp", "auth", "notes", "--no-browser", "--timeout", "60s")
	status, end := browse(t, s.waitURL(t))
	require.Equal(t, http.StatusOK, status, "the loopback callback answers the browser")
	require.Equal(t, "127.0.0.1", end.Hostname())
	r = s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, "stderr: %s\nprovider: %s", r.stderr, p.logText())

	// The DPoP key is in the server's token slot, and only there.
	var slot struct {
		DPoPKey string         `json:"dpop_key"`
		DPoPJWK map[string]any `json:"dpop_jwk"`
	}
	require.NoError(t, json.Unmarshal([]byte(w.keyringValue("notes:mcp_token")), &slot))
	require.Contains(t, slot.DPoPKey, "BEGIN PRIVATE KEY")
	require.Equal(t, "EC", slot.DPoPJWK["kty"])
	for _, line := range strings.Split(slot.DPoPKey, "\n") {
		if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
			w.plant(line)
		}
	}

	dpopTokens := func() (n int) {
		for _, e := range p.events() {
			if e.Ev == "grant.success" {
				require.Equal(t, "DPoP", e.TokenType, "every token the provider issued is DPoP-bound")
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, p.count("grant.success", "authorization_code"), p.logText())
	require.Equal(t, 1, dpopTokens())

	require.Equal(t, 0, w.gw("", "activations", "activate", "notes", "builtin:chat", "--scopes", "use").code)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, stderr := w.proxySession(ctx, "notes", "builtin:chat")
	got, err := echo(t, ctx, session, "bound")
	require.NoError(t, err, "proxy: %s\nprovider: %s", stderr, p.logText())
	require.Equal(t, "bound", got)
	_ = session.Close()

	require.GreaterOrEqual(t, p.count("grant.success", "refresh_token"), 1, "the proxy refreshed (with a proof): %s", p.logText())
	require.Equal(t, p.count("grant.success", ""), dpopTokens())
	for _, e := range p.events() {
		if e.Ev == "grant.error" {
			require.Equal(t, "use_dpop_nonce", e.Error, "the provider refused nothing but proofs without its nonce: %s", p.logText())
		}
	}
	require.GreaterOrEqual(t, p.count("grant.error", ""), 1, "the provider asked for its nonce")
	require.Positive(t, srv.DPoPProofs(), "the server verified DPoP proofs bound to the token")
	require.Positive(t, srv.DPoPNonces(), "the server asked for its nonce, and the proxy retried with it")

	info, err := os.Stat(decisions)
	require.NoError(t, err)
	require.Positive(t, info.Size(), "the decision log was written (and is searched for the key)")
}
