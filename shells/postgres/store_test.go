package postgres_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/pgtest"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/postgres"
)

const pkg = "./shells/postgres"

func open(t testing.TB, db string, opts postgres.Options) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), db, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func caps(st *postgres.Store) hostabi.Capabilities { return st.Capabilities(hostabi.Capabilities{}) }

func exec1(t testing.TB, db, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func hostErr(t testing.TB, err error) *hostabi.HostError {
	t.Helper()
	var he *hostabi.HostError
	require.ErrorAs(t, err, &he, "want a host error, got %v", err)
	return he
}

// TestLedgersCompareAndSet: two processes (Stores with their own connections) patch one
// ledger concurrently and lose no update; versions change with every write and are never
// reused; bytes are kept exactly (a corrupt document too).
func TestLedgersCompareAndSet(t *testing.T) {
	db := pgtest.Database(t, pkg)
	kf := writeKeyFile(t, t.TempDir())
	a, b := caps(open(t, db, postgres.Options{KeyFile: kf})), caps(open(t, db, postgres.Options{KeyFile: kf}))
	ctx := context.Background()
	doc, v, err := a.Files.Read(ctx, "connectors/grants.json")
	require.NoError(t, err)
	require.Nil(t, doc)
	require.Equal(t, "", v)

	const each = 40
	seen := sync.Map{}
	files := []hostabi.Files{a.Files, b.Files}
	testenv.InParallel(t, len(files), each, func(w, _ int) error {
		f := files[w]
		err := f.Update(ctx, "counter.json", func(cur []byte, version string) ([]byte, error) {
			n := 0
			if cur != nil {
				n, _ = strconv.Atoi(strings.TrimSpace(string(cur)))
			}
			return []byte(strconv.Itoa(n+1) + "\n"), nil
		})
		if err != nil {
			return err
		}
		_, v, _ := f.Read(ctx, "counter.json")
		seen.Store(v, true)
		return nil
	})
	doc, _, err = b.Files.Read(ctx, "counter.json")
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(2*each)+"\n", string(doc), "no update was lost")
	n := 0
	seen.Range(func(any, any) bool { n++; return true })
	require.Greater(t, n, each, "versions change with every write")

	raw := []byte("{\"a\": 1,, \xff")
	require.NoError(t, a.Files.Update(ctx, "connectors/activations.json", func([]byte, string) ([]byte, error) { return raw, nil }))
	got, v1, err := b.Files.Read(ctx, "connectors/activations.json")
	require.NoError(t, err)
	require.Equal(t, raw, got, "bytes are kept exactly")
	// A patch whose precondition fails writes nothing.
	err = b.Files.Update(ctx, "connectors/activations.json", func(_ []byte, version string) ([]byte, error) {
		return nil, fmt.Errorf("%w: changed", hostabi.ErrConflict)
	})
	require.ErrorIs(t, err, hostabi.ErrConflict)
	_, v2, _ := a.Files.Read(ctx, "connectors/activations.json")
	require.Equal(t, v1, v2)
	require.Error(t, a.Files.Update(ctx, "../outside.json", func([]byte, string) ([]byte, error) { return nil, nil }))
}

// TestLedgerTooLargeIsRefused: a row over 16 MiB is refused as a file would be, and left
// as it is.
func TestLedgerTooLargeIsRefused(t *testing.T) {
	db := pgtest.Database(t, pkg)
	st := open(t, db, postgres.Options{KeyFile: writeKeyFile(t, t.TempDir())})
	exec1(t, db, `insert into grantwire.ledgers (home, name, doc, version) values ('default', 'connectors/grants.json', convert_to(repeat('x', $1), 'UTF8'), nextval('grantwire.ledger_versions'))`, postgres.MaxLedgerBytes+1)
	_, _, err := caps(st).Files.Read(context.Background(), "connectors/grants.json")
	var refused *hostabi.FileRefused
	require.ErrorAs(t, err, &refused)
	require.Equal(t, hostabi.RefusedTooLarge, refused.Reason)
	require.Contains(t, refused.Path, "/default/connectors/grants.json")
	err = caps(st).Files.Update(context.Background(), "connectors/grants.json", func([]byte, string) ([]byte, error) { return []byte("{}"), nil })
	require.ErrorAs(t, err, &refused)
}

// planted are secret values the leak checks search for.
var planted = []string{"refresh-PLANTED-7f3a9c", "client-secret-PLANTED-19bd", "api-key-PLANTED-c0ffee"}

