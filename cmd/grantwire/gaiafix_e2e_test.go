package main_test

// Issue 20 §1.16–§1.20, §2.1–§2.3, §2.5–§2.7: what a GAIA home, a certified provider and a
// new user found, each on the real binary (and the real keyring, the local authorization
// server, real processes and signals where the defect lives there).

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// §2.5: an agent granted no scopes (--scopes ”, a printed fix) got the connection's whole
// access token, and so did a request of no scope. A token carries every scope of its
// connection: an empty grant or an empty request hands out nothing.
func TestNoScopeHandsOutNoToken(t *testing.T) {
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: "bb-noscope", ClientSecret: secret})
	w.configureClient("bb-noscope", secret)
	r := w.connectNoBrowser("google", "--scopes", "openid,"+gmailRead, "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)

	// A request of no scope from an ungranted agent: refused, and the fix is no grant of
	// no scope (it would hand out nothing either).
	for _, args := range [][]string{
		{"token", "google", "--agent", "builtin:calendar"},
		{"token", "google", "--agent", "builtin:calendar", "--scopes", ""},
	} {
		e := w.fail(2, "USAGE", args...)
		require.Contains(t, e.Error.Message, "at least one scope", args)
		require.NotContains(t, e.Error.Fix, "--scopes ''")
	}

	// A grant of no scope is recorded (GAIA's ledger holds such grants) ...
	w.gwJSON("", 0, nil, "grants", "grant", "google", "builtin:calendar", "--scopes", "")
	// ... and hands out no token: not for no scope, not for any scope.
	for _, args := range [][]string{
		{"google", "--agent", "builtin:calendar"},
		{"google", "--agent", "builtin:calendar", "--scopes", ""},
		{"google", "--agent", "builtin:calendar", "--json"},
	} {
		tr := w.token(args...)
		require.Equal(t, 2, tr.code, "%v: %s", args, tr.stderr)
		require.Empty(t, tr.stdout, "%v: no token printed", args)
		require.Contains(t, tr.stderr, "at least one scope")
	}
	e := w.fail(4, "AGENT_NOT_GRANTED", "token", "google", "--agent", "builtin:calendar", "--scopes", gmailRead)
	require.Equal(t, "grantwire grants grant google builtin:calendar --scopes "+gmailRead, e.Error.Fix)

	// A granted agent asking for no scope gets nothing either.
	tr := w.token("google", "--agent", "builtin:email")
	require.Equal(t, 2, tr.code, tr.stderr)
	require.Empty(t, tr.stdout)
	// Naming a scope it holds, it gets its token.
	tr = w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, tr.code, tr.stderr)
	require.True(t, strings.HasPrefix(strings.TrimSpace(tr.stdout), tokenPrefix+"_at_"))
}

