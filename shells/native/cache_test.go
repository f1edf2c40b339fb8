package native_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

// countingFiles counts the reads a host sends to a Files capability, and passes its
// stamps on (so the host's ledger cache stays on).
type countingFiles struct {
	hostabi.Files
	reads atomic.Int64
}

func (c *countingFiles) Read(ctx context.Context, name string) ([]byte, string, error) {
	c.reads.Add(1)
	return c.Files.Read(ctx, name)
}

func (c *countingFiles) Stamp(name string) (string, bool) {
	if st, ok := c.Files.(host.FileStamps); ok {
		return st.Stamp(name)
	}
	return "", false
}

func cacheShell(t *testing.T, home, service string, tweak func(*native.Options)) *native.Shell {
	t.Helper()
	o := native.Options{Home: home, Service: service, NoWatch: true, Getenv: func(string) string { return "" },
		LockDir: filepath.Join(filepath.Dir(home), "locks")}
	if tweak != nil {
		tweak(&o)
	}
	sh, err := native.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	return sh
}

func fetch(t *testing.T, h *host.Host, kind, key string, params map[string]any) string {
	t.Helper()
	n := core.Need{Key: key, Kind: kind, Params: map[string]json.RawMessage{}}
	for k, v := range params {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		n.Params[k] = b
	}
	op := h.Begin("test")
	defer op.End()
	raw, err := op.Fetch(context.Background(), n)
	require.NoError(t, err)
	return string(raw)
}

// TestLedgerCacheSeesEveryWriter: a process that keeps the parsed ledger answers from it
// while the file is unchanged, and sees at its next read a write by another process (by
// rename), an edit in place of the same size, a removal; every answer is byte for byte
// what a host without the cache answers.
func TestLedgerCacheSeesEveryWriter(t *testing.T) {
	ctx := context.Background()
	home := filepath.Join(t.TempDir(), "home")
	svc := testService(t)
	a := cacheShell(t, home, svc, nil)
	b := cacheShell(t, home, svc, nil)
	plain := cacheShell(t, home, svc, func(o *native.Options) { o.NoCache = true })
	files := &countingFiles{Files: a.Capabilities().Files}
	caps := a.Capabilities()
	caps.Files = files
	ha, hplain := host.New(caps), host.New(plain.Capabilities())

	const ledger = "connectors/grants.json"
	read := func(path ...string) string {
		t.Helper()
		p := map[string]any{"ledger": ledger, "path": append([]string{}, path...)}
		got := fetch(t, ha, hostabi.NeedLedgerRead, "grant", p)
		require.Equal(t, fetch(t, hplain, hostabi.NeedLedgerRead, "grant", p), got, "the cached fact is the fact a read gives")
		return got
	}
	write := func(doc string) {
		t.Helper()
		require.NoError(t, b.Capabilities().Files.Update(ctx, ledger, func([]byte, string) ([]byte, error) { return []byte(doc), nil }))
	}

	require.Contains(t, read("local", "builtin:chat"), `"found":false`)
	write(`{"local": {"builtin:chat": ["mail.read"]}}`)
	require.Contains(t, read("local", "builtin:chat"), `"value":["mail.read"]`, "a write by another process is seen")
	n := files.reads.Load()
	for range 5 {
		require.Contains(t, read("local", "builtin:chat"), `"value":["mail.read"]`)
		require.Contains(t, read("local"), `"exists":true`)
	}
	require.Equal(t, n, files.reads.Load(), "an unchanged ledger is answered without reading it")

	write(`{"local": {}}`)
	require.Contains(t, read("local", "builtin:chat"), `"exists":false`, "a revoke by another process is seen at once")

	// Another program edits the file in place: same size, same inode.
	p := filepath.Join(home, "connectors", "grants.json")
	before, err := os.ReadFile(p)
	require.NoError(t, err)
	after := strings.Replace(string(before), `"local"`, `"lokal"`, 1)
	require.Len(t, after, len(before))
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte(after), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Contains(t, read("local"), `"exists":false`, "an edit in place is seen")
	require.Contains(t, read("lokal"), `"exists":true`)

	require.NoError(t, os.WriteFile(p, []byte(`{"local": `), 0o600))
	require.Contains(t, read("local"), `"corrupt":"not valid JSON"`)
	require.NoError(t, os.Remove(p))
	require.Contains(t, read("local"), `"found":false`, "a removed ledger is seen")
}

