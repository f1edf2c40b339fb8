package grantwire_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/shells/native"
)

// Resident facts through a real host: the OS shell's ledger files are stamped, so the host
// names each ledger.read answer by a token and the native engine keeps the parsed fact.
// A listing asked twice reuses the resident fact; a grant or a revoke writes the ledger,
// whose new version gets a new token, and the very next listing sees the change. (The
// keyring is the memory world's: a grant needs none.)
func TestResidentFactsFollowLedgerChanges(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	caps := osCaps(t, home, "grantwire.test-resident", memhost.New(time.UnixMilli(1_790_000_000_000), 1))
	cat, err := catalog.Load(nil)
	require.NoError(t, err)
	engine, err := nativeengine.New(ctx, nativeengine.WithData(cat.Data()))
	require.NoError(t, err)
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(caps), grantwire.WithEngine(engine), grantwire.WithCatalog(cat))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(ctx) })

	list := func() map[string][]string {
		t.Helper()
		g, err := c.ListGrants(ctx, "google")
		require.NoError(t, err)
		return g["google"]
	}
	_, err = c.Grant(ctx, "google", "builtin:chat", []string{"gmail.readonly"})
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"builtin:chat": {"gmail.readonly"}}, list())
	facts, _ := engine.ResidentStats()
	require.Positive(t, facts, "the ledger facts stayed resident")
	require.Equal(t, map[string][]string{"builtin:chat": {"gmail.readonly"}}, list())
	again, _ := engine.ResidentStats()
	require.Equal(t, facts, again, "the second listing reused the resident facts (same tokens)")

	_, err = c.Grant(ctx, "google", "builtin:claude-code", []string{"gmail.readonly"})
	require.NoError(t, err)
	require.Len(t, list(), 2, "the grant is seen by the next listing")
	changed, err := c.Revoke(ctx, "google", "builtin:chat")
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, map[string][]string{"builtin:claude-code": {"gmail.readonly"}}, list(), "the revoke is seen by the next listing")
	after, _ := engine.ResidentStats()
	require.Greater(t, after, again, "each new version of the ledger came with a new token")

	// Another writer (no grantwire process) changes the file: the stamp moves, the host
	// reads it again and names it by a new token.
	p := filepath.Join(home, "connectors", "grants.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"google": {"builtin:chat": ["gmail.send"]}}`), 0o600))
	require.Equal(t, map[string][]string{"builtin:chat": {"gmail.send"}}, list())
}

// osCaps are the OS shell's capabilities on home (no watcher, an empty environment, locks
// under home), closed when tb ends, with the keyring of the memory world w instead of the
// Secret Service.
func osCaps(tb testing.TB, home, service string, w *memhost.World) hostabi.Capabilities {
	tb.Helper()
	sh, err := native.New(native.Options{Home: home, Service: service, NoWatch: true,
		Getenv: func(string) string { return "" }, LockDir: filepath.Join(home, "locks")})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = sh.Close() })
	caps := sh.Capabilities()
	caps.Keyring = w.Capabilities("").Keyring
	return caps
}

