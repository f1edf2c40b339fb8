package grantwire_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/oprun"
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

// oprun.RunHostless answers on the engine alone what the policy decides from its arguments
// and the catalog (configure's form of a catalog connector, validate_catalog), and stops
// with oprun.ErrNeedsHost, having read nothing, where the policy asks the host (a connector
// the catalog does not have may be a remote server added to the home).
func TestRunHostless(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemClient(t)
	var form struct {
		SetupFields []struct {
			Key string `json:"key"`
		} `json:"setup_fields"`
	}
	require.NoError(t, oprun.RunHostless(ctx, c.Engine(), c.Catalog(), "configure", map[string]any{"connector": "google", "form": true}, &form))
	var keys []string
	for _, f := range form.SetupFields {
		keys = append(keys, f.Key)
	}
	require.Equal(t, []string{"client_id", "client_secret"}, keys)
	err := oprun.RunHostless(ctx, c.Engine(), c.Catalog(), "configure", map[string]any{"connector": "nosuch", "form": true}, nil)
	require.ErrorIs(t, err, oprun.ErrNeedsHost)
	err = oprun.RunHostless(ctx, c.Engine(), c.Catalog(), "list_grants", map[string]any{}, nil)
	require.ErrorIs(t, err, oprun.ErrNeedsHost, "a listing reads the ledgers")
	require.NoError(t, oprun.ValidateCatalog(ctx, c.Engine(), c.Catalog()))
}
