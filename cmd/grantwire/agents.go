package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/safetext"
)

func (a *app) agentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List the agents grantwire knows, and name custom agents",
		Long: `Agents come from grantwire's built-in agents and the file $GRANTWIRE_HOME/agents.json, where
an agent declares the connectors it needs (connector, scopes, reason) and whether it
consumes MCP servers. The declarations drive one-click activation, connect --grant-agent
and the scope check of forwarded connections.

Agent ids: builtin:<id>, installed:<id>, native:<id>, and
custom:<first 16 hex of sha256(agent source)>:<id> — a custom agent whose code changes gets
a new id and inherits no grant.`,
		Example: `  grantwire agents list
  grantwire agents id ./my_agent.py
  grantwire grants grant mcp-github "$(grantwire agents id ./my_agent.py)" --scopes use`,
		Args: cobra.ArbitraryArgs,
		RunE: a.group,
	}
	cmd.AddCommand(a.agentsListCmd(), a.agentsIDCmd())
	return cmd
}

func (a *app) agentsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the registered agents and what they declare",
		Long: `List the built-in agents and those of $GRANTWIRE_HOME/agents.json with what each declares.
Agents of the file that could not be registered (a custom agent whose source changed or
cannot be read) and declarations the catalog does not offer are reported as warnings on
stderr (and under "problems" with --json).`,
		Example: `  grantwire agents list
  grantwire agents list --json | jq -r '.agents[] | select(.consumes_mcp_servers) | .id'`,
		Args: noArgs,
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			list, problems, err := c.Agents(ctx)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"file": filepath.Join(a.home, "agents.json"), "agents": list, "problems": problems})
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tORIGIN\tMCP\tDECLARES")
			for _, ag := range list {
				mcp := "-"
				if ag.ConsumesMCPServers {
					mcp = "consumes"
				}
				var decl []string
				for _, r := range ag.RequiredConnectors {
					decl = append(decl, fmt.Sprintf("%s(%d)", r.Connector, len(r.Scopes)))
				}
				sort.Strings(decl)
				safetext.Fprintf(tw, "%s\t%s\t%s\t%s\n", ag.ID, ag.Origin, mcp, orDash(decl))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, p := range problems {
				a.warnf("%s: %s", p.Agent, p.Message)
			}
			return nil
		}),
	}
}

func (a *app) agentsIDCmd() *cobra.Command {
	var name, path string
	cmd := &cobra.Command{
		Use:   "id <agent source file>",
		Short: "Print the id of a custom agent: custom:<first 16 hex of sha256(source)>:<name>",
		Long: `Print the id a custom agent gets from its source file: custom:<first 16 hex characters of the
sha256 of the file's bytes>:<name>. The name is the file's base name without its extension
unless --name gives it. Change one byte of the source and the id changes: grants made for
the old id do not carry over.`,
		Example: `  grantwire agents id ./reviewer.py
  grantwire agents id ./agent.py --name reviewer
  grantwire agents id ./agent.py --json`,
		Args: exactArgs(1),
		RunE: operation[string]{
			parse: func(_ *cobra.Command, args []string) (err error) {
				if path, err = filepath.Abs(a.expandHome(args[0])); err != nil {
					return usagef("%v", err)
				}
				return nil
			},
			call: func(ctx context.Context, c *grantwire.Client, _ []string) (string, error) {
				return c.AgentID(ctx, path, name)
			},
			json: func(id string, _ []string) any { return map[string]string{"id": id, "source": path} },
			render: func(id string, _ []string) error {
				a.printf("%s\n", id)
				return nil
			},
		}.runE(a),
	}
	cmd.Flags().StringVar(&name, "name", "", "the agent's name (default: the file's base name without extension)")
	return cmd
}
