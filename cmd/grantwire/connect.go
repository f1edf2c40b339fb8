package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
)

func (a *app) connectCmd() *cobra.Command {
	var scopes, grantAgents []string
	return a.command(spec{
		use:   "connect <provider>",
		short: "Authorize an OAuth provider (browser, pasted redirect or device code) and store the connection",
		long: `Authorize an OAuth provider with PKCE through a one-shot listener on 127.0.0.1, and store the
refresh token in the OS credential store. The provider's OAuth client must be configured
first (grantwire configure <provider> --client-id …) or given in its environment variables
(grantwire catalog <provider> names them).

Without a browser on this machine (over SSH, in a container):
  --no-browser  prints the URL; open it in a browser anywhere, approve, then paste the
                address the browser ends on (a 127.0.0.1 page that does not load) on
                standard input. It is checked as the listener checks a callback.
  --device      the device authorization grant (RFC 8628), where the provider offers it:
                grantwire shows a code and where to enter it on any device, then polls the
                provider until you approve (Microsoft, GitHub, and Google for its
                limited-input scopes). Ctrl-C cancels and stores nothing.

Scopes: --scopes (repeatable, or separated by commas or spaces). Without --scopes, the
scopes every --grant-agent declares plus the catalog defaults are requested, and each agent
is granted what it declares; with --scopes every --grant-agent is granted exactly those.
Reconnecting with no scopes over an existing connection or grants is refused with the
command that keeps them.

grantwire prints the URL it waits for and opens the browser. On a terminal a countdown runs
until the authorization completes or --timeout passes (or the device code expires); Ctrl-C
cancels and stores nothing (exit 130).`,
		example: `  grantwire connect google --scopes https://www.googleapis.com/auth/gmail.readonly
  grantwire connect google --grant-agent builtin:email
  grantwire connect microsoft_work --scopes openid,offline_access,https://graph.microsoft.com/Mail.Read --no-browser
  grantwire connect github --scopes read:user --scopes repo --grant-agent installed:reviewer
  grantwire connect microsoft --device
  grantwire connect google --scopes openid,https://www.googleapis.com/auth/drive.file --device`,
		args: exactArgs(1),
		run: operation[*grantwire.ConnectResult]{
			parse: func(_ *cobra.Command, args []string) error { return a.waitFor(args[0]) },
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*grantwire.ConnectResult, error) {
				opts := grantwire.ConnectOptions{Timeout: a.timeout(), Flow: grantwire.FlowLoopback}
				switch {
				case a.device:
					opts.Flow = grantwire.FlowDevice
				case a.noBrowser:
					opts.Flow = grantwire.FlowPaste
				}
				if a.jsonOut {
					// stderr holds nothing but JSON: the code is one line {"device": {...}}.
					opts.OnDeviceCode = a.printDeviceCode
				}
				defer a.progress.Stop()
				return c.Connect(ctx, args[0], scopes, grantAgents, opts)
			},
			render: func(res *grantwire.ConnectResult, _ []string) error {
				a.printf("Connected %s as %s with %s\n", res.Connector, orUnknown(res.Account), strings.Join(res.Scopes, " "))
				for _, agent := range slices.Sorted(maps.Keys(res.Granted)) {
					a.printf("Granted %s → %s: %s\n", res.Connector, agent, strings.Join(res.Granted[agent], " "))
				}
				a.warnAll(res.Warnings)
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			a.authFlags(cmd, true)
			addList(cmd.Flags(), &scopes, "scopes", "scopes", "scopes to authorize (repeatable; commas or spaces separate several)")
			addList(cmd.Flags(), &grantAgents, "grant-agent", "agent", "an agent to grant once connected (repeatable)")
		},
	})
}

// authFlags declares the flags of a command that waits for an authorization (connect, mcp
// auth): --no-browser, --timeout and, where the provider may offer it, --device.
func (a *app) authFlags(cmd *cobra.Command, device bool) {
	f := cmd.Flags()
	f.BoolVar(&a.noBrowser, "no-browser", false, "do not open a browser: print the URL, then read the redirect address you paste on standard input")
	if device {
		f.BoolVar(&a.device, "device", false, "authorize on another device with a code (RFC 8628), where the provider offers it")
	}
	f.DurationVar(&a.authTimeout, "timeout", defaultAuthTimeout, "how long to wait for the authorization")
}

// waitFor checks the flags of authFlags and names what the progress line waits for: name's
// authorization.
func (a *app) waitFor(name string) error {
	if a.authTimeout <= 0 {
		return usagef("--timeout must be positive")
	}
	if a.device && a.noBrowser {
		return usagef("--device and --no-browser are two ways to authorize without a browser here: choose one")
	}
	a.waitingFor = "the " + name + " authorization"
	return nil
}

// printDeviceCode writes the device code to show the user as one JSON line on stderr
// (connect --device --json): {"device": {connector, verification_uri,
// verification_uri_complete?, user_code, expires_in (seconds)}}.
func (a *app) printDeviceCode(d hostabi.DevicePrompt) {
	b, _ := json.Marshal(map[string]any{"device": struct {
		hostabi.DevicePrompt
		ExpiresIn int64 `json:"expires_in"`
	}{d, int64(d.ExpiresIn.Seconds())}})
	fmt.Fprintf(a.Stderr, "%s\n", b)
}

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
					res.RevokedGrants, res.Deactivated = jsonx.NonNil(res.RevokedGrants), jsonx.NonNil(res.Deactivated)
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
