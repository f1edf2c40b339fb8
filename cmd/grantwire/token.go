package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/jsonx"
)

func (a *app) tokenCmd() *cobra.Command {
	var agent string
	var scopes []string
	var forceTTY bool
	return a.command(spec{
		use:   "token <provider> --agent <agent> --scopes <scopes>",
		short: "Print an access token for a script, as an agent (refuses a terminal)",
		long: `Print a short-lived access token for a provider, obtained as an agent through both layers of
the gate (the agent's grant, then the connection), refreshed if it has 60 s or less left.
--scopes is required: a token carries every scope of its connection, so a request of no
scope (or a grant of none) gets no token.

The token is printed to a pipe or a file only: on a terminal grantwire refuses (it would
stay in the scrollback and in terminal logs) unless --force-tty is given. With --json the
output is {"provider", "access_token", "expires_at", "scopes"}.`,
		example: `  curl -H "Authorization: Bearer $(grantwire token google --agent builtin:email --scopes https://www.googleapis.com/auth/gmail.readonly)" \
    https://gmail.googleapis.com/gmail/v1/users/me/messages?maxResults=5
  grantwire token github --agent installed:reviewer --scopes repo --json | jq -r .expires_at`,
		args: exactArgs(1),
		run: operation[*grantwire.Token]{
			parse: func(*cobra.Command, []string) error {
				if agent == "" {
					return usagef("token needs --agent: tokens are handed to agents, through their grants")
				}
				if a.StdoutTTY && !forceTTY {
					return usagef("refusing to print an access token to a terminal; pipe it (grantwire token … | command) or pass --force-tty")
				}
				return nil
			},
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*grantwire.Token, error) {
				return c.GetAccessToken(ctx, args[0], scopes, agent)
			},
			json: func(tok *grantwire.Token, _ []string) any {
				return map[string]any{
					"provider": tok.Provider, "access_token": tok.AccessToken,
					"expires_at": tok.ExpiresAt.UTC().Format(time.RFC3339), "scopes": jsonx.NonNil(tok.Scopes),
				}
			},
			render: func(tok *grantwire.Token, _ []string) error {
				_, err := fmt.Fprintln(a.Stdout, tok.AccessToken)
				return err
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&agent, "agent", "", "the agent the token is for (required)")
			addList(cmd.Flags(), &scopes, "scopes", "scopes", "the scopes the token must carry (required; repeatable; commas or spaces)")
			cmd.Flags().BoolVar(&forceTTY, "force-tty", false, "print the token even when stdout is a terminal")
		},
	})
}
