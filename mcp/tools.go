package mcp

import (
	"context"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/oprun"
)

// Tools is the handle on the tool rules per agent (docs/behaviour.md#tools): which of an
// MCP server's tools an active agent may use. No rule for a pair means every tool; a rule
// lists the tool names the agent may see and call.
type Tools struct{ c *Client }

// Tools returns the handle on the tool rules.
func (c *Client) Tools() *Tools { return &Tools{c: c} }

// Allow activates connector for agent (granting scopes first when the pair holds no grant,
// as Activate does) and sets its tool rule to exactly names (an empty list allows no tool).
func (t *Tools) Allow(ctx context.Context, connector, agent string, names, scopes []string) (*grantwire.Activation, error) {
	if names == nil {
		names = []string{}
	}
	return t.c.activate(ctx, connector, agent, scopes, map[string]any{"tools": names})
}

// AllowAll activates connector for agent (as Activate does) and removes its tool rule:
// the agent may use every tool of the server again.
func (t *Tools) AllowAll(ctx context.Context, connector, agent string, scopes []string) (*grantwire.Activation, error) {
	return t.c.activate(ctx, connector, agent, scopes, map[string]any{"all_tools": true})
}

// ToolVerdict is the mcp_tool decision on one tool or on a server's list.
type ToolVerdict struct {
	Connector string `json:"connector"`
	Agent     string `json:"agent"`
	// Rule is "all" (no rule: every tool) or "listed".
	Rule string `json:"rule"`
	// Tool and Allowed: the check of one tool (Check); a refusal is an error instead.
	Tool string `json:"tool"`
	// Names the agent may see, in the order given, and those it may not (Filter).
	Names   []string `json:"-"`
	Refused []string `json:"refused"`
}

// Check asks whether agent may call tool of MCP server connector now. nil means allowed;
// a refusal is an *Error: ErrToolNotAllowed (its Fix the command that allows the tool), or
// the launch gate's ErrAgentNotGranted / ErrAgentNotActive. Each call is one decision (a
// record in the decision log: who asked for which tool, and the verdict).
func (t *Tools) Check(ctx context.Context, connector, agent, tool string) (*ToolVerdict, error) {
	var r ToolVerdict
	if _, err := t.c.r.Run(ctx, "mcp_tool", map[string]any{"connector": connector, "agent": agent, "tool": tool}, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Filter returns which of names (a server's tools/list) agent may see, in their order.
func (t *Tools) Filter(ctx context.Context, connector, agent string, names []string) (*ToolVerdict, error) {
	if names == nil {
		names = []string{}
	}
	var r struct {
		ToolVerdict
		Allowed []string `json:"allowed"`
	}
	if _, err := t.c.r.Run(ctx, "mcp_tool", map[string]any{"connector": connector, "agent": agent, "tools": names}, nil, &r); err != nil {
		return nil, err
	}
	v := r.ToolVerdict
	v.Names, v.Refused = jsonx.NonNil(r.Allowed), jsonx.NonNil(v.Refused)
	return &v, nil
}

// Rules returns the tool rules {connector: {agent: tool names}}, of one connector or (with
// "") of all. A pair without a rule is absent (every tool).
func (t *Tools) Rules(ctx context.Context, connector string) (map[string]map[string][]string, error) {
	return oprun.Listing[[]string](ctx, t.c.r, "list_activations", "tools", connector)
}