// §1.16: a GAIA ledger grant whose agent id is not namespaced (GAIA's SDK documentation uses
// agent_id="my-agent") was listed by `grants list` but could not be revoked (exit 2).
// Whatever grantwire shows can be revoked, deactivated and disconnected; no new grant,
// activation or token is given to such an id.
func TestGAIAUnnamespacedAgentIsRemovable(t *testing.T) {
	w := newE2E(t, authserver.Config{ClientID: "bb-gaia-ids", ClientSecret: "bb-client-secret-" + randHex(8)})
	dir := filepath.Join(w.home, ".grantwire", "connectors")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grants.json"), []byte(`{
  "google": {
    "my-agent": [
      "openid"
    ]
  },
  "mcp-github": {
    "my-agent": [
      "use"
    ],
    "other agent": [
      "use"
    ]
  }
}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "activations.json"), []byte(`{
  "activations": {
    "mcp-github": {
      "my-agent": true
    }
  },
  "version": 1
}`), 0o600))

	var grants grantsDoc
	w.gwJSON("", 0, &grants, "grants", "list")
	require.Equal(t, []grantRow{
		{"google", "my-agent", []string{"openid"}},
		{"mcp-github", "my-agent", []string{"use"}},
		{"mcp-github", "other agent", []string{"use"}},
	}, grants.Grants, "shown verbatim")
	require.Contains(t, w.gw("", "activations", "list").stdout, "my-agent")

	// Revoked, deactivated: exit 0, and the ledgers no longer hold them.
	r := w.gw("", "grants", "revoke", "google", "my-agent")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Revoked my-agent's grant on google.")
	r = w.gw("", "activations", "deactivate", "mcp-github", "my-agent")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Deactivated mcp-github for my-agent")
	require.NotContains(t, w.ledger("activations.json"), "my-agent")
	require.NotContains(t, w.ledger("grants.json"), "google")

	// No new access for such an id: a usage error that says what an id looks like.
	for _, args := range [][]string{
		{"grants", "grant", "google", "my-agent", "--scopes", "openid"},
		{"activations", "activate", "mcp-github", "my-agent"},
		{"token", "google", "--agent", "my-agent", "--scopes", "openid"},
	} {
		e := w.fail(2, "USAGE", args...)
		require.Contains(t, e.Error.Message, "namespaced", args)
	}

	// Disconnected: every grant of the connector goes, whatever its ids.
	r = w.gw("", "disconnect", "mcp-github")
	require.Equal(t, 0, r.code, r.stderr)
	w.gwJSON("", 0, &grants, "grants", "list")
	require.Empty(t, grants.Grants)
}

func (w *e2e) ledger(name string) string {
	w.t.Helper()
	doc, ok := w.homeFile("connectors/" + name)
	require.True(w.t, ok, name)
	return doc
}

// publicGoogle is an e2e world whose google entry is silent on secrets and whose server's
// client is public (it authenticates with none), with access tokens that expire at once
// (every token call refreshes).
func publicGoogle(t *testing.T) *e2e {
	t.Helper()
	w := newE2E(t, authserver.Config{ClientID: "bb-public", ClientAuth: authserver.AuthDefault, ExpiresIn: 30})
	raw, err := os.ReadFile(w.catalog)
	require.NoError(t, err)
	var doc map[string]map[string]map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	delete(doc["connectors"]["google"], "client_secret_required")
	raw, err = json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(w.catalog, raw, 0o600))
	r := w.gw("", "configure", "google", "--client-id", "bb-public")
	require.Equal(t, 0, r.code, r.stderr)
	r = w.connectNoBrowser("google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	return w
}

// §1.17: a token endpoint's invalid_client was misread for a provider that needs no secret
// (GAIA: REAUTH_REQUIRED, never a configuration error), and a 401 invalid_grant deleted the
// connection (GAIA: a 401 never deletes). Only what is known is said, what a reconnect can
// fix is kept, and the printed fix works.
func TestInvalidClientOfAPublicClientAndA401InvalidGrant(t *testing.T) {
	w := publicGoogle(t)
	stored := w.keyring("google:default")
	require.NotEmpty(t, stored)

	w.srv.Script(authserver.Failure{Grant: "refresh_token", Status: 401, Error: "invalid_client"})
	e := w.fail(4, "REAUTH_REQUIRED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.NotContains(t, e.Error.Message, "secret", "a public client is not told to store a secret")
	require.Contains(t, e.Error.Message, "nothing was deleted")
	require.Equal(t, "grantwire connect google --scopes "+gmailRead, e.Error.Fix)
	require.Equal(t, stored, w.keyring("google:default"), "the connection is kept")
	// The fix works as printed.
	s := w.start(nil, append(strings.Fields(strings.TrimPrefix(e.Error.Fix, "grantwire ")), "--no-browser", "--timeout", "60s")...)
	consent(t, s.waitURL(t))
	r := s.wait(t)
	require.Equal(t, 0, r.code, r.stderr)
	tr := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, tr.code, tr.stderr)

	// A 401 answered with invalid_grant (Microsoft's, where reconnecting fixes it): nothing
	// deleted; the next refresh, answered, gives the token.
	stored = w.keyring("google:default")
	w.srv.Script(authserver.Failure{Grant: "refresh_token", Status: 401, Error: "invalid_grant"})
	e = w.fail(4, "REAUTH_REQUIRED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Contains(t, e.Error.Message, "401 (invalid_grant); nothing was deleted")
	require.Equal(t, stored, w.keyring("google:default"), "a 401 never deletes")
	tr = w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, tr.code, tr.stderr)

	// A 400 invalid_grant is a revoked connection, deleted as before.
	w.srv.Script(authserver.Failure{Grant: "refresh_token", Status: 400, Error: "invalid_grant"})
	w.fail(4, "CONNECTION_REVOKED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)

	// At connect time, a public client refused is a client id to configure again, with no
	// secret (the printed fix names no secret).
	w.srv.Script(authserver.Failure{Grant: "authorization_code", Status: 401, Error: "invalid_client"})
	s = w.start(nil, "--json", "connect", "google", "--scopes", gmailRead, "--no-browser", "--timeout", "60s")
	consent(t, s.waitURL(t))
	r = s.wait(t)
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, `"fix": "grantwire configure google --client-id \u003cid\u003e"`)
	require.NotContains(t, r.stderr, "needs the client's secret")
}