// BenchmarkListingEndToEnd: Client.Status and Client.ListGrants at 50 connectors × 1,000
// agents in a long-lived process, end to end: the OS shell's ledger files (stamped, so
// the host answers from its ledger cache and names each fact by a token), the keyring of
// the memory world (so that the Secret Service's latency does not hide the rest), the
// driver, the engine, and the client decoding the result. engine=native keeps the ledger
// facts resident between calls (issue 15); native-no-resident parses them with every
// query (nativeengine.WithResidentBytes(0)); wasm is the wasm engine on the same world.
//
//	go test -run '^$' -bench ListingEndToEnd -benchmem .
func BenchmarkListingEndToEnd(b *testing.B) {
	const connectors, agents = 50, 1000
	for _, engine := range []string{"native", "native-no-resident", "wasm"} {
		c := listingClient(b, engine, connectors, agents)
		ctx := context.Background()
		size := fmt.Sprintf("%dx%d", connectors, agents)
		b.Run("case=status/size="+size+"/engine="+engine, func(b *testing.B) {
			st, err := c.Status(ctx)
			if err != nil || len(st) != connectors {
				b.Fatalf("status: %d connectors, %v", len(st), err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Status(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("case=list_grants/size="+size+"/engine="+engine, func(b *testing.B) {
			g, err := c.ListGrants(ctx, "")
			if err != nil || len(g) != connectors || len(g["c000"]) < agents*6/7 {
				b.Fatalf("list_grants: %d connectors, %d grants of c000, %v", len(g), len(g["c000"]), err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.ListGrants(ctx, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var listingScopes = []string{"openid", "email", "s1", "s2", "s3", "s4", "s5", "s6"}

// listingClient is a client on the OS shell whose home holds the ledgers of connectors ×
// agents: every OAuth provider connected, agents granted on every connector (six in
// seven), every fifth agent active on the local MCP servers.
func listingClient(b *testing.B, engine string, connectors, agents int) *grantwire.Client {
	b.Helper()
	ctx := context.Background()
	home := b.TempDir()
	conns := map[string]any{}
	for i := range connectors {
		id := fmt.Sprintf("c%03d", i)
		if i%5 == 4 {
			conns[id] = map[string]any{"type": "mcp_server", "display_name": id, "command": "npx", "args": []string{"-y", id},
				"env": []any{map[string]any{"key": "TOKEN", "required": true, "secret": true}}}
		} else {
			conns[id] = map[string]any{"type": "oauth_pkce", "display_name": id, "default_scopes": []string{"openid"},
				"authorization_url": "https://" + id + ".example.com/authorize", "token_url": "https://" + id + ".example.com/token",
				"available_scopes": listingScopes}
		}
	}
	raw, _ := json.Marshal(map[string]any{"connectors": conns})
	cat, err := catalog.Load(raw)
	if err != nil {
		b.Fatal(err)
	}
	w := memhost.New(time.UnixMilli(1_790_000_000_000), 1)
	grants, actives := map[string]any{}, map[string]any{}
	for c := range connectors {
		id := fmt.Sprintf("c%03d", c)
		g := map[string]any{}
		for a := range agents {
			switch {
			case (a+c)%7 == 6:
			case (a+c)%3 == 2:
				g[fmt.Sprintf("installed:agent-%04d", a)] = listingScopes[:3]
			default:
				g[fmt.Sprintf("installed:agent-%04d", a)] = listingScopes[:5]
			}
		}
		grants[id] = g
		if c%5 == 4 {
			m := map[string]any{}
			for a := 0; a < agents; a += 5 {
				m[fmt.Sprintf("installed:agent-%04d", a)] = true
			}
			actives[id] = m
			continue
		}
		w.SetKeyring(hostabi.DefaultService, layout.ClientUser(id), `{"client_id":"client-`+id+`"}`)
		w.SetKeyring(hostabi.DefaultService, layout.ConnectionUser(id), layout.Connection{AccountEmail: "user@example.com",
			ClientIDHash: layout.ClientIDHash("client-" + id), ConnectedAt: 1_790_000_000 - 86400,
			RefreshToken: "rt-" + id, Scopes: listingScopes[:5]}.Encode())
	}
	write := func(name string, v any) {
		raw, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	write(layout.Grants, grants)
	write(layout.Activations, map[string]any{"version": 1, "activations": actives})
	caps := osCaps(b, home, hostabi.DefaultService, w)
	options := []grantwire.Option{grantwire.WithCapabilities(caps), grantwire.WithCatalog(cat)}
	if engine == "wasm" {
		options = append(options, grantwire.WithEngineName(grantwire.EngineWasm))
	} else {
		opts := []nativeengine.Option{nativeengine.WithData(cat.Data())}
		if engine == "native-no-resident" {
			opts = append(opts, nativeengine.WithResidentBytes(0))
		}
		e, err := nativeengine.New(ctx, opts...)
		if err != nil {
			b.Fatal(err)
		}
		options = append(options, grantwire.WithEngine(e))
	}
	c, err := grantwire.New(ctx, options...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(ctx) })
	return c
}
