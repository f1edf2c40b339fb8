package main

import (
	"strings"

	"github.com/grantwire/grantwire"
	"github.com/spf13/cobra"
)

func (a *app) connectCmd() *cobra.Command {
	var scopes, grantAgents []string
	cmd := &cobra.Command{
		Use:   "connect <provider>",
		Short: "Authorize an OAuth provider in the browser (PKCE) and store the connection",
		Long: `Authorize an OAuth provider with PKCE through a one-shot listener on 127.0.0.1, and store the
refresh token in the OS credential store. The provider's OAuth client must be configured
first (grantwire configure <provider> --client-id …) or given in its environment variables
(grantwire catalog <provider> names them).

Scopes: --scopes (repeatable, or separated by commas or spaces). Without --scopes, the
scopes every --grant-agent declares plus the catalog defaults are requested, and each agent
is granted what it declares; with --scopes every --grant-agent is granted exactly those.
Reconnecting with no scopes over an existing connection or grants is refused with the
command that keeps them.

grantwire prints the URL it waits for and opens the browser; --no-browser only prints the
URL (open it on any machine). On a terminal a countdown runs until the authorization
completes or --timeout passes; Ctrl-C cancels and stores nothing.`,
		Example: `  grantwire connect google --scopes https://www.googleapis.com/auth/gmail.readonly
  grantwire connect google --grant-agent builtin:email
  grantwire connect microsoft_work --scopes openid,offline_access,https://graph.microsoft.com/Mail.Read --no-browser
  grantwire connect github --scopes read:user --scopes repo --grant-agent installed:reviewer`,
		Args: exactArgs(1),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			provider := args[0]
			if a.authTimeout <= 0 {
				return usagef("--timeout must be positive")
			}
			a.waitingFor = "the " + provider + " authorization"
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			res, err := c.Connect(ctx, provider, scopes, grantAgents, grantwire.ConnectOptions{Timeout: a.timeout()})
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
			for _, agent := range sortedKeys(res.Granted) {
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
	f.BoolVar(&a.noBrowser, "no-browser", false, "do not open a browser: print the URL and wait")
	f.DurationVar(&a.authTimeout, "timeout", defaultAuthTimeout, "how long to wait for the authorization")
	return cmd
}