// filesUnder lists the files under dir (relative paths), for a test that nothing was written.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	return files
}

// §1.18: with no Secret Service reachable, configure wrote .keyring-generation files (in
// the home and in the lock directory) before failing with INSECURE_STORE. Nothing may be
// written: not by configure, nor by any other command that fails so.
func TestNoSecretServiceWritesNothing(t *testing.T) {
	w := newBB(t)
	locks := filepath.Join(t.TempDir(), "locks")
	// A session bus address with nothing behind it: the preflight passes (a bus is named),
	// the Secret Service is unreachable.
	w.env = append(w.env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(w.home, "no-bus"),
		"GRANTWIRE_KEYRING_SERVICE=grantwire.nobus."+randHex(4), "GRANTWIRE_LOCK_DIR="+locks)
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{"bb-secret\n", []string{"configure", "google", "--client-id", "cid", "--client-secret-stdin"}},
		{"BRAVE_API_KEY=bb-secret\n", []string{"configure", "mcp-brave-search", "--from-stdin"}},
		{"", []string{"disconnect", "google"}},
	} {
		r := w.run(tc.stdin, append([]string{"--json"}, tc.args...)...)
		require.Equal(t, 5, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, "INSECURE_STORE")
		require.Empty(t, filesUnder(t, w.home), "%v wrote files in the home", tc.args)
		require.Empty(t, filesUnder(t, locks), "%v wrote files in the lock directory", tc.args)
	}
}

// §1.19: `grants revoke` on an unreadable grants ledger said "held no grant …; nothing to
// revoke" (it could not read it); it says that it could not, as the warning beside it does.
func TestRevokeOnAnUnreadableLedgerSaysSo(t *testing.T) {
	w := newBB(t)
	dir := filepath.Join(w.home, ".grantwire", "connectors")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grants.json"), []byte(`{"google": {"builtin:email": [`), 0o600))
	r := w.run("", "grants", "revoke", "google", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "nothing to revoke")
	require.Contains(t, r.stdout, "could not read "+filepath.Join(dir, "grants.json")+", so builtin:email's grant on google was not revoked")
	require.Contains(t, r.stderr, "could not clean")
	r = w.run("", "--json", "grants", "revoke", "google", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"summary": "could not read`)

	// A readable ledger: the summaries of before.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grants.json"), []byte(`{"google": {"builtin:email": ["openid"]}}`), 0o600))
	require.Contains(t, w.run("", "grants", "revoke", "google", "builtin:email").stdout, "Revoked builtin:email's grant on google.")
	require.Contains(t, w.run("", "grants", "revoke", "google", "builtin:email").stdout, "builtin:email held no grant on google; nothing to revoke.")
}

// §2.6: the --engine help listed rego without saying it needs the OPA build.
func TestEngineHelpSaysRegoNeedsTheOPABuild(t *testing.T) {
	w := newBB(t)
	r := w.run("", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "rego (OPA's evaluator; only in the OPA build, go build -tags opa ./cmd/grantwire)")
}
