package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/safetext"
	"github.com/grantwire/grantwire/mcp"
)

func (a *app) activationsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "activations",
		Short: "Show or hide MCP servers' tools for agents",
		Long: `An activation says agent A currently sees MCP server C's tools. A tool is visible iff the
agent holds a grant for the server AND the pair is active; absent means inactive.
Activations apply to MCP servers only: on an OAuth provider they are a configuration error
(exit 3) and per-agent access is a grant.`,
		Example: `  grantwire activations activate mcp-github builtin:chat
  grantwire activations activate mcp-github builtin:chat --tools get_file,search_code
  grantwire activations check mcp-github builtin:chat push_files
  grantwire activations list
  grantwire activations deactivate mcp-github builtin:chat`,
		Args: cobra.ArbitraryArgs,
		RunE: a.group,
	}
	cmd.AddCommand(a.activateCmd(), a.activationsListCmd(), a.deactivateCmd(), a.activationsCheckCmd())
	return cmd
}

func (a *app) activateCmd() *cobra.Command {
	var scopes, tools []string
	var allTools bool
	cmd := &cobra.Command{
		Use:   "activate <connector> <agent> [--scopes <scopes>] [--tools <names> | --all-tools]",
		Short: "Show an MCP server's tools to an agent, granting it first if needed",
		Long: `Show an MCP server's tools to an agent. One click: with no grant for the pair, one is
created with --scopes if given, else the scopes the agent declares for the server
(grantwire agents list), else "use" for an agent that consumes MCP servers; with none of
these it is a configuration error naming what to pass. An existing grant is never changed.

--tools sets the pair's tool rule: the agent then sees and may call only the tools named
(grantwire mcp run and mcp proxy filter tools/list and refuse other tools/call); --tools ''
allows none. --all-tools removes the rule (every tool, as without one).`,
		Example: `  grantwire activations activate mcp-brave-search builtin:chat
  grantwire activations activate mcp-github installed:reviewer --scopes use
  grantwire activations activate mcp-github builtin:chat --tools get_file,search_code
  grantwire activations activate mcp-github builtin:chat --all-tools`,
		Args: exactArgs(2),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			var explicit []string
			if cmd.Flags().Changed("scopes") {
				explicit = scopes
			}
			var res *grantwire.Activation
			switch {
			case cmd.Flags().Changed("tools") && allTools:
				return usagef("--tools and --all-tools exclude each other")
			case cmd.Flags().Changed("tools"):
				res, err = mcp.Of(c).Tools().Allow(ctx, args[0], args[1], tools, explicit)
			case allTools:
				res, err = mcp.Of(c).Tools().AllowAll(ctx, args[0], args[1], explicit)
			default:
				res, err = c.Activate(ctx, args[0], args[1], explicit)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res)
			}
			if res.AutoGranted {
				a.printf("Granted %s → %s: %s (%s)\n", res.Connector, res.Agent, strings.Join(res.Scopes, " "), grantSourceText(res.GrantSource))
			}
			if res.Changed || res.AutoGranted {
				a.printf("Activated %s for %s.\n", res.Connector, res.Agent)
			} else {
				a.printf("%s was already active for %s.\n", res.Connector, res.Agent)
			}
			switch {
			case cmd.Flags().Changed("tools") && len(res.Tools) == 0:
				a.printf("Tools of %s for %s: none.\n", res.Connector, res.Agent)
			case cmd.Flags().Changed("tools"):
				safetext.Fprintf(a.Stdout, "Tools of %s for %s: %s.\n", res.Connector, res.Agent, strings.Join(res.Tools, ", "))
			case allTools:
				a.printf("Tools of %s for %s: all.\n", res.Connector, res.Agent)
			}
			for _, w := range res.Warnings {
				a.warnf("%s", w)
			}
			return nil
		}),
	}
	addList(cmd.Flags(), &scopes, "scopes", "scopes", "scopes of the grant to create when the pair has none")
	addList(cmd.Flags(), &tools, "tools", "tools", "the only tools the agent may see and call (comma-separated; '' for none)")
	cmd.Flags().BoolVar(&allTools, "all-tools", false, "remove the pair's tool rule: every tool of the server")
	return cmd
}

