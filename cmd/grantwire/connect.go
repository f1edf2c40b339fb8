package main

import (
	"encoding/json"
	"fmt"
	"github.com/grantwire/grantwire/hostabi"
	"maps"
	"slices"
	"strings"

	"github.com/grantwire/grantwire"
	"github.com/spf13/cobra"
)

func (a *app) connectCmd() *cobra.Command {
	var scopes, grantAgents []string
	cmd := &cobra.Command{
		Use:   "connect <provider>",
		Short: "Authorize an OAuth provider (browser, pasted redirect or device code) and store the connection",
		Long: `Authorize an OAuth provider with PKCE through a one-shot listener on 127.0.0.1, and store the
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
		Example: `  grantwire connect google --scopes https://www.googleapis.com/auth/gmail.readonly
  grantwire connect google --grant-agent builtin:email
  grantwire connect microsoft_work --scopes openid,offline_access,https://graph.microsoft.com/Mail.Read --no-browser
  grantwire connect github --scopes read:user --scopes repo --grant-agent installed:reviewer
  grantwire connect microsoft --device
  grantwire connect google --scopes openid,https://www.googleapis.com/auth/drive.file --device`,
		Args: exactArgs(1),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			provider := args[0]
			if a.authTimeout <= 0 {
				return usagef("--timeout must be positive")
			}
			if a.device && a.noBrowser {
				return usagef("--device and --no-browser are two ways to authorize without a browser here: choose one")
			}
			flow := grantwire.FlowLoopback
			switch {
			case a.device:
				flow = grantwire.FlowDevice
			case a.noBrowser:
				flow = grantwire.FlowPaste
			}
			a.waitingFor = "the " + provider + " authorization"
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			opts := grantwire.ConnectOptions{Timeout: a.timeout(), Flow: flow}
			if a.jsonOut {
				// stderr holds nothing but JSON: the code is one line {"device": {...}}.
				opts.OnDeviceCode = a.printDeviceCode
			}
			res, err := c.Connect(ctx, provider, scopes, grantAgents, opts)
			a.progress.Stop()
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res)
			}
			account := res.Account
			if account == "" {
				account = "(account unknown)"
			}
			a.printf("Connected %s as %s with %s\n", res.Connector, account, strings.Join(res.Scopes, " "))
			for _, agent := range slices.Sorted(maps.Keys(res.Granted)) {
				a.printf("Granted %s → %s: %s\n", res.Connector, agent, strings.Join(res.Granted[agent], " "))
			}
			for _, w := range res.Warnings {
				a.warnf("%s", w)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	addList(f, &scopes, "scopes", "scopes", "scopes to authorize (repeatable; commas or spaces separate several)")
	addList(f, &grantAgents, "grant-agent", "agent", "an agent to grant once connected (repeatable)")
	f.BoolVar(&a.noBrowser, "no-browser", false, "do not open a browser: print the URL, then read the redirect address you paste on standard input")
	f.BoolVar(&a.device, "device", false, "authorize on another device with a code (RFC 8628), where the provider offers it")
	f.DurationVar(&a.authTimeout, "timeout", defaultAuthTimeout, "how long to wait for the authorization")
	return cmd
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
