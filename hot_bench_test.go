package grantwire_test

import (
	"context"
	"encoding/json"
	"github.com/grantwire/grantwire/catalog"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

// BenchmarkGetAccessTokenHot is the token hand-out a long-lived process makes most: the
// OS shell (grantwire.Open) with the real Secret Service, a connected provider, a granted
// agent and a cached access token, nothing changed since the last call. cache=on is the
// shell's default (a stat of the ledger and of the keyring generation files instead of
// a read, README "Performance"); cache=off (native.Options.NoCache) reads the Secret
// Service and parses the ledger on every call. Compare with BenchmarkGate's go-logic
// floor in internal/testworld/nodiff (BENCHMARKS.md).
//
//	scripts/with-keyring.sh go test -run '^$' -bench GetAccessTokenHot -benchmem .
func BenchmarkGetAccessTokenHot(b *testing.B) {
	if os.Getenv(testenv.RealKeyringEnv) != "1" {
		b.Skip("BenchmarkGetAccessTokenHot needs the real Secret Service: scripts/with-keyring.sh go test -run '^$' -bench GetAccessTokenHot .")
	}
	testenv.RequireKeyring(b, ".")
	srv, err := authserver.Start(authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 3600}, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	for _, engine := range []string{grantwire.EngineNative, grantwire.EngineWasm} {
		for _, cache := range []string{"on", "off"} {
			b.Run("engine="+engine+"/cache="+cache, func(b *testing.B) {
				ctx := context.Background()
				c := hotClient(b, srv, engine, cache == "off")
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// hotClient is a client on a home of its own whose provider "local" is connected (on
// srv) and granted to builtin:chat, with an access token cached by a first call.
func hotClient(b testing.TB, srv *authserver.Server, engine string, noCache bool, options ...grantwire.Option) *grantwire.Client {
	b.Helper()
	ctx := context.Background()
	home := b.TempDir()
	if err := os.WriteFile(filepath.Join(home, "agents.json"), []byte(`{"version": 1, "agents": [{"id": "builtin:chat"}]}`), 0o600); err != nil {
		b.Fatal(err)
	}
	svc := "grantwire.bench." + testenv.RandHex(6)
	b.Cleanup(func() { _ = gokeyring.DeleteAll(svc) })
	c, err := grantwire.Open(ctx, native.Options{Home: home, Service: svc, NoWatch: true, NoCache: noCache,
		LockDir: filepath.Join(home, "locks"), Browser: followRedirect, Prompt: io.Discard,
		Getenv: func(string) string { return "" }},
		append([]grantwire.Option{grantwire.WithEngineName(engine), grantwire.WithCatalog(catalog.Bytes(hotCatalog(b, srv.URL())))}, options...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(ctx) })
	if _, err := c.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "cid", ClientSecret: "cs"}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Connect(ctx, "local", []string{"mail.read"}, []string{"builtin:chat"}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat"); err != nil {
		b.Fatal(err)
	}
	return c
}

// followRedirect plays a browser whose user consents.
func followRedirect(authURL string) error {
	go func() {
		c := &http.Client{Timeout: 10 * time.Second}
		if resp, err := c.Get(authURL); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}()
	return nil
}

// hotCatalog has one OAuth provider, "local", on the local authorization server at base.
func hotCatalog(b testing.TB, base string) []byte {
	raw, err := json.Marshal(map[string]any{"connectors": map[string]any{
		"local": map[string]any{
			"type": "oauth_pkce", "display_name": "Local", "tier": "core", "category": "test",
			"authorization_url": base + "/authorize", "token_url": base + "/token", "userinfo_url": base + "/userinfo",
			"client_id_env":  "GRANTWIRE_LOCAL_CLIENT_ID",
			"default_scopes": []string{"openid"}, "available_scopes": []string{"openid", "mail.read"},
		},
	}})
	if err != nil {
		b.Fatal(err)
	}
	return raw
}