// forms are the ways a value could show in a dump or a log: as it is, as PostgreSQL's hex
// of bytea, in base64.
func forms(v string) []string {
	return []string{v, hex.EncodeToString([]byte(v)), base64.StdEncoding.EncodeToString([]byte(v))[:12]}
}

func requireNoSecret(t testing.TB, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, f := range forms(s) {
			require.NotContains(t, text, f, "%s shows a secret", where)
		}
	}
}

func pgDump(t testing.TB, db string) string {
	t.Helper()
	out, err := exec.Command("pg_dump", "--no-owner", db).CombinedOutput()
	require.NoError(t, err, "pg_dump: %s", out)
	return string(out)
}

// TestSecretsAreSealed: values round-trip; pg_dump of the whole database shows none of
// them in any form, nor the key; a sealed value moved to another row, or changed, does not
// open, and the error says so without a value; the row is left as it is.
func TestSecretsAreSealed(t *testing.T) {
	db := pgtest.Database(t, pkg)
	dir := t.TempDir()
	kf := writeKeyFile(t, dir)
	keyText, _ := os.ReadFile(kf)
	st := open(t, db, postgres.Options{KeyFile: kf})
	k := caps(st).Keyring
	ctx := context.Background()
	users := []string{"google:default", "provider:google", "mcp-brave:BRAVE_API_KEY"}
	for i, u := range users {
		require.NoError(t, k.Set(ctx, "grantwire.connections", u, `{"refresh_token":"`+planted[i]+`"}`))
	}
	for i, u := range users {
		v, err := k.Get(ctx, "grantwire.connections", u)
		require.NoError(t, err)
		require.Equal(t, `{"refresh_token":"`+planted[i]+`"}`, v)
	}
	_, err := k.Get(ctx, "grantwire.connections", "absent:default")
	require.ErrorIs(t, err, hostabi.ErrNotFound)
	require.NoError(t, k.Delete(ctx, "grantwire.connections", "absent:default"))

	dump := pgDump(t, db)
	require.Contains(t, dump, "google:default", "the dump holds the rows")
	requireNoSecret(t, "pg_dump", dump, planted...)
	lines := strings.Split(strings.TrimSpace(string(keyText)), "\n")
	require.NotContains(t, dump, lines[len(lines)-1], "the key-encryption key is never stored")

	// Move google's seal onto provider:google's row: it must not open there.
	exec1(t, db, `update grantwire.secrets set sealed = (select sealed from grantwire.secrets where "user" = 'google:default'),
		wrapped_key = (select wrapped_key from grantwire.secrets where "user" = 'google:default') where "user" = 'provider:google'`)
	_, err = k.Get(ctx, "grantwire.connections", "provider:google")
	he := hostErr(t, err)
	require.Equal(t, hostabi.HostErrInsecureStore, he.Code)
	require.Contains(t, he.Detail, "does not open")
	require.Contains(t, he.Detail, "left as it is")
	requireNoSecret(t, "the error", he.Detail+he.Fix, planted...)
	// One flipped byte of a seal.
	exec1(t, db, `update grantwire.secrets set sealed = set_byte(sealed, 20, get_byte(sealed, 20) # 1) where "user" = 'mcp-brave:BRAVE_API_KEY'`)
	_, err = k.Get(ctx, "grantwire.connections", "mcp-brave:BRAVE_API_KEY")
	require.Equal(t, hostabi.HostErrInsecureStore, hostErr(t, err).Code)
	// The other secret is untouched.
	v, err := k.Get(ctx, "grantwire.connections", "google:default")
	require.NoError(t, err)
	require.Contains(t, v, planted[0])
}

