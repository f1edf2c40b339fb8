package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
)

func (a *app) agentsCmd() *cobra.Command {
	return a.command(spec{
		use:   "agents",
		short: "List the agents grantwire knows, and name custom agents",
		long: `Agents come from grantwire's built-in agents and the file $GRANTWIRE_HOME/agents.json, where
an agent declares the connectors it needs (connector, scopes, reason) and whether it
consumes MCP servers. The declarations drive one-click activation, connect --grant-agent
and the scope check of forwarded connections.

Agent ids: builtin:<id>, installed:<id>, native:<id>, and
custom:<first 16 hex of sha256(agent source)>:<id> — a custom agent whose code changes gets
a new id and inherits no grant.`,
		example: `  grantwire agents list
  grantwire agents id ./my_agent.py
  grantwire grants grant mcp-github "$(grantwire agents id ./my_agent.py)" --scopes use`,
	}, a.agentsListCmd(), a.agentsIDCmd())
}

func (a *app) agentsListCmd() *cobra.Command {
	return a.command(spec{
		use:   "list",
		short: "List the registered agents and what they declare",
		long: `List the built-in agents and those of $GRANTWIRE_HOME/agents.json with what each declares.
Agents of the file that could not be registered (a custom agent whose source changed or
cannot be read) and declarations the catalog does not offer are reported as warnings on
stderr (and under "problems" with --json).`,
		example: `  grantwire agents list
  grantwire agents list --json | jq -r '.agents[] | select(.consumes_mcp_servers) | .id'`,
		args: noArgs,
		run: operation[agentList]{
			call: func(ctx context.Context, c *grantwire.Client, _ []string) (l agentList, err error) {
				l.Agents, l.Problems, err = c.Agents(ctx)
				l.File = filepath.Join(a.home, "agents.json")
				return l, err
			},
			render: func(l agentList, _ []string) error {
				rows := make([][]string, 0, len(l.Agents))
				for _, ag := range l.Agents {
					mcp := "-"
					if ag.ConsumesMCPServers {
						mcp = "consumes"
					}
					var decl []string
					for _, r := range ag.RequiredConnectors {
						decl = append(decl, fmt.Sprintf("%s(%d)", r.Connector, len(r.Scopes)))
					}
					sort.Strings(decl)
					rows = append(rows, []string{ag.ID, ag.Origin, mcp, orDash(decl)})
				}
				if err := a.printTable([]string{"ID", "ORIGIN", "MCP", "DECLARES"}, rows); err != nil {
					return err
				}
				for _, p := range l.Problems {
					a.warnf("%s: %s", p.Agent, p.Message)
				}
				return nil
			},
		}.runE(a),
	})
}

// agentList is what agents list shows: the agents and the problems of agents.json.
type agentList struct {
	Agents   []grantwire.Agent        `json:"agents"`
	File     string                   `json:"file"`
	Problems []grantwire.AgentProblem `json:"problems"`
}

func (a *app) agentsIDCmd() *cobra.Command {
	var name, path string
	return a.command(spec{
		use:   "id <agent source file>",
		short: "Print the id of a custom agent: custom:<first 16 hex of sha256(source)>:<name>",
		long: `Print the id a custom agent gets from its source file: custom:<first 16 hex characters of the
sha256 of the file's bytes>:<name>. The name is the file's base name without its extension
unless --name gives it. Change one byte of the source and the id changes: grants made for
the old id do not carry over.`,
		example: `  grantwire agents id ./reviewer.py
  grantwire agents id ./agent.py --name reviewer
  grantwire agents id ./agent.py --json`,
		args: exactArgs(1),
		run: operation[string]{
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
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&name, "name", "", "the agent's name (default: the file's base name without extension)")
		},
	})
}
