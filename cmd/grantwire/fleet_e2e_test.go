package main_test

// Machines sharing one PostgreSQL store (issue 22): every command on --store /
// GRANTWIRE_STORE, separate processes with separate homes, caches and environments, the
// real binary, the private cluster (internal/testworld/pgtest) and the local authorization
// server with refresh-token rotation and reuse detection; `store copy` between a home and
// the store; a rotated token kept while the store is down.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/pgtest"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/shells/postgres"
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
func (w *e2e) newMachine(t testing.TB, db, key string, extraEnv ...string) *machine {
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

// start runs the machine's binary without waiting for it.
func (m *machine) start(args ...string) (*exec.Cmd, *testenv.Buffer, *testenv.Buffer) {
	m.t.Helper()
	cmd := exec.Command(m.bin, args...)
	cmd.Env, cmd.Dir = m.env, m.home
	out, errb := &testenv.Buffer{}, &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	require.NoError(m.t, cmd.Start())
	m.t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, out, errb
}

// fail runs a command with --json that must fail with exit and code, and returns the error.
func (m *machine) fail(exit int, code string, args ...string) cliError {
	m.t.Helper()
	r := m.gw("", append([]string{"--json"}, args...)...)
	require.Equal(m.t, exit, r.code, "%v: %s", args, r.stderr)
	var e cliError
	require.NoError(m.t, json.Unmarshal([]byte(r.stderr), &e), r.stderr)
	require.Equal(m.t, code, e.Error.Code, e.Error.Message)
	return e
}

// fleetCalls is how many token calls each machine makes in TestE2EFleetProof
// ($GRANTWIRE_FLEET_CALLS, default the 200: about 4 s here).
func fleetCalls(t *testing.T) int {
	if v := os.Getenv("GRANTWIRE_FLEET_CALLS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "GRANTWIRE_FLEET_CALLS")
		return n
	}
	return 200
}

// fleetWorld is A (the e2e world) and four machines on a PostgreSQL cluster of the test's
// own, google connected on A with builtin:email granted gmail.readonly, on a server whose
// access tokens live expiresIn seconds, rotating refresh tokens and revoking a family on
// reuse.
func fleetWorld(t testing.TB, expiresIn int64) (*e2e, *pgtest.Cluster, []*machine) {
	t.Helper()
	const clientID = "bb-fleet-client"
	secret := "bb-fleet-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, ExpiresIn: expiresIn})
	w.plant(secret)
	cl := pgtest.NewCluster(t, "./cmd/grantwire")
	w.plant(pgtest.Password(cl.URL))
	key := filepath.Join(w.home, "store.key")
	require.Equal(t, 0, w.gw("", "store", "new-key", key).code)
	w.env = append(w.env, "GRANTWIRE_STORE_KEY_FILE="+key, "GRANTWIRE_STORE="+cl.URL)
	w.gwJSON(secret+"\n", 0, nil, "configure", "google", "--client-id", clientID, "--client-secret-stdin")
	r := w.connectNoBrowser("google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	ms := make([]*machine, 4)
	for i := range ms {
		ms[i] = w.newMachine(t, cl.URL, key)
	}
	return w, cl, ms
}

// requireServerClean: no refresh token was reused, nothing was revoked or refused.
func requireServerClean(t testing.TB, w *e2e) {
	t.Helper()
	st := w.srv.Stats()
	require.Zero(t, st.ReuseDetected, "no refresh token reused at the server")
	require.Zero(t, st.Revocations, "no revocation request")
	require.Zero(t, st.RevokedTokens, "no token revoked")
	require.Zero(t, st.InvalidGrants, "no invalid_grant")
}

// requireGrantKept: the connection and builtin:email's grant are as connect left them.
func requireGrantKept(t testing.TB, w *e2e) {
	t.Helper()
	row := w.status("google")
	require.Equal(t, "user@example.com", row.Account, "the connection is kept")
	require.Equal(t, map[string][]string{"builtin:email": {gmailRead}}, row.Grants, "the grant is kept")
}

// TestE2EFleetProof is issue 22's proof across machines: four processes with separate
// homes, caches and environments and no Secret Service share one PostgreSQL, against the
// local authorization server (1-second access tokens, refresh-token rotation, reuse
// revoking the family):
//   - 4 machines × N token calls (each refreshes: a token of 1 s is always within the
//     60 s margin) → every call succeeds, no reuse, no revocation, the grant kept;
//   - kill -9 of the process holding google's lock (its refresh held at the server) →
//     another machine, queued on the lock, proceeds within the lock's bound, no reuse;
//   - PostgreSQL stopped and started → every call fails with STORE_UNAVAILABLE (exit 5,
//     "store unavailable", the pg_isready fix) while it is down, in fresh processes and in
//     a running one; afterwards calls succeed with no manual step and nothing was lost;
//   - a revoke on one machine is refused by another machine's very next call, and by the
//     running process's first call that starts after it.
func TestE2EFleetProof(t *testing.T) {
	w, cl, ms := fleetWorld(t, 1)
	n := fleetCalls(t)

	// 4 machines × n token calls, every one a refresh.
	began := time.Now()
	procs := make([]*fleetProc, len(ms))
	for i, m := range ms {
		procs[i] = startMachine(t, m.env, "calls", "FLEET_N="+strconv.Itoa(n))
	}
	for i, p := range procs {
		res := p.result(t, 3*time.Minute)
		require.Equal(t, n, res.Calls, "machine %d", i)
		require.Empty(t, res.Codes, "machine %d: every call handed out a token", i)
	}
	st := w.srv.Stats()
	t.Logf("%d machines × %d token calls in %s: %d refreshes at the server", len(ms), n, time.Since(began).Round(time.Millisecond), st.Refreshes)
	require.GreaterOrEqual(t, st.Refreshes, n, "1-second tokens are refreshed")
	requireServerClean(t, w)
	requireGrantKept(t, w)

	// kill -9 of the lock's holder while its refresh is held at the server.
	before := w.srv.Stats().RefreshRequests
	w.srv.Script(authserver.Failure{Grant: "refresh_token", Delay: time.Minute})
	holder, _, _ := ms[0].start("token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	deadline := time.Now().Add(30 * time.Second)
	for w.srv.Stats().RefreshRequests == before {
		require.True(t, time.Now().Before(deadline), "the holder's refresh never reached the server")
		time.Sleep(5 * time.Millisecond)
	}
	waiter, out, errb := ms[1].start("token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	time.Sleep(300 * time.Millisecond) // the waiter queues on the lock
	killed := time.Now()
	require.NoError(t, holder.Process.Kill())
	require.Equal(t, 0, exitCode(waiter.Wait()), errb.String())
	proceeded := time.Since(killed)
	t.Logf("kill -9 of the lock's holder → the waiting machine handed out a token %s later", proceeded.Round(time.Millisecond))
	require.Less(t, proceeded, 15*time.Second, "within the refresh lock's bound (15 s)")
	require.True(t, strings.HasPrefix(strings.TrimSpace(out.String()), tokenPrefix+"_at_"))
	requireServerClean(t, w)

	// PostgreSQL stopped and started under a running process and fresh ones. Tokens live
	// an hour from here: calls hand out the stored token and write nothing.
	w.srv.Configure(func(c *authserver.Config) { c.ExpiresIn = 3600 })
	require.Equal(t, 0, ms[2].gw("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead).code)
	loop := startMachine(t, ms[3].env, "loop")
	require.True(t, loop.next(t, 30*time.Second).Ready)
	firstOK := loop.next(t, 30*time.Second)
	require.Empty(t, firstOK.Code, firstOK.Message)
	require.NoError(t, cl.Stop())
	stopped := time.Now()
	for i, m := range ms {
		e := m.fail(5, "STORE_UNAVAILABLE", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
		require.Contains(t, e.Error.Message, "store unavailable", "machine %d", i)
		require.Regexp(t, `^pg_isready -h 127\.0\.0\.1 -p [0-9]+$`, e.Error.Fix)
		require.Equal(t, 5, e.Error.Exit)
	}
	// The running process: its calls that start once the server is down fail the same way.
	for {
		l := loop.next(t, 30*time.Second)
		if l.Start < stopped.UnixNano() {
			continue
		}
		require.Equal(t, "STORE_UNAVAILABLE", l.Code, l.Message)
		require.Contains(t, l.Message, "store unavailable")
		break
	}
	started := time.Now()
	require.NoError(t, cl.Start())
	t.Logf("pg_ctl start took %s", time.Since(started).Round(time.Millisecond))
	for {
		l := loop.next(t, 30*time.Second)
		if l.Code == "" {
			t.Logf("the running process handed out tokens again %s after pg_ctl start began", time.Duration(l.End-started.UnixNano()).Round(time.Millisecond))
			break
		}
		require.Equal(t, "STORE_UNAVAILABLE", l.Code, l.Message)
	}
	for i, m := range ms {
		r := m.gw("", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
		require.Equal(t, 0, r.code, "machine %d, no manual step: %s", i, r.stderr)
	}
	requireGrantKept(t, w)
	requireServerClean(t, w)

	// A revoke on one machine: another machine's very next call is refused, and so is the
	// running process's first call that starts after it.
	r := ms[0].gw("", "grants", "revoke", "google", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	revoked := time.Now()
	e := ms[1].fail(4, "AGENT_NOT_GRANTED", "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Contains(t, e.Error.Fix, "grantwire grants grant google builtin:email")
	for {
		l := loop.next(t, 30*time.Second)
		if l.Start < revoked.UnixNano() {
			continue
		}
		require.Equal(t, "AGENT_NOT_GRANTED", l.Code, l.Message)
		break
	}
	loop.stop()
	requireServerClean(t, w)
}

// TestE2EStoreBadInput: what a machine is told when its store settings are wrong — a URL
// that is not PostgreSQL's, a server that refuses the password, no key, another key, a
// schema from a newer grantwire — each exit 5 with what to do, the password never shown,
// and nothing in the store changed (the grant made first is still there).
func TestE2EStoreBadInput(t *testing.T) {
	w, db, _ := storeWorld(t, authserver.Config{})
	w.env = append(w.env, "GRANTWIRE_STORE="+db)
	w.gwJSON("", 0, nil, "grants", "grant", "mcp-github", "builtin:chat", "--scopes", "")
	pw := pgtest.Password(db)
	other := filepath.Join(w.home, "other.key")
	require.Equal(t, 0, w.gw("", "store", "new-key", other).code)
	for _, c := range []struct {
		name, code string
		args       []string
		says       []string
	}{
		{"not PostgreSQL", "IO_ERROR", []string{"--store", "mysql://u:" + pw + "@127.0.0.1/db"}, []string{"not a PostgreSQL URL", "postgres://USER:PASSWORD@HOST:5432/DATABASE"}},
		{"wrong password", "IO_ERROR", []string{"--store", strings.Replace(db, ":"+pw+"@", ":wrong-PLANTED@", 1)}, []string{"refused the login", "check the user and password"}},
		{"no key", "INSECURE_STORE", []string{"--store", db}, []string{"no key-encryption key", "grantwire store new-key"}},
		{"another key", "INSECURE_STORE", []string{"--store", db}, []string{"does not hold"}},
	} {
		env := w.env
		switch c.name {
		case "no key":
			w.env = slices.DeleteFunc(slices.Clone(env), func(e string) bool { return strings.HasPrefix(e, "GRANTWIRE_STORE_KEY_FILE=") })
		case "another key":
			w.env = append(slices.Clone(env), "GRANTWIRE_STORE_KEY_FILE="+other)
		}
		e := w.fail(5, c.code, append(c.args, "grants", "list")...)
		w.env = env
		for _, s := range c.says {
			require.Contains(t, e.Error.Message, s, c.name)
		}
		require.NotContains(t, e.Error.Message+e.Error.Fix, pw, c.name)
		require.NotContains(t, e.Error.Message+e.Error.Fix, "PLANTED", c.name)
	}
	// A schema from a newer grantwire: refused with what to do, nothing changed.
	conn, err := pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), "update grantwire.schema_version set version = version + 1")
	require.NoError(t, err)
	e := w.fail(5, "IO_ERROR", "grants", "list")
	require.Contains(t, e.Error.Message, "newer than this grantwire knows")
	require.Contains(t, e.Error.Message, "upgrade grantwire")
	_, err = conn.Exec(t.Context(), "update grantwire.schema_version set version = version - 1")
	require.NoError(t, err)
	var grants grantsDoc
	w.gwJSON("", 0, &grants, "grants", "list")
	require.Len(t, grants.Grants, 1, "nothing was lost")
}

// make fleet-demo runs end to end: machine B hands out a token from the connection machine
// A made through the shared PostgreSQL store, B's very next call after A's revoke is
// refused with the fix, nothing secret is printed, and the demo's directory is gone.
func TestFleetDemo(t *testing.T) {
	pgtest.URL(t, "./cmd/grantwire") // PostgreSQL is installed (the demo starts a cluster of its own)
	if testing.Short() {
		t.Skip("the fleet demo builds three binaries and starts its own PostgreSQL")
	}
	s := runDemo(t, "scripts/fleet-demo.sh",
		"$ A grantwire --store \"$STORE\" connect google --scopes openid,"+gmailRead,
		"Connected google as ada@example.com",
		"$ B grantwire --store \"$STORE\" status google",
		"machine B: an access token of ",
		"$ A grantwire --store \"$STORE\" grants revoke google builtin:email",
		"$ B grantwire --store \"$STORE\" token google --agent builtin:email --scopes "+gmailRead+"\n"+
			"grantwire: agent builtin:email is not granted "+gmailRead+" on google\n"+
			"fix: grantwire grants grant google builtin:email --scopes "+gmailRead+"\n"+
			"(exit code 4)",
	)
	require.Regexp(t, `(?m)^fleet-demo: ok: one connection shared by two machines through PostgreSQL; a revoke on A refused by B's next call$`, s)
	require.Regexp(t, `(?m)^ID +TYPE +STATE.*\ngoogle +oauth_pkce +connected +ada@example\.com`, s, "machine B sees A's connection")
	require.NotContains(t, s, "postgres://", "the store's URL carries its password")
	require.NotContains(t, s, "fleettok_", "no token the server issued is printed")
	m := regexp.MustCompile(`to (/\S+)/store\.key `).FindStringSubmatch(s)
	require.NotNil(t, m, "the demo says where it wrote the key")
	_, err := os.Stat(m[1])
	require.ErrorIs(t, err, fs.ErrNotExist, "the demo removes its directory")
}

// homeSnapshot is what a home holds: its ledger files' bytes and its keyring values.
func homeSnapshot(t *testing.T, dir, service string, users []string) (map[string]string, map[string]string) {
	t.Helper()
	files, secrets := map[string]string{}, map[string]string{}
	for _, name := range []string{layout.Grants, layout.Activations, layout.State, layout.MCPServers, layout.Agents, "mcp_remote.json"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			files[name] = string(b)
		}
	}
	for _, u := range users {
		if v, err := gokeyring.Get(service, u); err == nil {
			secrets[u] = v
		}
	}
	return files, secrets
}

func pgDumpText(t *testing.T, db string) string {
	t.Helper()
	out, err := exec.Command("pg_dump", "--no-owner", db).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// TestStoreCopyBothWays: a home configured by the CLI (an OAuth client, a connection, an
// MCP server's key, grants) goes to PostgreSQL with `store copy` and comes back into an
// empty home and keyring byte for byte, on the real Secret Service and the real
// PostgreSQL; no secret is in the dump, the output, or any file on the way; a copy that
// would overwrite other values copies nothing; the wrong key is refused with the fix.
func TestStoreCopyBothWays(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	db := pgtest.Database(t, "./cmd/grantwire")
	w.plant(pgtest.Password(db))
	key := filepath.Join(w.home, "store.key")
	r := w.gw("", "store", "new-key", key)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "wrote the key k")
	w.env = append(w.env, "GRANTWIRE_STORE_KEY_FILE="+key)

	clientSecret, refresh, apiKey := "client-secret-PLANTED-"+randHex(4), "refresh-PLANTED-"+randHex(4), "brave-PLANTED-"+randHex(4)
	w.plant(refresh, apiKey)
	w.configureClient("123.apps.googleusercontent.com", clientSecret)
	require.NoError(t, gokeyring.Set(w.service, "google:default", layout.Connection{AccountEmail: "user@example.com",
		ClientIDHash: layout.ClientIDHash("123.apps.googleusercontent.com"), ConnectedAt: 1790000000123, RefreshToken: refresh,
		Scopes: []string{gmailRead}}.Encode()))
	r = w.gw("BRAVE_API_KEY="+apiKey+"\n", "configure", "mcp-brave-search", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	w.gwJSON("", 0, nil, "grants", "grant", "google", "builtin:email", "--scopes", gmailRead)

	home := filepath.Join(w.home, ".grantwire")
	users := []string{"google:default", "provider:google", "mcp-brave-search:BRAVE_API_KEY"}
	files, secrets := homeSnapshot(t, home, w.service, users)
	require.Len(t, secrets, 3)
	require.Contains(t, files, layout.Grants)
	require.Contains(t, files, layout.MCPServers)

	r = w.gw("", "store", "copy", "--from", home, "--to", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "secrets (keyring service "+w.service+")")
	require.Contains(t, r.stdout, " 3 secrets")
	dump := pgDumpText(t, db)
	require.Contains(t, dump, "mcp-brave-search:BRAVE_API_KEY")
	for _, s := range []string{clientSecret, refresh, apiKey} {
		require.NotContains(t, dump, s, "the dump shows a secret")
	}
	r = w.gw("", "store", "copy", "--from", home, "--to", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "copied 0 ledgers and 0 secrets", "a second copy finds everything there")

	// Back, into an empty home and an empty keyring service.
	require.NoError(t, gokeyring.DeleteAll(w.service))
	require.NoError(t, os.RemoveAll(home))
	r = w.gw("", "store", "copy", "--from", db, "--to", home)
	require.Equal(t, 0, r.code, r.stderr)
	files2, secrets2 := homeSnapshot(t, home, w.service, users)
	require.Equal(t, files, files2, "the ledgers came back byte for byte")
	require.Equal(t, secrets, secrets2, "the secrets came back")
	var status struct {
		Connections []struct {
			Provider  string `json:"provider"`
			Connected bool   `json:"connected"`
		} `json:"connections"`
	}
	w.gwJSON("", 0, &status, "status")

	// Another value at the destination: nothing is copied without --replace.
	require.NoError(t, gokeyring.Set(w.service, "mcp-brave-search:BRAVE_API_KEY", "changed-PLANTED-"+randHex(4)))
	r = w.gw("", "store", "copy", "--from", db, "--to", home)
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, "already holds other values")
	require.Contains(t, r.stderr, "--replace")
	r = w.gw("", "store", "copy", "--from", db, "--to", home, "--replace")
	require.Equal(t, 0, r.code, r.stderr)
	_, secrets3 := homeSnapshot(t, home, w.service, users)
	require.Equal(t, secrets, secrets3)

	// The wrong key: refused, with the fix.
	other := filepath.Join(w.home, "other.key")
	require.Equal(t, 0, w.gw("", "store", "new-key", other).code)
	r = w.gw("", "store", "copy", "--from", db, "--to", home, "--key-file", other)
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, "does not hold")
	require.Contains(t, r.stderr, "put the store's key in "+other)
	require.NotContains(t, r.stderr, "fix:", "no command fixes a wrong key")
	r = w.gw("", "store", "new-key", other)
	require.Equal(t, 2, r.code, "new-key never replaces a key")
}

// TestStoreCopyGAIAHome: a GAIA installation's home (~/.gaia) and its keyring service,
// with a value large enough for GAIA's chunked layout, goes to the store under its own
// home name and comes back into an empty ~/.gaia unchanged.
func TestStoreCopyGAIAHome(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	db := pgtest.Database(t, "./cmd/grantwire")
	key := filepath.Join(w.home, "store.key")
	require.Equal(t, 0, w.gw("", "store", "new-key", key).code)
	gaia, service := filepath.Join(w.home, ".gaia"), "gaia.connections.test."+randHex(4)
	t.Cleanup(func() { _ = gokeyring.DeleteAll(service) })
	refresh := "gaia-refresh-PLANTED-" + randHex(4) + strings.Repeat("x", 3000) // GAIA chunks it
	apiKey := "gaia-key-PLANTED-" + randHex(4)
	w.plant(refresh[:30], apiKey)
	require.NoError(t, os.MkdirAll(filepath.Join(gaia, "connectors"), 0o700))
	ledgers := map[string]string{
		layout.Grants: `{"microsoft":{"builtin:email":["Mail.Read"]}}` + "\n",
		layout.State:  `{"microsoft":{"account":"u@example.com","configured":true,"connected_at":1790000000000,"scopes":["Mail.Read"]}}` + "\n",
		layout.MCPServers: `{"mcpServers":{"mcp-tavily":{"args":[],"command":"tavily-mcp","env":{"TAVILY_API_KEY":{"$keyring":"` +
			service + `:mcp-tavily:TAVILY_API_KEY"}}}}}` + "\n",
	}
	for name, doc := range ledgers {
		require.NoError(t, os.WriteFile(filepath.Join(gaia, name), []byte(doc), 0o600))
	}
	require.NoError(t, os.Chmod(filepath.Join(gaia, "connectors"), 0o700))
	// GAIA writes the connection through its chunked layout; grantwire's shell reads it.
	blob := `{"account_email":"u@example.com","client_id_hash":"0a1b2c3d","connected_at":1790000000.0,"refresh_token":"` + refresh + `","scopes":["Mail.Read"]}`
	require.NoError(t, gokeyring.Set(service, "mcp-tavily:TAVILY_API_KEY", apiKey))
	setChunked(t, service, "microsoft:default", blob)

	env := append([]string(nil), w.env...)
	w.env = append(w.env, "GRANTWIRE_STORE_KEY_FILE="+key)
	defer func() { w.env = env }()
	r := w.gw("", "--keyring-service", service, "store", "copy", "--from", gaia, "--to", db, "--store-home", "gaia")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "copied 3 ledgers and 2 secrets")
	require.NotContains(t, pgDumpText(t, db), refresh[:30])

	require.NoError(t, gokeyring.DeleteAll(service))
	require.NoError(t, os.RemoveAll(gaia))
	r = w.gw("", "--keyring-service", service, "store", "copy", "--from", db, "--to", gaia, "--store-home", "gaia")
	require.Equal(t, 0, r.code, r.stderr)
	for name, doc := range ledgers {
		b, err := os.ReadFile(filepath.Join(gaia, name))
		require.NoError(t, err)
		require.Equal(t, doc, string(b), name)
	}
	v, err := gokeyring.Get(service, "mcp-tavily:TAVILY_API_KEY")
	require.NoError(t, err)
	require.Equal(t, apiKey, v)
	got := readChunked(t, service, "microsoft:default")
	require.Equal(t, blob, got, "the chunked connection came back whole")
}

// gaiaSentinel starts GAIA's manifest of a value stored in parts (hostabi/README.md).
const gaiaSentinel = "\x00gaia-chunked\x00"

// setChunked stores a value as GAIA does when it is long: parts of 1024 characters at
// "<user>#<n>", then the manifest "<sentinel><count>:<crc32>" in the slot itself.
func setChunked(t *testing.T, service, user, value string) {
	t.Helper()
	n := 0
	for rest := value; rest != ""; n++ {
		part := rest[:min(1024, len(rest))]
		rest = rest[len(part):]
		require.NoError(t, gokeyring.Set(service, user+"#"+strconv.Itoa(n), part))
	}
	require.NoError(t, gokeyring.Set(service, user, gaiaSentinel+strconv.Itoa(n)+":"+fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(value)))))
}

// readChunked reads a value stored whole or in GAIA's parts.
func readChunked(t *testing.T, service, user string) string {
	t.Helper()
	v, err := gokeyring.Get(service, user)
	require.NoError(t, err)
	body, ok := strings.CutPrefix(v, gaiaSentinel)
	if !ok {
		return v
	}
	count, err := strconv.Atoi(strings.Split(body, ":")[0])
	require.NoError(t, err)
	var b strings.Builder
	for i := range count {
		part, err := gokeyring.Get(service, user+"#"+strconv.Itoa(i))
		require.NoError(t, err)
		b.WriteString(part)
	}
	return b.String()
}

// pendingFile finds a machine's store-pending.json ("" when there is none).
func pendingFile(t *testing.T, m *machine) string {
	t.Helper()
	var found string
	require.NoError(t, filepath.WalkDir(m.home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "store-pending.json" {
			found = p
		}
		return err
	}))
	return found
}

// TestE2ERotationKeptWhileStoreDown is issue 22's last store defect: PostgreSQL stops
// exactly between the provider's answer to a refresh (it has rotated the refresh token and
// retired the old one) and the write of the new token. The server stops PostgreSQL itself
// before it sends its answer, so the moment is the same on every run. Then:
//   - the machine that refreshed keeps the rotated token sealed in its home (no token in
//     plain text there), says so, and hands out the new access token;
//   - once PostgreSQL is back, another machine does not refresh with the retired token: the
//     lock is in doubt (BUSY, exit 75) while the holder has not written what it kept;
//   - the holder's next command writes it and refreshes with it; then the other machine
//     refreshes too: 0 reuse, 0 invalid_grant, nothing revoked, the grant kept.
func TestE2ERotationKeptWhileStoreDown(t *testing.T) {
	w, cl, ms := fleetWorld(t, 1)
	a, b := ms[0], ms[1]
	token := []string{"token", "google", "--agent", "builtin:email", "--scopes", gmailRead}
	r := a.gw("", token...)
	require.Equal(t, 0, r.code, r.stderr)
	refreshes := w.srv.Stats().Refreshes

	stopped := false
	w.srv.Script(authserver.Failure{Grant: "refresh_token", BeforeAnswer: func() {
		require.NoError(t, cl.Stop())
		stopped = true
	}})
	r = a.gw("", token...)
	require.True(t, stopped, "PostgreSQL was stopped before the answer was sent")
	require.Equal(t, 0, r.code, "the caller gets its token: %s", r.stderr)
	require.True(t, strings.HasPrefix(strings.TrimSpace(r.stdout), tokenPrefix+"_at_"))
	require.Contains(t, r.stderr, "is kept sealed in", "the user is told where it is kept")
	require.Equal(t, refreshes+1, w.srv.Stats().Refreshes, "the provider rotated the refresh token")
	kept := pendingFile(t, a)
	require.NotEmpty(t, kept, "the rotated token is kept on the machine")
	fi, err := os.Stat(kept)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	raw, err := os.ReadFile(kept)
	require.NoError(t, err)
	require.NotContains(t, string(raw), tokenPrefix, "sealed: no token in plain text")

	require.NoError(t, cl.Start())
	requests := w.srv.Stats().RefreshRequests
	b.fail(75, "BUSY", token...)
	require.Equal(t, requests, w.srv.Stats().RefreshRequests, "no refresh with the retired token while the lock is in doubt")

	r = a.gw("", token...)
	require.Equal(t, 0, r.code, "the holder writes what it kept, and refreshes with it: %s", r.stderr)
	require.True(t, strings.HasPrefix(strings.TrimSpace(r.stdout), tokenPrefix+"_at_"))
	require.Empty(t, pendingFile(t, a), "nothing is kept once the store took it")
	r = b.gw("", token...)
	require.Equal(t, 0, r.code, r.stderr)
	requireServerClean(t, w)
	requireGrantKept(t, w)
}

// A machine of a fleet as a process of its own: the test binary started again with
// fleetMachineEnv set runs fleetMachine instead of the tests (TestMain). It opens the Go
// API (grantwire.Open, and grantwire.WithStore when GRANTWIRE_STORE is set) on its own home,
// as a long-running program on that machine would, and hands out google tokens to
// builtin:email. What it did is one JSON line per event on stdout.

// fleetMachineEnv selects the helper's mode: calls (FLEET_N calls by FLEET_C callers),
// loop (calls back to back until killed, a line per call), rounds (commands on stdin:
// "calls N", "storm" (FLEET_C callers at once), "revoke", "grant").
const fleetMachineEnv = "GRANTWIRE_TEST_FLEET_MACHINE"

// fleetLine is one line a machine prints.
type fleetLine struct {
	Start, End int64          // unix ns of one call (loop, revoke)
	Code       string         // its error code ("" when it succeeded)
	Message    string         `json:",omitempty"`
	Calls      int            // calls made (calls, storm)
	Codes      map[string]int // error codes met (calls, storm)
	Tokens     int            // distinct access tokens handed out
	WaitsNS    []int64        // every call's time (calls, storm)
	Seconds    float64        // how long the calls took (calls)
	Ready      bool           // loop, rounds: the client is open
}

func fleetMachine() int {
	mode := os.Getenv(fleetMachineEnv)
	ctx := context.Background()
	opts := []grantwire.Option{grantwire.WithCatalog(catalog.File(os.Getenv("GRANTWIRE_CATALOG")))}
	if url := os.Getenv("GRANTWIRE_STORE"); url != "" {
		opts = append(opts, grantwire.WithStore(url, postgres.Options{NoWatch: true, MaxConns: 8}))
	}
	c, err := grantwire.Open(ctx, native.Options{Home: os.Getenv("GRANTWIRE_HOME"), Service: os.Getenv("GRANTWIRE_KEYRING_SERVICE"), NoWatch: true}, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet machine:", err)
		return 3
	}
	defer c.Close(ctx)
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	emit := func(l fleetLine) {
		mu.Lock()
		defer mu.Unlock()
		_ = out.Encode(l)
	}
	callers, _ := strconv.Atoi(os.Getenv("FLEET_C"))
	callers = max(callers, 1)
	call := func() (string, string, string) {
		t, err := c.GetAccessToken(ctx, "google", []string{gmailRead}, "builtin:email")
		var ge *grantwire.Error
		switch {
		case err == nil:
			return t.AccessToken, "", ""
		case errors.As(err, &ge):
			return "", ge.Code, ge.Summary
		}
		return "", "GO_ERROR", err.Error()
	}
	// one makes one call and adds what it met to sum (its token to tokens).
	one := func(sum *fleetLine, tokens map[string]bool) {
		start := time.Now()
		tok, code, _ := call()
		d := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		sum.Calls++
		sum.WaitsNS = append(sum.WaitsNS, int64(d))
		if code != "" {
			sum.Codes[code]++
		} else {
			tokens[tok] = true
		}
	}
	// run has every caller call until next says stop, and sums what they met.
	run := func(next func() bool) fleetLine {
		sum := fleetLine{Codes: map[string]int{}}
		tokens := map[string]bool{}
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next() {
					one(&sum, tokens)
				}
			}()
		}
		wg.Wait()
		sum.Tokens = len(tokens)
		return sum
	}
	calls := func(n int) fleetLine {
		left := n
		var lmu sync.Mutex
		began := time.Now()
		sum := run(func() bool {
			lmu.Lock()
			defer lmu.Unlock()
			left--
			return left >= 0
		})
		sum.Seconds = time.Since(began).Seconds()
		return sum
	}
	// storm: every caller calls once, all at the same moment.
	storm := func() fleetLine {
		sum := fleetLine{Codes: map[string]int{}}
		tokens := map[string]bool{}
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				one(&sum, tokens)
			}()
		}
		time.Sleep(20 * time.Millisecond) // every caller waits at the gate
		close(gate)
		wg.Wait()
		sum.Tokens = len(tokens)
		return sum
	}
	timed := func(f func() error) fleetLine {
		start := time.Now()
		err := f()
		l := fleetLine{Start: start.UnixNano(), End: time.Now().UnixNano()}
		if err != nil {
			l.Code, l.Message = "GO_ERROR", err.Error()
		}
		return l
	}
	switch mode {
	case "calls":
		n, _ := strconv.Atoi(os.Getenv("FLEET_N"))
		emit(calls(n))
	case "loop":
		emit(fleetLine{Ready: true})
		for {
			start := time.Now()
			_, code, msg := call()
			emit(fleetLine{Start: start.UnixNano(), End: time.Now().UnixNano(), Code: code, Message: msg})
			time.Sleep(2 * time.Millisecond) // back to back, without flooding the test with failures
		}
	case "rounds":
		// One command a line on stdin: "calls N", "storm", "revoke", "grant".
		emit(fleetLine{Ready: true})
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "calls":
				n, _ := strconv.Atoi(f[1])
				emit(calls(n))
			case len(f) == 1 && f[0] == "storm":
				emit(storm())
			case len(f) == 1 && f[0] == "revoke":
				emit(timed(func() error { _, err := c.Revoke(ctx, "google", "builtin:email"); return err }))
			case len(f) == 1 && f[0] == "grant":
				emit(timed(func() error { _, err := c.Grant(ctx, "google", "builtin:email", []string{gmailRead}); return err }))
			default:
				fmt.Fprintln(os.Stderr, "fleet machine: unknown command", sc.Text())
				return 2
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "fleet machine: unknown mode", mode)
		return 2
	}
	return 0
}