// TestKeyErrors: no key, a key file others can read (and its fix, run), a malformed key
// (never echoed), the wrong key for a store, a key from an environment variable.
func TestKeyErrors(t *testing.T) {
	db := pgtest.Database(t, pkg)
	dir := t.TempDir()
	ctx := context.Background()
	noEnv := func(string) string { return "" }

	_, err := postgres.Open(ctx, db, postgres.Options{Getenv: noEnv})
	he := hostErr(t, err)
	require.Equal(t, hostabi.HostErrInsecureStore, he.Code)
	require.Contains(t, he.Detail, postgres.KeyFileEnv)
	require.Contains(t, he.Detail, "grantwire store new-key")

	kf := writeKeyFile(t, dir)
	require.NoError(t, os.Chmod(kf, 0o644))
	_, err = postgres.Open(ctx, db, postgres.Options{KeyFile: kf})
	he = hostErr(t, err)
	require.Equal(t, "chmod 600 "+kf, he.Fix)
	out, err := exec.Command("sh", "-c", he.Fix).CombinedOutput()
	require.NoError(t, err, "%s", out)
	st := open(t, db, postgres.Options{KeyFile: kf})
	require.NoError(t, caps(st).Keyring.Set(ctx, "s", "u", planted[0]))

	bad := filepath.Join(dir, "bad.key")
	require.NoError(t, os.WriteFile(bad, []byte("# a comment\nnot-a-key-PLANTED-c0ffee\n"), 0o600))
	_, err = postgres.Open(ctx, db, postgres.Options{KeyFile: bad})
	he = hostErr(t, err)
	require.Contains(t, he.Detail, "line 2 of "+bad)
	require.NotContains(t, he.Detail+he.Fix, "PLANTED")

	other := writeKeyFile(t, t.TempDir())
	_, err = postgres.Open(ctx, db, postgres.Options{KeyFile: other})
	he = hostErr(t, err)
	require.Contains(t, he.Detail, st.KeyID())
	require.Contains(t, he.Detail, "does not hold")
	require.Contains(t, he.Detail, "put the store's key in "+other)

	text, _ := os.ReadFile(kf)
	env := map[string]string{"MY_STORE_KEY": string(text)}
	st2 := open(t, db, postgres.Options{KeyEnv: "MY_STORE_KEY", Getenv: func(k string) string { return env[k] }})
	v, err := caps(st2).Keyring.Get(ctx, "s", "u")
	require.NoError(t, err)
	require.Equal(t, planted[0], v)
	_, err = postgres.Open(ctx, db, postgres.Options{KeyEnv: "UNSET_KEY", Getenv: noEnv})
	require.Contains(t, hostErr(t, err).Detail, "UNSET_KEY")
}

// TestRotateKey: a rotation re-wraps every data key while another process keeps writing;
// afterwards a machine with only the new key reads everything, one with only the old key
// is told which key it lacks; values never change.
func TestRotateKey(t *testing.T) {
	db := pgtest.Database(t, pkg)
	dir := t.TempDir()
	oldFile := writeKeyFile(t, dir)
	newFile := writeKeyFile(t, t.TempDir())
	oldText, _ := os.ReadFile(oldFile)
	newText, _ := os.ReadFile(newFile)
	both := filepath.Join(dir, "both.key")
	require.NoError(t, os.WriteFile(both, append(append([]byte{}, oldText...), newText...), 0o600))
	ctx := context.Background()

	writer := open(t, db, postgres.Options{KeyFile: oldFile})
	oldID := writer.KeyID()
	k := caps(writer).Keyring
	const n = 60
	for i := range n {
		require.NoError(t, k.Set(ctx, "svc", fmt.Sprintf("u%02d", i), fmt.Sprintf("value-%d", i)))
	}
	// The writer's machine gets the new key beside the old one before the rotation (it
	// reads its key file again when it meets a key it does not hold).
	require.NoError(t, os.WriteFile(oldFile, append(append([]byte{}, oldText...), newText...), 0o600))

	rotator := open(t, db, postgres.Options{KeyFile: both})
	newID := idOf(string(newText))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	writes := 0
	go func() { // another process keeps rewriting u00..u09 during the rotation
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := k.Set(ctx, "svc", fmt.Sprintf("u%02d", i%10), fmt.Sprintf("value-%d", i%10)); err != nil {
				t.Error(err)
				return
			}
			writes++
		}
	}()
	rot, err := rotator.RotateKey(ctx, newID)
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	require.Equal(t, []string{oldID}, rot.From)
	require.Equal(t, newID, rot.To)
	require.Zero(t, rot.Left)
	require.Greater(t, writes, 0)
	t.Logf("rotation: %d data keys wrapped again while %d writes went on", rot.Rewrapped, writes)

	onlyNew := open(t, db, postgres.Options{KeyFile: newFile})
	require.Equal(t, newID, onlyNew.KeyID())
	for i := range n {
		v, err := caps(onlyNew).Keyring.Get(ctx, "svc", fmt.Sprintf("u%02d", i))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("value-%d", i), v)
	}
	onlyOld := filepath.Join(t.TempDir(), "old.key")
	require.NoError(t, os.WriteFile(onlyOld, oldText, 0o600))
	_, err = postgres.Open(ctx, db, postgres.Options{KeyFile: onlyOld})
	require.Contains(t, hostErr(t, err).Detail, newID)
	requireNoSecret(t, "pg_dump", pgDump(t, db), "value-1", "value-42")
}