// twoShells are two shells of one home (root/home) on a keyring service of the test's own.
func twoShells(t *testing.T) (root, svc string, a, b *native.Shell) {
	root, svc = t.TempDir(), testService(t)
	a = cacheShell(t, filepath.Join(root, "home"), svc, nil)
	b = cacheShell(t, filepath.Join(root, "home"), svc, nil)
	return root, svc, a, b
}

// TestKeyringCacheSeesOtherProcesses: on the real Secret Service, a shell answers a read
// it made before from its cache (no D-Bus round trip) while no grantwire process wrote
// the service, and sees at its next read a set or delete by another shell — of the same
// home, or of another home sharing the service.
func TestKeyringCacheSeesOtherProcesses(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	root, svc, a, b := twoShells(t)
	other := cacheShell(t, filepath.Join(root, "other-home"), svc, nil) // shares the service and the lock directory
	store := native.CountKeyringReads(a)
	ha := host.New(a.Capabilities()) // the process's one keyring cache is its host's
	ka, kb, ko := a.Capabilities().Keyring, b.Capabilities().Keyring, other.Capabilities().Keyring

	get := func() string {
		t.Helper()
		f := fetch(t, ha, hostabi.NeedKeyringGet, "k", map[string]any{"user": "local:default", "fresh": true})
		if strings.Contains(f, `"found":false`) {
			return "<absent>"
		}
		require.Contains(t, f, `"found":true`)
		v, err := ka.Get(ctx, svc, "local:default") // what the fact describes
		require.NoError(t, err)
		require.Contains(t, f, host.Digest(v))
		return v
	}
	require.Equal(t, "<absent>", get())
	require.NoError(t, kb.Set(ctx, svc, "local:default", "v1"))
	require.Equal(t, "v1", get(), "a set by another process of the home is seen")
	n := store.Load()
	for range 5 {
		fetch(t, ha, hostabi.NeedKeyringGet, "k", map[string]any{"user": "local:default", "fresh": true})
	}
	require.Equal(t, n, store.Load(), "an unchanged service is answered without a round trip")

	require.NoError(t, ko.Set(ctx, svc, "local:default", "v2"))
	require.Equal(t, "v2", get(), "a set by a process of another home of the service is seen")
	require.NoError(t, kb.Delete(ctx, svc, "local:default"))
	require.Equal(t, "<absent>", get(), "a delete by another process is seen")
	require.NoError(t, ka.Set(ctx, svc, "local:default", strings.Repeat("x", 5000)))
	require.Equal(t, strings.Repeat("x", 5000), get(), "this process's own write is read back")

	// Off: every read goes to the store.
	off := cacheShell(t, filepath.Join(root, "home"), svc, func(o *native.Options) { o.NoCache = true })
	offReads := native.CountKeyringReads(off)
	var perRead int64
	for i := range 3 {
		_, err := off.Capabilities().Keyring.Get(ctx, svc, "local:default")
		require.NoError(t, err)
		if i == 0 {
			perRead = offReads.Load()
		}
	}
	require.Greater(t, perRead, int64(1), "a manifest and its parts")
	require.Equal(t, 3*perRead, offReads.Load(), "NoCache reads the manifest and every part every time")
}

