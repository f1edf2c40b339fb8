package main_test

// What the provider is told and what it says, end to end on the real parts (issue 10,
// items 4-9): the built binary, the private Secret Service and the local authorization
// server, which here checks how the client authenticates and counts revocations.

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// patchGoogle rewrites the world's catalog override with some fields of google's entry
// replaced (a nil value removes the field).
func (w *e2e) patchGoogle(fields map[string]any) {
	w.t.Helper()
	raw, err := os.ReadFile(w.catalog)
	require.NoError(w.t, err)
	var doc map[string]map[string]map[string]any
	require.NoError(w.t, json.Unmarshal(raw, &doc))
	for k, v := range fields {
		if v == nil {
			delete(doc["connectors"]["google"], k)
		} else {
			doc["connectors"]["google"][k] = v
		}
	}
	raw, err = json.Marshal(doc)
	require.NoError(w.t, err)
	require.NoError(w.t, os.WriteFile(w.catalog, raw, 0o600))
}

// refreshToken reads the stored refresh token (test code: a secret).
func (w *e2e) refreshToken() string {
	w.t.Helper()
	var conn struct {
		RefreshToken string `json:"refresh_token"`
	}
	require.NoError(w.t, json.Unmarshal([]byte(w.keyring("google:default")), &conn))
	require.NotEmpty(w.t, conn.RefreshToken)
	return conn.RefreshToken
}

// Disconnect revokes the refresh token at the provider (RFC 7009) after the local wipe,
// printing no token; a revocation endpoint that fails never stops the wipe.
func TestE2EDisconnectRevokesAtTheProvider(t *testing.T) {
	const clientID = "bb-revoke-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, ClientAuth: authserver.AuthBasic})
	w.configureClient(clientID, secret)
	r := w.connectNoBrowser("google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	rt := w.refreshToken()
	require.True(t, w.srv.Live(rt))

	r = w.gw("", "disconnect", "google")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Disconnected google.\nRevoked the grants of builtin:email.\nAsked google to revoke the refresh token too.\n", r.stdout)
	require.Empty(t, r.stderr)
	st := w.srv.Stats()
	require.Equal(t, 1, st.Revocations)
	require.Equal(t, 1, st.RevokedTokens, "the server revoked the refresh token")
	require.Zero(t, st.InvalidClients, "the revocation authenticated the client as the token requests do")
	require.False(t, w.srv.Live(rt))
	require.Empty(t, w.keyring("google:default"))
	require.Empty(t, w.keyring("google:access_token"))

	// A revocation endpoint that fails (503, then a dropped connection): the wipe happened.
	w.srv.ScriptRevoke("", authserver.Answer{Status: 503, Error: "temporarily_unavailable"}, authserver.Answer{Drop: true})
	for range 2 {
		r = w.connectNoBrowser("google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
		require.Equal(t, 0, r.code, r.stderr)
		rt = w.refreshToken()
		var res struct {
			Removed           bool     `json:"removed"`
			RevokedGrants     []string `json:"revoked_grants"`
			RevokedAtProvider bool     `json:"revoked_at_provider"`
		}
		w.gwJSON("", 0, &res, "disconnect", "google")
		require.True(t, res.Removed)
		require.Equal(t, []string{"builtin:email"}, res.RevokedGrants)
		require.True(t, res.RevokedAtProvider, "the request was sent")
		require.Empty(t, w.keyring("google:default"), "the local wipe never waits on the provider")
		require.True(t, w.srv.Live(rt), "the failed revocation revoked nothing")
		w.fail(4, "AGENT_NOT_GRANTED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	}
	require.Equal(t, 3, w.srv.Stats().Revocations)
	require.Equal(t, 1, w.srv.Stats().RevokedTokens)
}

// The binary authenticates its client at the token endpoint as the catalog entry says, and
// the server, registered for that method, refuses any other.
func TestE2EClientAuthenticationMethods(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		catalog      map[string]any // google's entry, patched
		secret       bool
	}{
		{"default", authserver.AuthBasic, map[string]any{"token_endpoint_auth_method": nil}, true}, // RFC 8414's default
		{"basic", authserver.AuthBasic, map[string]any{"token_endpoint_auth_method": "client_secret_basic"}, true},
		{"post", authserver.AuthPost, map[string]any{"token_endpoint_auth_method": "client_secret_post"}, true},
		{"none", authserver.AuthNone, map[string]any{"token_endpoint_auth_method": "none", "client_secret_required": false}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clientID := "bb-auth-client-" + randHex(3)
			secret := ""
			if tc.secret {
				secret = "bb-client-secret-" + randHex(8)
			}
			// Tokens live 30 s, under the 60 s margin: every token call refreshes.
			w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, ClientAuth: tc.method, ExpiresIn: 30})
			w.patchGoogle(tc.catalog)
			if tc.secret {
				w.configureClient(clientID, secret)
			} else {
				w.gwJSON("", 0, nil, "configure", "google", "--client-id", clientID)
			}
			r := w.connectNoBrowser("google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
			require.Equal(t, 0, r.code, r.stderr)
			tr := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
			require.Equal(t, 0, tr.code, tr.stderr)
			require.Equal(t, []string{tc.method, tc.method}, w.srv.ClientAuthSeen(), "the code exchange and the refresh")
			require.Zero(t, w.srv.Stats().InvalidClients)

			// The server now wants another method: invalid_client is a configuration
			// error (exit 3) naming how the credentials were sent, and nothing is deleted.
			other := authserver.AuthPost
			if tc.method == authserver.AuthPost {
				other = authserver.AuthBasic
			}
			w.srv.Configure(func(c *authserver.Config) { c.ClientAuth = other })
			if tc.secret {
				e := w.fail(3, "CONFIGURATION", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
				require.Contains(t, e.Error.Message, "they were sent as "+tc.method)
				require.Equal(t, "grantwire configure google --client-id <id> --client-secret-stdin", e.Error.Fix)
			} else {
				// A public client (the catalog requires no secret): REAUTH_REQUIRED, as GAIA
				// answers it, never a fix that stores a secret (issue 20 §1.17).
				e := w.fail(4, "REAUTH_REQUIRED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
				require.NotContains(t, e.Error.Fix, "secret")
			}
			require.NotEmpty(t, w.keyring("google:default"), "invalid_client deletes nothing")
			require.Equal(t, 1, w.srv.Stats().InvalidClients)
		})
	}
}

// A provider that grants fewer scopes than asked: the connection and the grants hold what
// it granted, and the CLI says plainly what was not granted.
func TestE2EProviderGrantsLess(t *testing.T) {
	const clientID = "bb-less-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, GrantedScopes: []string{gmailRead}})
	w.configureClient(clientID, secret)
	r := w.connectNoBrowser("google", "--scopes", gmailRead+","+gmailSend, "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Connected google as user@example.com with "+gmailRead+"\n")
	require.Contains(t, r.stdout, "Granted google → builtin:email: "+gmailRead+"\n")
	require.Contains(t, r.stderr, "grantwire: warning: the provider did not grant "+gmailSend+"; the connection holds only what it granted, and agents were granted only that")
	row := w.status("google")
	require.Equal(t, []string{gmailRead}, row.Scopes)
	require.Equal(t, map[string][]string{"builtin:email": {gmailRead}}, row.Grants)
}
