package main

// The grants and activations commands: one table of (connector, agent) pair commands, each
// parse → call the client's operation → render.

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/safetext"
	"github.com/grantwire/grantwire/mcp"
)

func (a *app) grantsCmd() *cobra.Command {
	return a.command(spec{
		use:   "grants",
		short: "Grant, list and revoke agents' access to connectors",
		long: `A grant says agent A may use connector C's credentials with scopes S. Every connector type
takes grants; an agent without one learns nothing about the connection. Grants hold no
secrets.`,
		example: `  grantwire grants grant google builtin:email --scopes https://www.googleapis.com/auth/gmail.modify
  grantwire grants list
  grantwire grants revoke google builtin:email`,
	}, a.grantsGrantCmd(), a.grantsListCmd(), a.grantsRevokeCmd())
}

func (a *app) activationsCmd() *cobra.Command {
	return a.command(spec{
		use:   "activations",
		short: "Show or hide MCP servers' tools for agents",
		long: `An activation says agent A currently sees MCP server C's tools. A tool is visible iff the
agent holds a grant for the server AND the pair is active; absent means inactive.
Activations apply to MCP servers only: on an OAuth provider they are a configuration error
(exit 3) and per-agent access is a grant.`,
		example: `  grantwire activations activate mcp-github builtin:chat
  grantwire activations activate mcp-github builtin:chat --tools get_file,search_code
  grantwire activations check mcp-github builtin:chat push_files
  grantwire activations list
  grantwire activations deactivate mcp-github builtin:chat`,
	}, a.activateCmd(), a.activationsListCmd(), a.deactivateCmd(), a.activationsCheckCmd())
}

func (a *app) grantsGrantCmd() *cobra.Command {
	var scopes []string
	return a.command(spec{
		use:   "grant <connector> <agent> --scopes <scopes>",
		short: "Let an agent use a connector with the given scopes (replacing its earlier scopes)",
		long: `Let an agent use a connector with the given scopes. The scopes replace whatever the pair held
(they are stored sorted, without duplicates). Scopes are exact strings: nothing is implied
(gmail.modify does not cover gmail.readonly). An MCP server's grant is usually "use".`,
		example: `  grantwire grants grant google builtin:email --scopes https://www.googleapis.com/auth/gmail.modify,https://www.googleapis.com/auth/gmail.send
  grantwire grants grant mcp-github custom:3f2a9c0d1e4b5a69:reviewer --scopes use`,
		args: exactArgs(2),
		run: operation[*grantwire.GrantResult]{
			parse: func(cmd *cobra.Command, _ []string) error {
				if !cmd.Flags().Changed("scopes") {
					return usagef("grants grant needs --scopes (\"use\" for an MCP server; --scopes '' records a grant of no scope, which hands out no token)")
				}
				return nil
			},
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*grantwire.GrantResult, error) {
				return c.Grant(ctx, args[0], args[1], scopes)
			},
			render: func(res *grantwire.GrantResult, _ []string) error {
				suffix := ""
				if !res.Changed {
					suffix = " (unchanged)"
				}
				a.printf("Granted %s → %s: %s%s\n", res.Connector, res.Agent, scopesOr(res.Scopes, "no scope (it hands out no token)"), suffix)
				a.warnAll(res.Warnings)
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			addList(cmd.Flags(), &scopes, "scopes", "scopes", "the scopes to grant (repeatable; commas or spaces separate several)")
		},
	})
}

func (a *app) grantsListCmd() *cobra.Command {
	type row struct {
		Connector string   `json:"connector"`
		Agent     string   `json:"agent"`
		Scopes    []string `json:"scopes"`
	}
	return a.command(spec{
		use:   "list [connector]",
		short: "List the grants of every connector, or of one",
		example: `  grantwire grants list
  grantwire grants list google
  grantwire grants list --json | jq -r '.grants[] | select(.connector == "google") | .agent'`,
		args: maxArgs(1),
		run: operation[map[string]map[string][]string]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) (map[string]map[string][]string, error) {
				return c.ListGrants(ctx, optionalArg(args))
			},
			json: func(grants map[string]map[string][]string, _ []string) any {
				rows := []row{}
				eachPair(grants, func(conn, agent string, scopes []string) {
					rows = append(rows, row{conn, agent, jsonx.NonNil(scopes)})
				})
				return map[string]any{"grants": rows}
			},
			render: func(grants map[string]map[string][]string, args []string) error {
				if len(grants) == 0 {
					if connector := optionalArg(args); connector != "" {
						a.printf("No grants for %s.\n", connector)
					} else {
						a.printf("No grants.\n")
					}
					return nil
				}
				var rows [][]string
				eachPair(grants, func(conn, agent string, scopes []string) {
					rows = append(rows, []string{conn, agent, scopesOr(scopes, "-")})
				})
				return a.printTable([]string{"CONNECTOR", "AGENT", "SCOPES"}, rows)
			},
		}.runE(a),
	})
}

