package main

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/mcp"
)

func (a *app) mcpCmd() *cobra.Command {
	return a.command(spec{
		use:   "mcp",
		short: "MCP servers for agents: local ones with keys, remote ones behind OAuth 2.1 (add, auth, proxy)",
		long: `MCP servers started on this machine with API keys in their environment (mcp_server
connectors) are configured with grantwire configure <id> --from-stdin and shown to agents with
grantwire activations activate <id> <agent>; grantwire mcp list shows them, with the names of
their keys (never the values).

Remote MCP servers (streamable HTTP behind OAuth 2.1) are added with grantwire mcp add <name>
--url <https URL>, authorized with grantwire mcp auth <name> (discovery, registration and PKCE
in the browser, tokens in the credential store), and served to a stdio MCP client for a
granted and active agent with grantwire mcp proxy <name> --agent <agent>.`,
		example: `  grantwire mcp list
  grantwire mcp list --agent builtin:chat
  grantwire mcp list --json | jq -r '.servers[].id'
  grantwire mcp add notes --url https://mcp.example.com/mcp && grantwire mcp auth notes`,
	}, a.mcpListCmd(), a.mcpAddCmd(), a.mcpAuthCmd(), a.mcpLogoutCmd(), a.mcpRemoveCmd(), a.mcpProxyCmd(), a.mcpRunCmd(), a.mcpConfigCmd())
}

// mcpServer is one row of `mcp list`: names only, never a value.
type mcpServer struct {
	ID        string   `json:"id"`
	Name      string   `json:"name,omitempty"`
	InCatalog bool     `json:"in_catalog"`
	Command   string   `json:"command"`
	Args      []string `json:"args"`
	// Configured: mcp_servers.json holds the server (its keys are in the credential store).
	Configured bool     `json:"configured"`
	EnvKeys    []string `json:"env_keys"`
	// Missing names the required keys the configuration lacks.
	Missing   []string            `json:"missing_keys,omitempty"`
	Grants    map[string][]string `json:"grants"`
	ActiveFor []string            `json:"active_for"`
}

// mcpListing is what mcp list shows: the local servers, then the remote ones.
type mcpListing struct {
	Remote  []mcp.RemoteServerInfo `json:"remote"`
	Servers []mcpServer            `json:"servers"`
}

func (a *app) mcpListCmd() *cobra.Command {
	var agent string
	return a.command(spec{
		use:   "list [--agent <agent>]",
		short: "List the configured MCP servers with their keys' names, or those an agent sees",
		long: `List the MCP servers of mcp_servers.json: each with its command, the names of the
environment keys stored for it in the credential store (never their values), the agents
granted and the agents it is active for. Servers the file holds that the catalog does not
know are listed too ("in_catalog": false); grantwire does not manage them.

Remote MCP servers (grantwire mcp add) follow, with their URL, the issuer of the
authorization server they were authorized at and the scopes it granted ("remote" in --json).

With --agent, list the servers whose tools that agent sees: those it holds a grant for AND
is active for.`,
		example: `  grantwire mcp list
  grantwire mcp list --agent builtin:research
  grantwire mcp list --json | jq -r '.servers[] | select(.missing_keys) | .id'`,
		args: noArgs,
		run: operation[mcpListing]{
			call: func(ctx context.Context, c *grantwire.Client, _ []string) (l mcpListing, err error) {
				if l.Servers, err = mcpServers(ctx, c, agent); err != nil {
					return l, err
				}
				if l.Remote, err = mcp.Of(c).RemoteServers(ctx, agent); l.Remote == nil {
					l.Remote = []mcp.RemoteServerInfo{}
				}
				return l, err
			},
			render: func(l mcpListing, _ []string) error {
				if err := a.printLocal(agent, l.Servers, len(l.Remote) > 0); err != nil {
					return err
				}
				return a.printRemote(agent, l.Remote)
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&agent, "agent", "", "only the servers this agent sees (granted and active)")
		},
	})
}

// printLocal prints the local MCP servers of mcp list (nothing when there are none but
// remote ones).
func (a *app) printLocal(agent string, servers []mcpServer, remote bool) error {
	if len(servers) == 0 && remote {
		return nil
	}
	if len(servers) == 0 {
		if agent != "" {
			a.printf("No MCP server is visible to %s (a server is visible when the agent holds a grant for it AND it is active for the agent).\n", agent)
		} else {
			a.printf("No MCP servers are configured. grantwire catalog --tier search lists some; grantwire configure <id> --from-stdin adds one.\n")
		}
		return nil
	}
	if agent != "" {
		a.printf("MCP servers visible to %s (granted and active):\n", agent)
	}
	rows := make([][]string, 0, len(servers))
	for _, s := range servers {
		keys := orDash(s.EnvKeys)
		switch {
		case !s.Configured:
			keys = "not configured"
		case len(s.Missing) > 0:
			keys += " (missing " + strings.Join(s.Missing, ",") + ")"
		}
		id := s.ID
		if !s.InCatalog {
			id += " (not in the catalog)"
		}
		command := strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
		rows = append(rows, []string{id, command, keys, orDash(slices.Sorted(maps.Keys(s.Grants))), orDash(s.ActiveFor)})
	}
	return a.printTable([]string{"ID", "COMMAND", "KEYS", "GRANTED", "ACTIVE FOR"}, rows)
}

// mcpServers lists the servers of mcp_servers.json, or those an agent sees (the policy's
// mcp_list).
func mcpServers(ctx context.Context, c *grantwire.Client, agent string) ([]mcpServer, error) {
	list, err := mcp.Of(c).Servers(ctx, agent)
	if err != nil {
		return nil, err
	}
	out := make([]mcpServer, 0, len(list))
	for _, s := range list {
		out = append(out, mcpServer{ID: s.ID, Name: s.Name, InCatalog: s.InCatalog, Command: s.Command,
			Args: nonNilStrings(s.Args), Configured: s.Configured, EnvKeys: nonNilStrings(s.EnvKeys),
			Missing: s.MissingKeys, Grants: s.Grants, ActiveFor: nonNilStrings(s.ActiveFor)})
	}
	return out, nil
}
