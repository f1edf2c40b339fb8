package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) tokenCmd() *cobra.Command {
	var agent string
	var scopes []string
	var forceTTY bool
	cmd := &cobra.Command{
		Use:   "token <provider> --agent <agent> --scopes <scopes>",
		Short: "Print an access token for a script, as an agent (refuses a terminal)",
		Long: `Print a short-lived access token for a provider, obtained as an agent through both layers of
the gate (the agent's grant, then the connection), refreshed if it has 60 s or less left.
--scopes is required: a token carries every scope of its connection, so a request of no
scope (or a grant of none) gets no token.

The token is printed to a pipe or a file only: on a terminal grantwire refuses (it would
stay in the scrollback and in terminal logs) unless --force-tty is given. With --json the
output is {"provider", "access_token", "expires_at", "scopes"}.`,
		Example: `  curl -H "Authorization: Bearer $(grantwire token google --agent builtin:email --scopes https://www.googleapis.com/auth/gmail.readonly)" \
    https://gmail.googleapis.com/gmail/v1/users/me/messages?maxResults=5
  grantwire token github --agent installed:reviewer --scopes repo --json | jq -r .expires_at`,
		Args: exactArgs(1),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if agent == "" {
				return usagef("token needs --agent: tokens are handed to agents, through their grants")
			}
			if a.StdoutTTY && !forceTTY {
				return usagef("refusing to print an access token to a terminal; pipe it (grantwire token … | command) or pass --force-tty")
			}
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			tok, err := c.GetAccessToken(ctx, args[0], scopes, agent)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{
					"provider": tok.Provider, "access_token": tok.AccessToken,
					"expires_at": tok.ExpiresAt.UTC().Format(time.RFC3339), "scopes": nonNilStrings(tok.Scopes),
				})
			}
			_, err = fmt.Fprintln(a.Stdout, tok.AccessToken)
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "the agent the token is for (required)")
	addList(f, &scopes, "scopes", "scopes", "the scopes the token must carry (required; repeatable; commas or spaces)")
	f.BoolVar(&forceTTY, "force-tty", false, "print the token even when stdout is a terminal")
	return cmd
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