func (a *app) grantsRevokeCmd() *cobra.Command {
	return a.command(spec{
		use:   "revoke <connector> <agent>",
		short: "Remove an agent's grant on a connector (and its activation)",
		long: `Remove an agent's grant on a connector; an MCP server's tools then disappear for it too.
Revoking what is not granted succeeds and changes nothing.`,
		example: `  grantwire grants revoke google builtin:email`,
		args:    exactArgs(2),
		run: operation[*grantwire.RevokeResult]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*grantwire.RevokeResult, error) {
				res, err := c.RevokeGrant(ctx, args[0], args[1])
				if err == nil && res.Warnings == nil {
					res.Warnings = []string{}
				}
				return res, err
			},
			json: func(res *grantwire.RevokeResult, args []string) any {
				return map[string]any{"connector": args[0], "agent": args[1], "changed": res.Changed, "summary": res.Summary, "warnings": res.Warnings}
			},
			render: func(res *grantwire.RevokeResult, _ []string) error {
				a.printf("%s\n", res.Summary)
				a.warnAll(res.Warnings)
				return nil
			},
		}.runE(a),
	})
}

func (a *app) activateCmd() *cobra.Command {
	var scopes, tools, explicit []string
	var allTools, toolsSet bool
	return a.command(spec{
		use:   "activate <connector> <agent> [--scopes <scopes>] [--tools <names> | --all-tools]",
		short: "Show an MCP server's tools to an agent, granting it first if needed",
		long: `Show an MCP server's tools to an agent. One click: with no grant for the pair, one is
created with --scopes if given, else the scopes the agent declares for the server
(grantwire agents list), else "use" for an agent that consumes MCP servers; with none of
these it is a configuration error naming what to pass. An existing grant is never changed.

--tools sets the pair's tool rule: the agent then sees and may call only the tools named
(grantwire mcp run and mcp proxy filter tools/list and refuse other tools/call); --tools ''
allows none. --all-tools removes the rule (every tool, as without one).`,
		example: `  grantwire activations activate mcp-brave-search builtin:chat
  grantwire activations activate mcp-github installed:reviewer --scopes use
  grantwire activations activate mcp-github builtin:chat --tools get_file,search_code
  grantwire activations activate mcp-github builtin:chat --all-tools`,
		args: exactArgs(2),
		run: operation[*grantwire.Activation]{
			parse: func(cmd *cobra.Command, _ []string) error {
				explicit = nil
				if cmd.Flags().Changed("scopes") {
					explicit = scopes
				}
				toolsSet = cmd.Flags().Changed("tools")
				if toolsSet && allTools {
					return usagef("--tools and --all-tools exclude each other")
				}
				return nil
			},
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*grantwire.Activation, error) {
				switch {
				case toolsSet:
					return mcp.Of(c).Tools().Allow(ctx, args[0], args[1], tools, explicit)
				case allTools:
					return mcp.Of(c).Tools().AllowAll(ctx, args[0], args[1], explicit)
				}
				return c.Activate(ctx, args[0], args[1], explicit)
			},
			render: func(res *grantwire.Activation, _ []string) error {
				if res.AutoGranted {
					a.printf("Granted %s → %s: %s (%s)\n", res.Connector, res.Agent, strings.Join(res.Scopes, " "), grantSourceText(res.GrantSource))
				}
				if res.Changed || res.AutoGranted {
					a.printf("Activated %s for %s.\n", res.Connector, res.Agent)
				} else {
					a.printf("%s was already active for %s.\n", res.Connector, res.Agent)
				}
				switch {
				case toolsSet && len(res.Tools) == 0:
					a.printf("Tools of %s for %s: none.\n", res.Connector, res.Agent)
				case toolsSet:
					safetext.Fprintf(a.Stdout, "Tools of %s for %s: %s.\n", res.Connector, res.Agent, strings.Join(res.Tools, ", "))
				case allTools:
					a.printf("Tools of %s for %s: all.\n", res.Connector, res.Agent)
				}
				a.warnAll(res.Warnings)
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			addList(cmd.Flags(), &scopes, "scopes", "scopes", "scopes of the grant to create when the pair has none")
			addList(cmd.Flags(), &tools, "tools", "tools", "the only tools the agent may see and call (comma-separated; '' for none)")
			cmd.Flags().BoolVar(&allTools, "all-tools", false, "remove the pair's tool rule: every tool of the server")
		},
	})
}

