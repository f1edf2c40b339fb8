package main_test

// Machines sharing one PostgreSQL store (issue 22): every command on --store /
// GRANTWIRE_STORE, separate processes with separate homes, caches and environments, the
// real binary, the private cluster (internal/testworld/pgtest) and the local authorization
// server with refresh-token rotation and reuse detection.

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/pgtest"
)

// machine is another machine of a fleet: the binary with its own HOME, grantwire home and
// policy cache, no Secret Service at all, and the store in its environment.
type machine struct {
	*bbWorld
	w *e2e
}

// storeWorld is an e2e world with a fresh database of the private cluster and a key file
// (GRANTWIRE_STORE_KEY_FILE) for it; the store's URL is returned, not yet in w.env.
func storeWorld(t *testing.T, cfg authserver.Config) (*e2e, string, string) {
	t.Helper()
	w := newE2E(t, cfg)
	db := pgtest.Database(t, "./cmd/grantwire")
	w.plant(pgtest.Password(db))
	key := filepath.Join(w.home, "store.key")
	r := w.gw("", "store", "new-key", key)
	require.Equal(t, 0, r.code, r.stderr)
	w.env = append(w.env, "GRANTWIRE_STORE_KEY_FILE="+key)
	return w, db, key
}

// newMachine is another machine on the store db: it shares nothing with w but the store,
// the key file's content (copied to its own home) and the catalog override.
func (w *e2e) newMachine(t *testing.T, db, key string, extraEnv ...string) *machine {
	t.Helper()
	m := &machine{bbWorld: newBB(t), w: w}
	raw, err := os.ReadFile(key)
	require.NoError(t, err)
	ownKey := filepath.Join(m.home, "store.key")
	require.NoError(t, os.WriteFile(ownKey, raw, 0o600))
	for i, kv := range m.env {
		if strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			m.env[i] = "XDG_CACHE_HOME=" + filepath.Join(m.home, ".cache")
		}
	}
	m.env = append(m.env, "GRANTWIRE_STORE="+db, "GRANTWIRE_STORE_KEY_FILE="+ownKey,
		"GRANTWIRE_KEYRING_SERVICE="+w.service, "GRANTWIRE_CATALOG="+w.catalog)
	m.env = append(m.env, extraEnv...)
	t.Cleanup(func() { w.assertNoSecretsUnder(m.home) })
	return m
}

// gw runs the machine's binary and records what it printed for w's leak search.
func (m *machine) gw(stdin string, args ...string) bbResult {
	m.t.Helper()
	r := m.run(stdin, args...)
	m.w.record(r.stderr)
	if len(args) == 0 || args[0] != "token" {
		m.w.record(r.stdout)
	}
	return r
}

// assertNoSecretsUnder searches every file under dir for the planted secrets and the
// server's tokens.
func (w *e2e) assertNoSecretsUnder(dir string) {
	w.mu.Lock()
	needles := append([]string{tokenPrefix + "_rt_", tokenPrefix + "_at_"}, w.planted...)
	w.mu.Unlock()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, n := range needles {
			if strings.Contains(string(b), n) {
				w.t.Errorf("%s holds a secret (%.12s…)", p, n)
			}
		}
		return nil
	})
}

// TestE2EStoreFlagOnEveryCommand: configure, connect, grant and token with --store go to
// PostgreSQL, not to the home or the OS credential store; another machine (its own home
// and cache, no Secret Service, GRANTWIRE_STORE) hands out the same connection's token,
// and its revoke and disconnect are what the first machine's next calls see.
func TestE2EStoreFlagOnEveryCommand(t *testing.T) {
	const clientID = "bb-store-client"
	secret := "bb-store-secret-" + randHex(8)
	w, db, key := storeWorld(t, authserver.Config{ClientID: clientID, ClientSecret: secret})
	w.plant(secret)

	r := w.gw(secret+"\n", "--store", db, "configure", "google", "--client-id", clientID, "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	r = w.connectNoBrowser("--store", db, "google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	r = w.token("--store", db, "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	first := strings.TrimSpace(r.stdout)
	require.True(t, strings.HasPrefix(first, tokenPrefix+"_at_"), "a token on stdout")
	require.Equal(t, 200, w.userinfo(first))

	// Nothing went to the home or to the OS credential store.
	for _, name := range []string{layout.Grants, layout.State} {
		_, err := os.Stat(filepath.Join(w.home, ".grantwire", name))
		require.True(t, errors.Is(err, fs.ErrNotExist), "%s is in the store, not the home: %v", name, err)
	}
	require.Empty(t, w.keyring("provider:google"), "the client secret is in the store")
	require.Empty(t, w.keyring(layout.ConnectionUser("google")), "the connection is in the store")
	dump := pgDumpText(t, db)
	require.Contains(t, dump, "connectors/grants.json")
	for _, s := range []string{secret, first} {
		require.NotContains(t, dump, s, "the store holds secrets sealed")
	}

	// Machine B: the same token, without a refresh (it is cached in the store).
	b := w.newMachine(t, db, key)
	r = b.gw("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, first, strings.TrimSpace(r.stdout))
	var st statusDoc
	r = b.gw("", "--json", "status", "google")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	require.Len(t, st.Connectors, 1)
	require.Equal(t, "user@example.com", st.Connectors[0].Account)
	require.Equal(t, map[string][]string{"builtin:email": {gmailRead}}, st.Connectors[0].Grants)

	// B revokes: A's very next call is refused, and says how to grant again.
	r = b.gw("", "grants", "revoke", "google", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	e := w.fail(4, "AGENT_NOT_GRANTED", "--store", db, "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Contains(t, e.Error.Fix, "grantwire grants grant google builtin:email")
	// A grants again (GRANTWIRE_STORE this time), B's call succeeds; B disconnects, A sees it.
	w.env = append(w.env, "GRANTWIRE_STORE="+db)
	w.gwJSON("", 0, nil, "grants", "grant", "google", "builtin:email", "--scopes", gmailRead)
	r = b.gw("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	r = b.gw("", "disconnect", "google")
	require.Equal(t, 0, r.code, r.stderr)
	row := w.status("google")
	require.Empty(t, row.Account, "A sees B's disconnect")
	require.Empty(t, row.Grants, "and its grants gone with it")
	w.fail(4, "AGENT_NOT_GRANTED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Zero(t, w.srv.Stats().ReuseDetected)
}
