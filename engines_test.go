package grantwire_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/internal/testworld/opatest"
)

// gate runs the gate's main path on a client of world w: not granted, granted, a token.
func gate(t *testing.T, c *grantwire.Client, w *memhost.World) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-1", ClientSecret: "secret-1"})
	require.NoError(t, err)
	consent(w)
	_, err = c.Connect(ctx, "google", []string{gmail}, nil)
	require.NoError(t, err)
	_, err = c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:chat")
	require.True(t, errors.Is(err, grantwire.ErrAgentNotGranted), "%v", err)
	var ge *grantwire.Error
	require.True(t, errors.As(err, &ge))
	require.Equal(t, []string{gmail}, ge.MissingScopes)
	require.Equal(t, 403, ge.Status)
	require.Equal(t, 4, ge.Exit)
	_, err = c.Grant(ctx, "google", "builtin:chat", []string{gmail})
	require.NoError(t, err)
	tok, err := c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:chat")
	require.NoError(t, err)
	require.NotEmpty(t, tok.AccessToken)
}

// world is a memory world whose authorization server serves cat's endpoints (the
// embedded catalog's when nil).
func world(cat *catalog.Catalog) *memhost.World {
	w := memhost.New(time.Unix(1_790_000_000, 0), 7)
	if cat == nil {
		cat = catalog.Default()
	}
	memshell.Serve(w, cat)
	return w
}

// Every engine grantwire builds by name decides the gate, and names the policy.
func TestEngineByName(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{grantwire.EngineNative, grantwire.EngineWasm} {
		t.Run(name, func(t *testing.T) {
			w := world(nil)
			c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")), grantwire.WithEngineName(name))
			require.NoError(t, err)
			defer c.Close(ctx)
			require.Equal(t, name, c.Engine().Name())
			require.Equal(t, bundle.EmbeddedRevision(), c.Revision())
			gate(t, c, w)
		})
	}
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(world(nil).Capabilities("")))
	require.NoError(t, err)
	require.Equal(t, grantwire.DefaultEngine, c.Engine().Name())
	require.NoError(t, c.Close(ctx))

	for _, tc := range []struct {
		opts []grantwire.Option
		want string
	}{
		{[]grantwire.Option{grantwire.WithEngineName("rego")}, "links OPA"},
		{[]grantwire.Option{grantwire.WithEngineName("lua")}, `unknown engine "lua"`},
		{[]grantwire.Option{grantwire.WithEngineName("native"), grantwire.WithEngineName(grantwire.EngineOPAServer + "=" + "http://127.0.0.1:1")}, ""},
		{[]grantwire.Option{grantwire.WithEngineName(grantwire.EngineOPAServer + "=" + "http://127.0.0.1:1"), grantwire.WithCatalog(catalog.Bytes([]byte(`{"connectors":{}}`)))}, "do not combine opa-server with WithCatalog"},
		{[]grantwire.Option{grantwire.WithEngineName(grantwire.EngineOPAServer + "=" + "ftp://x")}, "not an http(s) URL"},
		{[]grantwire.Option{grantwire.WithEngineName(grantwire.EngineOPAServer + "=" + "http://127.0.0.1:1")}, "connection refused"},
	} {
		_, err := grantwire.New(ctx, append(tc.opts, grantwire.WithCapabilities(world(nil).Capabilities("")))...)
		if tc.want == "" {
			require.Error(t, err) // the last engine option wins: the server is unreachable
			continue
		}
		require.ErrorContains(t, err, tc.want)
	}
}

// A client on an OPA server: the server's catalog and bundle revision, the same decisions.
func TestOPAServerClient(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Load([]byte(`{"connectors": {"google": {"type": "oauth_pkce", "display_name": "Google only",
	  "authorization_url": "https://accounts.google.com/o/oauth2/v2/auth", "token_url": "https://oauth2.googleapis.com/token",
	  "available_scopes": ["` + gmail + `"], "default_scopes": ["` + gmail + `"]}}}`))
	require.NoError(t, err)
	url, revision := opatest.Serve(t, cat.Data())
	w := world(cat)
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")), grantwire.WithEngineName(grantwire.EngineOPAServer+"="+url))
	require.NoError(t, err)
	defer c.Close(ctx)
	require.Equal(t, "opa-server", c.Engine().Name())
	require.Equal(t, revision, c.Revision())
	require.Equal(t, []string{"google"}, c.Catalog().IDs(), "the server's catalog")
	gate(t, c, w)
}
