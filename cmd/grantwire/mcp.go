package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/safetext"
)

// mcpRemoteMissing says what the CLI does not do (BEHAVIOUR.md lists mcp auth|logout).
const mcpRemoteMissing = `remote MCP servers behind OAuth 2.1 (mcp auth, mcp logout) are not supported yet: grantwire has no remote MCP client, so it cannot discover, register with or authorize one`

func (a *app) mcpCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "List the MCP servers configured for agents (local servers; remote MCP OAuth is not available yet)",
		Long: `MCP servers started on this machine with API keys in their environment (mcp_server
connectors) are configured with grantwire configure <id> --from-stdin and shown to agents with
grantwire activations activate <id> <agent>; grantwire mcp list shows them, with the names of
their keys (never the values).

Not available yet: ` + mcpRemoteMissing + `.`,
		Example: `  grantwire mcp list
  grantwire mcp list --agent builtin:chat
  grantwire mcp list --json | jq -r '.[].id'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (args[0] == "auth" || args[0] == "logout") {
				return usagef("grantwire mcp %s: %s; local MCP servers take their keys with grantwire configure <id> --from-stdin", args[0], mcpRemoteMissing)
			}
			return a.group(cmd, args)
		},
	}
	cmd.AddCommand(a.mcpListCmd())
	return cmd
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

func (a *app) mcpListCmd() *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:   "list [--agent <agent>]",
		Short: "List the configured MCP servers with their keys' names, or those an agent sees",
		Long: `List the MCP servers of mcp_servers.json: each with its command, the names of the
environment keys stored for it in the credential store (never their values), the agents
granted and the agents it is active for. Servers the file holds that the catalog does not
know are listed too ("in_catalog": false); grantwire does not manage them.

With --agent, list the servers whose tools that agent sees: those it holds a grant for AND
is active for.`,
		Example: `  grantwire mcp list
  grantwire mcp list --agent builtin:research
  grantwire mcp list --json | jq -r '.[] | select(.missing_keys) | .id'`,
		Args: cobra.NoArgs,
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			servers, err := a.mcpServers(ctx, agent)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(servers)
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
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCOMMAND\tKEYS\tGRANTED\tACTIVE FOR")
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
				safetext.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, command, keys, orDash(sortedKeys(s.Grants)), orDash(s.ActiveFor))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only the servers this agent sees (granted and active)")
	return cmd
}

// mcpServers gathers the rows: the catalog's MCP servers from the (read-only) status
// operation, plus the servers of mcp_servers.json that the catalog does not know.
func (a *app) mcpServers(ctx context.Context, agent string) ([]mcpServer, error) {
	cat, err := a.Catalog()
	if err != nil {
		return nil, err
	}
	rows, err := a.status(ctx, "")
	if err != nil {
		return nil, err
	}
	var visible map[string]bool
	if agent != "" {
		c, err := a.Client(ctx)
		if err != nil {
			return nil, err
		}
		ids, err := c.VisibleServers(ctx, agent)
		if err != nil {
			return nil, err
		}
		visible = map[string]bool{}
		for _, id := range ids {
			visible[id] = true
		}
	}
	out := []mcpServer{}
	for _, r := range rows {
		if r.Type != catalog.TypeMCPServer {
			continue
		}
		if (visible == nil && !r.Configured) || (visible != nil && !visible[r.ID]) {
			continue
		}
		e, _ := cat.Entry(r.ID)
		out = append(out, catalogServer(e, r))
	}
	if visible == nil {
		extra, err := a.unmanagedServers(ctx, cat)
		if err != nil {
			return nil, err
		}
		out = append(out, extra...)
	}
	return out, nil
}

func catalogServer(e catalog.Entry, r grantwire.ConnectorStatus) mcpServer {
	s := mcpServer{
		ID: r.ID, Name: e.Name(), InCatalog: true, Command: e.Command, Args: nonNilStrings(e.Args),
		Configured: r.Configured, EnvKeys: nonNilStrings(r.EnvKeys), Grants: r.Grants, ActiveFor: r.Activations,
	}
	have := map[string]bool{}
	for _, k := range r.EnvKeys {
		have[k] = true
	}
	for _, k := range e.Env {
		if k.Required && !have[k.Key] && r.Configured {
			s.Missing = append(s.Missing, k.Key)
		}
	}
	return s
}

// unmanagedServers reads mcp_servers.json for servers the catalog does not know (added by
// another tool). A file the status operation could read is read the same way here; only
// names are taken from it.
func (a *app) unmanagedServers(ctx context.Context, cat *catalog.Catalog) ([]mcpServer, error) {
	c, err := a.Client(ctx)
	if err != nil {
		return nil, err
	}
	raw, _, err := c.Host().Capabilities().Ledgers.Read(ctx, hostabi.LedgerMCPServers)
	if err != nil || raw == nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return nil, nil // the status operation reports an unreadable ledger
	}
	key := "mcpServers"
	if _, ok := doc[key]; !ok {
		key = "servers"
	}
	var servers map[string]struct {
		Command string                     `json:"command"`
		Args    []string                   `json:"args"`
		Env     map[string]json.RawMessage `json:"env"`
	}
	if json.Unmarshal(doc[key], &servers) != nil {
		return nil, nil
	}
	var out []mcpServer
	for _, id := range sortedKeys(servers) {
		if _, known := cat.Entry(id); known {
			continue
		}
		s := servers[id]
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out = append(out, mcpServer{ID: id, Command: s.Command, Args: nonNilStrings(s.Args), Configured: true,
			EnvKeys: keys, Grants: map[string][]string{}, ActiveFor: []string{}})
	}
	return out, nil
}
