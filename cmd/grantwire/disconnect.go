package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
)

func (a *app) disconnectCmd() *cobra.Command {
	return a.command(spec{
		use:   "disconnect <connector>",
		short: "Delete a connection (or an MCP server's configuration) and wipe its grants and activations",
		long: `Delete a connector's secrets and metadata from the credential store and the ledgers, and
wipe every grant and activation of it, so that connecting the same connector again inherits
no earlier decision. An OAuth provider's client configuration is kept (it is the
application's registration, not your connection). Disconnecting what is not connected
succeeds and changes nothing.`,
		example: `  grantwire disconnect google
  grantwire disconnect mcp-github --json`,
		args: exactArgs(1),
		run: operation[*grantwire.DisconnectResult]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*grantwire.DisconnectResult, error) {
				res, err := c.Disconnect(ctx, args[0])
				if err == nil {
					res.RevokedGrants, res.Deactivated = nonNilStrings(res.RevokedGrants), nonNilStrings(res.Deactivated)
				}
				return res, err
			},
			render: func(res *grantwire.DisconnectResult, _ []string) error {
				if !res.Removed && len(res.RevokedGrants) == 0 && len(res.Deactivated) == 0 {
					what := "connected"
					if cat, err := a.Catalog(); err == nil {
						if e, ok := cat.Entry(res.Connector); ok && e.Type == catalog.TypeMCPServer {
							what = "configured"
						}
					}
					a.printf("%s is not %s: nothing to remove.\n", res.Connector, what)
					a.warnAll(res.Warnings)
					return nil
				}
				a.printf("Disconnected %s.\n", res.Connector)
				if len(res.RevokedGrants) > 0 {
					a.printf("Revoked the grants of %s.\n", strings.Join(res.RevokedGrants, ", "))
				}
				if len(res.Deactivated) > 0 {
					a.printf("Deactivated it for %s.\n", strings.Join(res.Deactivated, ", "))
				}
				if res.RevokedAtProvider {
					a.printf("Asked %s to revoke the refresh token too.\n", res.Connector)
				}
				a.warnAll(res.Warnings)
				return nil
			},
		}.runE(a),
	})
}