// fleetProc is a running machine process.
type fleetProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser // rounds: the commands
	lines chan fleetLine
	done  chan struct{}
	err   error
	errb  *testenv.Buffer
}

// startMachine starts the test binary as a machine of mode with env (the machine's HOME,
// GRANTWIRE_HOME, cache, store, …) and extra settings.
func startMachine(t testing.TB, env []string, mode string, extra ...string) *fleetProc {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(append(append([]string(nil), env...), fleetMachineEnv+"="+mode), extra...)
	p := &fleetProc{cmd: cmd, lines: make(chan fleetLine, 1<<16), done: make(chan struct{}), errb: &testenv.Buffer{}}
	cmd.Stderr = p.errb
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	if p.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var l fleetLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				p.lines <- l
			}
		}
		p.err = cmd.Wait()
		close(p.lines)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// next returns the machine's next line (it fails the test when the machine ends first or
// says nothing within d).
// do sends a rounds machine a command and returns its answer.
func (p *fleetProc) do(t testing.TB, command string) fleetLine {
	t.Helper()
	_, err := io.WriteString(p.in, command+"\n")
	require.NoError(t, err)
	l := p.next(t, 2*time.Minute)
	require.Empty(t, l.Message, command)
	return l
}

// stop kills the machine (SIGKILL) and waits for it.
func (p *fleetProc) stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *fleetProc) next(t testing.TB, d time.Duration) fleetLine {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("the machine ended (%v) without a line: %s", p.err, p.errb.String())
		}
		return l
	case <-time.After(d):
		t.Fatalf("the machine said nothing within %s: %s", d, p.errb.String())
	}
	return fleetLine{}
}

// result waits for the machine's last line and its exit 0.
func (p *fleetProc) result(t testing.TB, d time.Duration) fleetLine {
	t.Helper()
	l := p.next(t, d)
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("the machine did not end within %s", d)
	}
	require.NoError(t, p.err, p.errb.String())
	return l
}
