package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/internal/safetext"
)

func (a *app) grantsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "grants",
		Short: "Grant, list and revoke agents' access to connectors",
		Long: `A grant says agent A may use connector C's credentials with scopes S. Every connector type
takes grants; an agent without one learns nothing about the connection. Grants hold no
secrets.`,
		Example: `  grantwire grants grant google builtin:email --scopes https://www.googleapis.com/auth/gmail.modify
  grantwire grants list
  grantwire grants revoke google builtin:email`,
		Args: cobra.ArbitraryArgs,
		RunE: a.group,
	}
	cmd.AddCommand(a.grantsGrantCmd(), a.grantsListCmd(), a.grantsRevokeCmd())
	return cmd
}

func (a *app) grantsGrantCmd() *cobra.Command {
	var scopes []string
	cmd := &cobra.Command{
		Use:   "grant <connector> <agent> --scopes <scopes>",
		Short: "Let an agent use a connector with the given scopes (replacing its earlier scopes)",
		Long: `Let an agent use a connector with the given scopes. The scopes replace whatever the pair held
(they are stored sorted, without duplicates). Scopes are exact strings: nothing is implied
(gmail.modify does not cover gmail.readonly). An MCP server's grant is usually "use".`,
		Example: `  grantwire grants grant google builtin:email --scopes https://www.googleapis.com/auth/gmail.modify,https://www.googleapis.com/auth/gmail.send
  grantwire grants grant mcp-github custom:3f2a9c0d1e4b5a69:reviewer --scopes use`,
		Args: exactArgs(2),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !cmd.Flags().Changed("scopes") {
				return usagef("grants grant needs --scopes (\"use\" for an MCP server; --scopes '' records a grant of no scope, which hands out no token)")
			}
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			res, err := c.Grant(ctx, args[0], args[1], scopes)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res)
			}
			suffix := ""
			if !res.Changed {
				suffix = " (unchanged)"
			}
			a.printf("Granted %s → %s: %s%s\n", res.Connector, res.Agent, strings.Join(res.Scopes, " "), suffix)
			for _, w := range res.Warnings {
				a.warnf("%s", w)
			}
			return nil
		}),
	}
	addList(cmd.Flags(), &scopes, "scopes", "scopes", "the scopes to grant (repeatable; commas or spaces separate several)")
	return cmd
}

func (a *app) grantsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [connector]",
		Short: "List the grants of every connector, or of one",
		Example: `  grantwire grants list
  grantwire grants list google
  grantwire grants list --json | jq -r '.grants[] | select(.connector == "google") | .agent'`,
		Args: maxArgs(1),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			connector := ""
			if len(args) == 1 {
				connector = args[0]
			}
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			grants, err := c.ListGrants(ctx, connector)
			if err != nil {
				return err
			}
			if a.jsonOut {
				type row struct {
					Connector string   `json:"connector"`
					Agent     string   `json:"agent"`
					Scopes    []string `json:"scopes"`
				}
				rows := []row{}
				for _, conn := range slices.Sorted(maps.Keys(grants)) {
					for _, agent := range slices.Sorted(maps.Keys(grants[conn])) {
						rows = append(rows, row{conn, agent, nonNilStrings(grants[conn][agent])})
					}
				}
				return a.printJSON(map[string]any{"grants": rows})
			}
			if len(grants) == 0 {
				if connector != "" {
					a.printf("No grants for %s.\n", connector)
				} else {
					a.printf("No grants.\n")
				}
				return nil
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CONNECTOR\tAGENT\tSCOPES")
			for _, conn := range slices.Sorted(maps.Keys(grants)) {
				for _, agent := range slices.Sorted(maps.Keys(grants[conn])) {
					safetext.Fprintf(tw, "%s\t%s\t%s\n", conn, agent, strings.Join(grants[conn][agent], " "))
				}
			}
			return tw.Flush()
		}),
	}
}

func (a *app) grantsRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke <connector> <agent>",
		Short: "Remove an agent's grant on a connector (and its activation)",
		Long: `Remove an agent's grant on a connector; an MCP server's tools then disappear for it too.
Revoking what is not granted succeeds and changes nothing.`,
		Example: `  grantwire grants revoke google builtin:email`,
		Args:    exactArgs(2),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			res, err := c.RevokeGrant(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			if res.Warnings == nil {
				res.Warnings = []string{}
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"connector": args[0], "agent": args[1], "changed": res.Changed, "summary": res.Summary, "warnings": res.Warnings})
			}
			a.printf("%s\n", res.Summary)
			for _, w := range res.Warnings {
				a.warnf("%s", w)
			}
			return nil
		}),
	}
}
