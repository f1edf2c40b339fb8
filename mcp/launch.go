package mcp

import (
	"context"
	"fmt"
	"github.com/grantwire/grantwire"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Launch is what using an MCP server takes for an agent the launch gate allowed
// (docs/behaviour.md#local-mcp-servers): a local server's command, arguments and
// environment, or a remote server's URL.
type Launch struct {
	Connector string
	Agent     string
	Type      string   // "mcp_server" (local) or "mcp_remote"
	Scopes    []string // the scopes of the agent's grant
	// A local server: how to start it (mcp_servers.json's entry, else the catalog's), and
	// the names of its environment values.
	Command string
	Args    []string
	EnvKeys []string
	// Env holds a local server's environment values from the credential store. They live
	// only in this process's memory: pass them to the server's environment (Environ) and
	// nowhere else. String and GoString never show them.
	Env map[string]string
	// URL is a remote server's address.
	URL string
}

// Environ returns base (in os.Environ's form, "KEY=value") with every value of Env set,
// replacing a variable of the same name, for exec.Cmd.Env.
func (l Launch) Environ(base []string) []string {
	out := make([]string, 0, len(base)+len(l.Env))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := l.Env[name]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(l.Env))
	for k := range l.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+l.Env[k])
	}
	return out
}

// String describes the launch by the names of its values, never the values.
func (l Launch) String() string {
	if l.Type == "mcp_remote" {
		return fmt.Sprintf("%s %s for %s at %s", l.Type, l.Connector, l.Agent, l.URL)
	}
	return fmt.Sprintf("%s %s for %s: %s %s (env %s)", l.Type, l.Connector, l.Agent, l.Command,
		strings.Join(l.Args, " "), strings.Join(l.EnvKeys, ", "))
}

// GoString is String, so that %#v never prints a value either.
func (l Launch) GoString() string { return l.String() }

// launchResult is the launch operation's result (policy/grantwire/launch).
type launchResult struct {
	Connector string                       `json:"connector"`
	Agent     string                       `json:"agent"`
	Type      string                       `json:"type"`
	Ready     bool                         `json:"ready"`
	Refusal   *core.Error                  `json:"refusal"`
	Scopes    []string                     `json:"scopes"`
	Command   string                       `json:"command"`
	Args      []string                     `json:"args"`
	EnvKeys   []string                     `json:"env_keys"`
	Env       map[string]hostabi.SecretRef `json:"env"`
	URL       string                       `json:"url"`
}

// Launch asks the launch gate whether agent may use the MCP server connector now: the
// agent must hold a grant for it and be active for it, and a local server must be
// configured with every required key. Only then are the server's values read from the
// credential store, into Launch.Env. A refusal is an *grantwire.Error with the fixing command
// (AGENT_NOT_GRANTED, AGENT_NOT_ACTIVE, NOT_CONNECTED, CONFIGURATION).
func (c *Client) Launch(ctx context.Context, connector, agent string) (*Launch, error) {
	var r launchResult
	env, err := c.runResolved(ctx, "launch", connector, agent, &r, &r.Env)
	if err != nil {
		return nil, err
	}
	return &Launch{Connector: r.Connector, Agent: r.Agent, Type: r.Type, Scopes: jsonx.NonNil(r.Scopes),
		Command: r.Command, Args: jsonx.NonNil(r.Args), EnvKeys: jsonx.NonNil(r.EnvKeys), Env: env, URL: r.URL}, nil
}

// Readiness is the launch gate's answer without any secret read (CheckLaunch).
type Readiness struct {
	Connector string
	Agent     string
	Type      string // "mcp_server" (local) or "mcp_remote"
	Ready     bool
	// Refusal says why the agent may not use the server yet, with the fixing command
	// (nil when Ready).
	Refusal *grantwire.Error
	Scopes  []string
	EnvKeys []string
	URL     string
}

// CheckLaunch asks the launch gate whether agent may use the MCP server connector,
// reading no secret: a refusal of the gate is Ready false with the Refusal; an unknown
// connector or one that is not an MCP server is an error.
func (c *Client) CheckLaunch(ctx context.Context, connector, agent string) (*Readiness, error) {
	var r launchResult
	if _, err := c.r.Run(ctx, "launch", map[string]any{"connector": connector, "agent": agent, "check": true}, nil, &r); err != nil {
		return nil, err
	}
	return &Readiness{Connector: r.Connector, Agent: r.Agent, Type: r.Type, Ready: r.Ready,
		Refusal: c.asError(r.Refusal), Scopes: jsonx.NonNil(r.Scopes), EnvKeys: jsonx.NonNil(r.EnvKeys), URL: r.URL}, nil
}