func (a *app) activationsCheckCmd() *cobra.Command {
	return a.command(spec{
		use:   "check <connector> <agent> <tool>",
		short: "Say whether an agent may call one tool of an MCP server (exit 4 and the fix if not)",
		long: `Ask the decision grantwire mcp run and mcp proxy ask before each tools/call: the agent
must be granted and active for the server, and the pair's tool rule, if any, must list the
tool. A refusal exits 4 with the command that allows it.`,
		example: `  grantwire activations check mcp-github builtin:chat push_files`,
		args:    exactArgs(3),
		run: operation[*mcp.ToolVerdict]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*mcp.ToolVerdict, error) {
				return mcp.Of(c).Tools().Check(ctx, args[0], args[1], args[2])
			},
			json: func(v *mcp.ToolVerdict, _ []string) any {
				return map[string]any{"connector": v.Connector, "agent": v.Agent, "tool": v.Tool, "rule": v.Rule, "allowed": true}
			},
			render: func(v *mcp.ToolVerdict, _ []string) error {
				how := "its tool rule lists it"
				if v.Rule == "all" {
					how = "no tool rule: every tool"
				}
				safetext.Fprintf(a.Stdout, "%s may use %s of %s (%s).\n", v.Agent, v.Tool, v.Connector, how)
				return nil
			},
		}.runE(a),
	})
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

// activeTools is what activations list reads: the active pairs and their tool rules.
type activeTools struct {
	acts  map[string]map[string]bool
	rules map[string]map[string][]string
}

// each calls f for every active pair with its tool rule (nil: no rule, every tool).
func (t activeTools) each(f func(conn, agent string, rule *[]string)) {
	eachPair(t.acts, func(conn, agent string, active bool) {
		if !active {
			return
		}
		if r, ok := t.rules[conn][agent]; ok {
			r = jsonx.NonNil(r)
			f(conn, agent, &r)
			return
		}
		f(conn, agent, nil)
	})
}

func (a *app) activationsListCmd() *cobra.Command {
	type row struct {
		Connector string    `json:"connector"`
		Agent     string    `json:"agent"`
		Tools     *[]string `json:"tools,omitempty"` // the tool rule; absent: every tool
	}
	return a.command(spec{
		use:   "list [connector]",
		short: "List the activations of every MCP server, or of one",
		example: `  grantwire activations list
  grantwire activations list mcp-github --json`,
		args: maxArgs(1),
		run: operation[activeTools]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) (t activeTools, err error) {
				if t.acts, err = c.ListActivations(ctx, optionalArg(args)); err != nil {
					return t, err
				}
				t.rules, err = mcp.Of(c).Tools().Rules(ctx, optionalArg(args))
				return t, err
			},
			json: func(t activeTools, _ []string) any {
				rows := []row{}
				t.each(func(conn, agent string, rule *[]string) { rows = append(rows, row{conn, agent, rule}) })
				return map[string]any{"activations": rows}
			},
			render: func(t activeTools, _ []string) error {
				var rows [][]string
				t.each(func(conn, agent string, rule *[]string) {
					tools := "all"
					if rule != nil && len(*rule) == 0 {
						tools = "none"
					} else if rule != nil {
						tools = strings.Join(*rule, ",")
					}
					rows = append(rows, []string{conn, agent, tools})
				})
				if len(rows) == 0 {
					a.printf("No activations.\n")
					return nil
				}
				return a.printTable([]string{"CONNECTOR", "AGENT", "TOOLS"}, rows)
			},
		}.runE(a),
	})
}

func (a *app) deactivateCmd() *cobra.Command {
	return a.command(spec{
		use:     "deactivate <connector> <agent>",
		short:   "Hide an MCP server's tools from an agent (the grant is kept)",
		example: `  grantwire activations deactivate mcp-github builtin:chat`,
		args:    exactArgs(2),
		run: operation[bool]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) (bool, error) {
				return c.Deactivate(ctx, args[0], args[1])
			},
			json: func(changed bool, args []string) any {
				return map[string]any{"connector": args[0], "agent": args[1], "active": false, "changed": changed}
			},
			render: func(changed bool, args []string) error {
				if changed {
					a.printf("Deactivated %s for %s (the grant is kept).\n", args[0], args[1])
				} else {
					a.printf("%s was not active for %s.\n", args[0], args[1])
				}
				return nil
			},
		}.runE(a),
	})
}

// scopesOr is a list of scopes as the CLI prints them (space-separated), or none when it is
// empty (a grant of no scope).
func scopesOr(scopes []string, none string) string {
	if len(scopes) == 0 {
		return none
	}
	return strings.Join(scopes, " ")
}
