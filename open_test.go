package grantwire_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/mcp"
	"github.com/grantwire/grantwire/shells/native"
)

// Open wires the OS shell: real ledger files under the home, the agent registry of the
// home, and (with a private Secret Service) the real keyring.
func TestOpenOnTheOSShell(t *testing.T) {
	testenv.RequireKeyring(t, ".")
	ctx := context.Background()
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "agents.json"),
		[]byte(`{"version": 1, "agents": [{"id": "installed:triage", "consumes_mcp_servers": true}]}`), 0o600))
	c, err := grantwire.Open(ctx, native.Options{Home: home, Service: "grantwire.open-test." + filepath.Base(home), NoWatch: true})
	require.NoError(t, err)
	defer c.Close(ctx)
	require.Equal(t, "native", c.Engine().Name())

	// The registry of the home feeds one-click activation: "use" for an MCP consumer.
	_, err = c.Configure(ctx, "mcp-memory", grantwire.ConfigureInput{Env: map[string]string{}})
	require.NoError(t, err)
	act, err := c.Activate(ctx, "mcp-memory", "installed:triage", nil)
	require.NoError(t, err)
	require.Equal(t, "consumes_mcp_servers", act.GrantSource)
	servers, err := mcp.Of(c).VisibleServers(ctx, "installed:triage")
	require.NoError(t, err)
	require.Equal(t, []string{"mcp-memory"}, servers)
	_, err = os.Stat(filepath.Join(home, "connectors", "activations.json"))
	require.NoError(t, err)

	_, err = c.GetAccessToken(ctx, "google", []string{"openid"}, "installed:triage")
	require.True(t, errors.Is(err, grantwire.ErrAgentNotGranted), "%v", err)
	_, err = c.Disconnect(ctx, "mcp-memory")
	require.NoError(t, err)
}