// TestLocksAcrossProcesses: a lock held by one Store is busy for another past its wait
// (and not before), is handed over as soon as it is released, and a cancelled wait ends.
func TestLocksAcrossProcesses(t *testing.T) {
	db := pgtest.Database(t, pkg)
	kf := writeKeyFile(t, t.TempDir())
	a, b := caps(open(t, db, postgres.Options{KeyFile: kf})), caps(open(t, db, postgres.Options{KeyFile: kf}))
	other := caps(open(t, db, postgres.Options{KeyFile: kf, Service: "gaia.connections"}))
	ctx := context.Background()
	release, err := a.Locks.TryLock(ctx, "google", 0)
	require.NoError(t, err)
	start := time.Now()
	_, err = b.Locks.TryLock(ctx, "google", 150*time.Millisecond)
	require.ErrorIs(t, err, hostabi.ErrBusy)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	_, err = a.Locks.TryLock(ctx, "google", 20*time.Millisecond)
	require.ErrorIs(t, err, hostabi.ErrBusy, "the same process queues too")
	r2, err := other.Locks.TryLock(ctx, "google", 0)
	require.NoError(t, err, "another keyring service has locks of its own")
	r2()

	got := make(chan time.Time, 1)
	go func() {
		rel, err := b.Locks.TryLock(ctx, "google", 10*time.Second)
		if err != nil {
			t.Error(err)
			got <- time.Time{}
			return
		}
		got <- time.Now()
		rel()
	}()
	time.Sleep(100 * time.Millisecond)
	released := time.Now()
	release()
	release() // twice is fine
	at := <-got
	require.False(t, at.IsZero())
	require.Less(t, at.Sub(released), time.Second, "the waiter is woken when the lock is released")

	r3, err := a.Locks.TryLock(ctx, "google", 5*time.Second) // once the waiter released it
	require.NoError(t, err)
	defer r3()
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = b.Locks.TryLock(cctx, "google", 10*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = a.Locks.TryLock(ctx, "../google", 0)
	require.Error(t, err)
}

// TestHelperHoldLock is the process killed by TestKilledHolderFreesTheLock.
func TestHelperHoldLock(t *testing.T) {
	db, kf := os.Getenv("GW_PG_HOLD_URL"), os.Getenv("GW_PG_HOLD_KEY")
	if db == "" {
		t.Skip("the helper process of TestKilledHolderFreesTheLock")
	}
	st, err := postgres.Open(context.Background(), db, postgres.Options{KeyFile: kf})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := caps(st).Locks.TryLock(context.Background(), "google", time.Second); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	time.Sleep(time.Minute)
}

// TestKilledHolderFreesTheLock: kill -9 of the process holding a provider lock frees it
// at once (the server ends its session), so another process proceeds.
func TestKilledHolderFreesTheLock(t *testing.T) {
	db := pgtest.Database(t, pkg)
	kf := writeKeyFile(t, t.TempDir())
	b := caps(open(t, db, postgres.Options{KeyFile: kf}))
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GW_PG_HOLD_URL="+db, "GW_PG_HOLD_KEY="+kf)
	line := testenv.FirstLine(t, cmd)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Equal(t, "held", line)
	_, err := b.Locks.TryLock(context.Background(), "google", 50*time.Millisecond)
	require.ErrorIs(t, err, hostabi.ErrBusy)
	killed := time.Now()
	require.NoError(t, cmd.Process.Kill())
	rel, err := b.Locks.TryLock(context.Background(), "google", 10*time.Second)
	require.NoError(t, err)
	rel()
	t.Logf("the lock was free %v after kill -9 of its holder", time.Since(killed).Round(time.Millisecond))
	require.Less(t, time.Since(killed), 5*time.Second)
}

// TestSchema: concurrent first uses of an empty database migrate it once; a schema newer
// than this grantwire is refused, with the fix, and nothing is changed.
func TestSchema(t *testing.T) {
	db := pgtest.Database(t, pkg)
	kf := writeKeyFile(t, t.TempDir())
	testenv.InParallel(t, 6, 1, func(i, _ int) error {
		st, err := postgres.Open(context.Background(), db, postgres.Options{KeyFile: kf})
		if err != nil {
			return err
		}
		defer st.Close()
		return caps(st).Files.Update(context.Background(), fmt.Sprintf("l%d.json", i), func([]byte, string) ([]byte, error) { return []byte("{}"), nil })
	})
	exec1(t, db, "update grantwire.schema_version set version = $1", postgres.SchemaVersion+1)
	_, err := postgres.Open(context.Background(), db, postgres.Options{KeyFile: kf})
	he := hostErr(t, err)
	require.Contains(t, he.Detail, fmt.Sprintf("schema version %d, newer than this grantwire knows (%d)", postgres.SchemaVersion+1, postgres.SchemaVersion))
	require.Contains(t, he.Detail, "upgrade grantwire")
	require.Empty(t, he.Fix, "no command fixes it")
	exec1(t, db, "update grantwire.schema_version set version = $1", postgres.SchemaVersion)
	st := open(t, db, postgres.Options{KeyFile: kf})
	doc, _, err := caps(st).Files.Read(context.Background(), "l3.json")
	require.NoError(t, err)
	require.Equal(t, "{}", string(doc), "nothing was lost")
}

// TestBadURLs: each wrong store URL is refused with what to do, and never shows the
// password.
func TestBadURLs(t *testing.T) {
	base := pgtest.URL(t, pkg)
	kf := writeKeyFile(t, t.TempDir())
	pw := pgtest.Password(base)
	require.NotEmpty(t, pw, "the test cluster has a password")
	wrongPW := strings.Replace(base, ":"+pw+"@", ":wrong-PLANTED-pw@", 1)
	noDB := strings.TrimSuffix(base, "/grantwire") + "/no_such_db"
	cases := []struct{ url, detail, fix string }{
		{"mysql://u:" + pw + "@127.0.0.1/db", "not a PostgreSQL URL", "postgres://USER:PASSWORD@HOST:5432/DATABASE"},
		{"postgres://u:" + pw + "@127.0.0.1:1/db", "store unavailable: the PostgreSQL store postgres://u@127.0.0.1:1/db does not answer (connection refused", "pg_isready -h 127.0.0.1 -p 1"},
		{wrongPW, "refused the login", "check the user and password"},
		{noDB, "has no such database", "createdb -h 127.0.0.1"},
	}
	for _, c := range cases {
		_, err := postgres.Open(context.Background(), c.url, postgres.Options{KeyFile: kf, Timeout: 5 * time.Second})
		he := hostErr(t, err)
		require.Contains(t, he.Detail, c.detail, c.url)
		require.Contains(t, he.Detail+he.Fix, c.fix, c.url)
		require.NotContains(t, he.Detail+he.Fix, pw)
		require.NotContains(t, he.Detail+he.Fix, "PLANTED")
	}
}

// TestStoreStoppedMidRun: while PostgreSQL is stopped every capability fails clearly
// (unavailable, with the fix) and changes nothing; once it is started again the same
// Store works without any manual step, and nothing was lost.
func TestStoreStoppedMidRun(t *testing.T) {
	cl := pgtest.NewCluster(t, pkg)
	kf := writeKeyFile(t, t.TempDir())
	st := open(t, cl.URL, postgres.Options{KeyFile: kf, Timeout: 3 * time.Second})
	c := caps(st)
	ctx := context.Background()
	require.NoError(t, c.Keyring.Set(ctx, "svc", "google:default", planted[0]))
	require.NoError(t, c.Files.Update(ctx, "connectors/grants.json", func([]byte, string) ([]byte, error) { return []byte(`{"google":{}}`), nil }))

	require.NoError(t, cl.Stop())
	checks := map[string]error{}
	_, checks["keyring get"] = c.Keyring.Get(ctx, "svc", "google:default")
	checks["keyring set"] = c.Keyring.Set(ctx, "svc", "google:default", planted[1])
	_, _, checks["ledger read"] = c.Files.Read(ctx, "connectors/grants.json")
	checks["ledger write"] = c.Files.Update(ctx, "connectors/grants.json", func([]byte, string) ([]byte, error) { return []byte(`{}`), nil })
	_, checks["lock"] = c.Locks.TryLock(ctx, "google", 100*time.Millisecond)
	for what, err := range checks {
		he := hostErr(t, err)
		require.Equal(t, hostabi.HostErrStoreUnavailable, he.Code, what)
		require.Contains(t, he.Detail, "store unavailable: ", what)
		require.Regexp(t, `^pg_isready -h 127\.0\.0\.1 -p [0-9]+$`, he.Fix, what)
		requireNoSecret(t, what, he.Detail+he.Fix, planted[0], planted[1], pgtest.Password(cl.URL))
	}
	require.NoError(t, cl.Start())
	var v string
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if v, err = c.Keyring.Get(ctx, "svc", "google:default"); err == nil {
			break
		}
	}
	require.NoError(t, err)
	require.Equal(t, planted[0], v, "nothing was lost, nothing half-written")
	doc, _, err := c.Files.Read(ctx, "connectors/grants.json")
	require.NoError(t, err)
	require.Equal(t, `{"google":{}}`, string(doc))
	rel, err := c.Locks.TryLock(ctx, "google", time.Second)
	require.NoError(t, err)
	rel()
	requireNoSecret(t, "the server log", cl.ServerLog(), planted...)
}

