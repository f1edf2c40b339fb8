package rest_test

import (
	"context"
	"github.com/grantwire/grantwire/internal/oprun"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/surfaces/rest"
)

// BenchmarkListConnectors: GET /api/connectors (the 30 connectors of the embedded catalog,
// one of them connected, with grants and activations) over loopback HTTP, in-process, on
// the OS shell and the real keyring (scripts/with-keyring.sh).
func BenchmarkListConnectors(b *testing.B) {
	testenv.RequireKeyring(b, "./surfaces/rest")
	ctx := context.Background()
	home := b.TempDir()
	c, err := grantwire.Open(ctx, native.Options{Home: filepath.Join(home, ".grantwire"), Service: "grantwire.bench." + testenv.RandHex(6), NoWatch: true})
	require.NoError(b, err)
	defer c.Close(ctx)
	_, err = c.ImportForwarded(ctx, grantwire.Forwarded{Provider: "github", ClientID: "bench-client", ClientSecret: "bench-secret", RefreshToken: "bench-refresh", Scopes: []string{"repo"}, AccountEmail: "ada@example.com"})
	require.NoError(b, err)
	_, err = c.Grant(ctx, "github", "builtin:code", []string{"repo"})
	require.NoError(b, err)
	_, err = c.Activate(ctx, "mcp-git", "builtin:chat", nil)
	require.NoError(b, err)
	srv, err := rest.Listen("", rest.Config{Client: c})
	require.NoError(b, err)
	go func() { _ = srv.Serve() }()
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	get := func() int {
		resp, err := http.Get(srv.URL() + "/api/connectors")
		require.NoError(b, err)
		n, _ := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Equal(b, 200, resp.StatusCode)
		return int(n)
	}
	size := get()
	b.Run("http", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			get()
		}
		b.ReportMetric(float64(size), "bytes/response")
	})
	// The same decision without HTTP: what the server adds is the difference.
	b.Run("operation", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, err := oprun.Of(c).Do(ctx, "connector_view", map[string]any{}, nil)
			require.NoError(b, err)
		}
	})
}