func (a *app) activationsCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check <connector> <agent> <tool>",
		Short: "Say whether an agent may call one tool of an MCP server (exit 4 and the fix if not)",
		Long: `Ask the decision grantwire mcp run and mcp proxy ask before each tools/call: the agent
must be granted and active for the server, and the pair's tool rule, if any, must list the
tool. A refusal exits 4 with the command that allows it.`,
		Example: `  grantwire activations check mcp-github builtin:chat push_files`,
		Args:    exactArgs(3),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			v, err := mcp.Of(c).Tools().Check(ctx, args[0], args[1], args[2])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"connector": v.Connector, "agent": v.Agent, "tool": v.Tool, "rule": v.Rule, "allowed": true})
			}
			how := "its tool rule lists it"
			if v.Rule == "all" {
				how = "no tool rule: every tool"
			}
			safetext.Fprintf(a.Stdout, "%s may use %s of %s (%s).\n", v.Agent, v.Tool, v.Connector, how)
			return nil
		}),
	}
}

func grantSourceText(s string) string {
	switch s {
	case "declared":
		return "the scopes the agent declares"
	case "consumes_mcp_servers":
		return "the agent consumes MCP servers"
	case "explicit":
		return "as given"
	}
	return s
}

func (a *app) activationsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [connector]",
		Short: "List the activations of every MCP server, or of one",
		Example: `  grantwire activations list
  grantwire activations list mcp-github --json`,
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
			acts, err := c.ListActivations(ctx, connector)
			if err != nil {
				return err
			}
			rules, err := mcp.Of(c).Tools().Rules(ctx, connector)
			if err != nil {
				return err
			}
			ruleOf := func(conn, agent string) *[]string {
				if r, ok := rules[conn][agent]; ok {
					r = nonNilStrings(r)
					return &r
				}
				return nil
			}
			if a.jsonOut {
				type row struct {
					Connector string    `json:"connector"`
					Agent     string    `json:"agent"`
					Tools     *[]string `json:"tools,omitempty"` // the tool rule; absent: every tool
				}
				rows := []row{}
				for _, conn := range slices.Sorted(maps.Keys(acts)) {
					for _, agent := range slices.Sorted(maps.Keys(acts[conn])) {
						if acts[conn][agent] {
							rows = append(rows, row{conn, agent, ruleOf(conn, agent)})
						}
					}
				}
				return a.printJSON(map[string]any{"activations": rows})
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			rows := 0
			for _, conn := range slices.Sorted(maps.Keys(acts)) {
				for _, agent := range slices.Sorted(maps.Keys(acts[conn])) {
					if !acts[conn][agent] {
						continue
					}
					if rows == 0 {
						fmt.Fprintln(tw, "CONNECTOR\tAGENT\tTOOLS")
					}
					rows++
					tools := "all"
					if r := ruleOf(conn, agent); r != nil && len(*r) == 0 {
						tools = "none"
					} else if r != nil {
						tools = strings.Join(*r, ",")
					}
					safetext.Fprintf(tw, "%s\t%s\t%s\n", conn, agent, tools)
				}
			}
			if rows == 0 {
				a.printf("No activations.\n")
				return nil
			}
			return tw.Flush()
		}),
	}
}

func (a *app) deactivateCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "deactivate <connector> <agent>",
		Short:   "Hide an MCP server's tools from an agent (the grant is kept)",
		Example: `  grantwire activations deactivate mcp-github builtin:chat`,
		Args:    exactArgs(2),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			changed, err := c.Deactivate(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"connector": args[0], "agent": args[1], "active": false, "changed": changed})
			}
			if changed {
				a.printf("Deactivated %s for %s (the grant is kept).\n", args[0], args[1])
			} else {
				a.printf("%s was not active for %s.\n", args[0], args[1])
			}
			return nil
		}),
	}
}