// TestEventsAcrossStores: a change another process makes to the grants or the
// activations reaches this process's callbacks (as the OS shell's watcher's), this
// process's own writes do not, and a change made while the watcher's connection was cut
// is reported once it listens again.
func TestEventsAcrossStores(t *testing.T) {
	db := pgtest.Database(t, pkg)
	kf := writeKeyFile(t, t.TempDir())
	type change struct{ ledger, before, after string }
	got := make(chan change, 16)
	watcherStore := open(t, db, postgres.Options{KeyFile: kf, Home: "team",
		ActivationChanges: func(b, a json.RawMessage) { got <- change{"activations", string(b), string(a)} },
		GrantChanges:      func(b, a json.RawMessage) { got <- change{"grants", string(b), string(a)} }})
	other := caps(open(t, db, postgres.Options{KeyFile: kf, Home: "team"}))
	elsewhere := caps(open(t, db, postgres.Options{KeyFile: kf, Home: "another"}))
	ctx := context.Background()
	write := func(f hostabi.Files, name, doc string) {
		require.NoError(t, f.Update(ctx, name, func([]byte, string) ([]byte, error) { return []byte(doc), nil }))
	}
	next := func() change {
		select {
		case c := <-got:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no change reported")
		}
		return change{}
	}
	start := time.Now()
	write(other.Files, "connectors/grants.json", `{"google":{"builtin:chat":["gmail.readonly"]}}`)
	require.Equal(t, change{"grants", `{}`, `{"google":{"builtin:chat":["gmail.readonly"]}}`}, next())
	t.Logf("a grant on one process reached another's watcher in %v", time.Since(start).Round(time.Millisecond))
	write(other.Files, "connectors/activations.json", `{"version":1,"activations":{"google":{"builtin:chat":true}}}`)
	require.Equal(t, change{"activations", `{}`, `{"google":{"builtin:chat":true}}`}, next())
	write(elsewhere.Files, "connectors/grants.json", `{"x":{}}`)
	write(caps(watcherStore).Files, "connectors/grants.json", `{}`)
	select {
	case c := <-got:
		t.Fatalf("reported %+v: another home's write or this process's own", c)
	case <-time.After(300 * time.Millisecond):
	}
	// Cut the watcher's connection; a change made meanwhile is reported when it is back.
	exec1(t, db, `select pg_terminate_backend(pid) from pg_stat_activity where query like 'listen %' and datname = current_database()`)
	write(other.Files, "connectors/grants.json", `{"github":{}}`)
	require.Equal(t, change{"grants", `{}`, `{"github":{}}`}, next())
}

// idOf is the key id NewKey names in a key file's comment.
func idOf(keyText string) string {
	return strings.TrimSuffix(strings.Fields(keyText)[4], ",")
}

// TestMigrationsNumbered: the migrations are 001_… to NNN_… without a gap, so the schema's
// version is their count.
func TestMigrationsNumbered(t *testing.T) {
	names, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	require.Len(t, names, int(postgres.SchemaVersion))
	for i, n := range names {
		require.True(t, strings.HasPrefix(filepath.Base(n), fmt.Sprintf("%03d_", i+1)), n)
	}
}
