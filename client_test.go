package grantwire_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/mcp"
)

func newMemClient(t *testing.T) (*grantwire.Client, *memhost.World) {
	t.Helper()
	ctx := context.Background()
	w := world(nil)
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(ctx) })
	return c, w
}

func TestClientGateAndMCP(t *testing.T) {
	ctx := context.Background()
	c, w := newMemClient(t)
	gate(t, c, w) // not granted (403, exit 4, the missing scopes), granted, a token

	// Rotating the client trips the tripwire on the next use.
	_, err := c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-2", ClientSecret: "secret-2"})
	require.NoError(t, err)
	_, err = c.GetAccessToken(ctx, "google", []string{gmail}, "builtin:chat")
	require.True(t, errors.Is(err, grantwire.ErrReauthRequired), "%v", err)

	_, err = c.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"}})
	require.NoError(t, err)
	act, err := c.Activate(ctx, "mcp-github", "builtin:chat", []string{"use"})
	require.NoError(t, err)
	require.True(t, act.AutoGranted)
	vis, err := mcp.Of(c).VisibleServers(ctx, "builtin:chat")
	require.NoError(t, err)
	require.Equal(t, []string{"mcp-github"}, vis)
	cred, err := mcp.Of(c).Credential(ctx, "mcp-github", "builtin:chat")
	require.NoError(t, err)
	require.Equal(t, "ghp_x", cred.Env["GITHUB_PERSONAL_ACCESS_TOKEN"])

	_, err = c.Activate(ctx, "google", "builtin:chat", nil)
	require.True(t, errors.Is(err, grantwire.ErrConfiguration), "%v", err)

	res, err := c.Disconnect(ctx, "mcp-github")
	require.NoError(t, err)
	require.Equal(t, []string{"builtin:chat"}, res.RevokedGrants)
	vis, err = mcp.Of(c).VisibleServers(ctx, "builtin:chat")
	require.NoError(t, err)
	require.Empty(t, vis)
}