// TestKeyringCacheOnlyForGrantwireServices: a service another program writes too (GAIA's
// gaia.connections) is never cached: a value changed behind grantwire's back is seen.
func TestKeyringCacheOnlyForGrantwireServices(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	svc := "gaia.test." + randHex(6)
	t.Cleanup(func() { _ = gokeyring.DeleteAll(svc) })
	a := cacheShell(t, filepath.Join(t.TempDir(), "home"), svc, nil)
	store := native.CountKeyringReads(a)
	require.NoError(t, a.Capabilities().Keyring.Set(ctx, svc, "local:default", "v1"))
	ha := host.New(a.Capabilities())
	for range 3 {
		f := fetch(t, ha, hostabi.NeedKeyringGet, "k", map[string]any{"user": "local:default", "fresh": true})
		require.Contains(t, f, host.Digest("v1"))
	}
	require.GreaterOrEqual(t, store.Load(), int64(3), "every read of a foreign service goes to the store")
}

// TestHostMemoryFollowsTheGeneration: the host's memory of a slot (keyring.get with
// fresh:false) lasts only while no grantwire process changed the service, so another
// process's reconfiguration is seen by the next read.
func TestHostMemoryFollowsTheGeneration(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	_, svc, a, b := twoShells(t)
	caps := a.Capabilities()
	ha := host.New(caps)
	require.NoError(t, b.Capabilities().Keyring.Set(ctx, svc, "provider:local", `{"client_id":"one"}`))
	memo := func() string {
		return fetch(t, ha, hostabi.NeedKeyringGet, "client", map[string]any{"user": "provider:local", "fresh": false, "fields": []string{"client_id"}})
	}
	first := memo()
	require.Equal(t, first, memo())
	require.NoError(t, b.Capabilities().Keyring.Set(ctx, svc, "provider:local", `{"client_id":"two"}`))
	second := memo()
	require.NotEqual(t, first, second, "the memory of a slot another process changed is dropped")
	require.Contains(t, second, host.CRC32("two"))
}

// BenchmarkCacheCheck is what the read caches pay per read instead of a read: the stamp
// of a ledger (one lstat), the keyring generation (one lstat per generation file: the
// service's and the home's), and a cached keyring read (the generation check and a map
// lookup). Compare with BenchmarkKeyring/get (a D-Bus round trip) and BenchmarkLedgerRead.
func BenchmarkCacheCheck(b *testing.B) {
	ctx := context.Background()
	sh := benchShell(b)
	files := sh.Capabilities().Files
	require.NoError(b, files.Update(ctx, "connectors/grants.json", func([]byte, string) ([]byte, error) {
		return []byte(`{"local": {"builtin:chat": ["mail.read"]}}`), nil
	}))
	b.Run("ledger-stamp", func(b *testing.B) {
		st := files.(host.FileStamps)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := st.Stamp("connectors/grants.json"); !ok {
				b.Fatal("no stamp")
			}
		}
	})
	kr, svc := sh.Capabilities().Keyring, sh.Capabilities().Service
	b.Run("keyring-generation", func(b *testing.B) {
		g := kr.(host.KeyringGenerations)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := g.Generation(svc); !ok {
				b.Fatal("no generation")
			}
		}
	})
	if os.Getenv(realKeyringEnv) != "1" {
		return
	}
	require.NoError(b, kr.Set(ctx, svc, "bench:default", strings.Repeat("7", 100)))
	b.Run("keyring-get-cached", func(b *testing.B) {
		// A fresh read answered by the host's keyring cache: the generation check and a
		// map lookup (one operation each).
		h := host.New(sh.Capabilities())
		n := core.Need{Key: "k", Kind: hostabi.NeedKeyringGet, Params: map[string]json.RawMessage{
			"user": json.RawMessage(`"bench:default"`), "fresh": json.RawMessage(`true`)}}
		b.ReportAllocs()
		for b.Loop() {
			op := h.Begin("bench")
			if _, err := op.Fetch(ctx, n); err != nil {
				b.Fatal(err)
			}
			op.End()
		}
	})
}
