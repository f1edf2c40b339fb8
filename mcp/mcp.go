// Package mcp is the Go API's MCP surface, over package grantwire: mcp.Of(client) runs
// the policy's MCP operations on the client's shell and engine — local MCP servers
// (configured keys, the credential an agent's server starts with, the launch gate, the
// tool rules per agent) and remote MCP servers behind OAuth 2.1 (add, authorize, the
// 401/403 answer, fresh tokens, logout, remove). Errors are *grantwire.Error values, as
// the root's are (docs/behaviour.md#local-mcp-servers, #remote-mcp-servers).
package mcp

import (
	"context"
	"fmt"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/oprun"
)

// Client is a grantwire client's MCP surface: local MCP servers (their credentials, the
// launch gate, the tool rules) and remote MCP servers behind OAuth 2.1. It runs the same
// policy operations on the same shell as the client it was taken from.
type Client struct {
	c *grantwire.Client
	r oprun.Runner
}

// Of returns c's MCP surface.
func Of(c *grantwire.Client) *Client { return &Client{c: c, r: oprun.Of(c)} }

// asError is the *grantwire.Error of an operation's core error (nil stays nil).
func (c *Client) asError(ce *core.Error) *grantwire.Error {
	e, _ := c.r.AsError(ce).(*grantwire.Error)
	return e
}

func (c *Client) activate(ctx context.Context, connector, agent string, scopes []string, extra map[string]any) (*grantwire.Activation, error) {
	args := map[string]any{"connector": connector, "agent": agent}
	if scopes != nil {
		args["scopes"] = scopes
	}
	for k, v := range extra {
		args[k] = v
	}
	var r grantwire.Activation
	_, err := c.r.Run(ctx, "activate", args, nil, &r)
	return &r, err
}

// VisibleServers lists the MCP connectors whose tools agent sees (granted and active).
func (c *Client) VisibleServers(ctx context.Context, agent string) ([]string, error) {
	var r struct {
		Servers []string `json:"servers"`
	}
	_, err := c.r.Run(ctx, "visible_servers", map[string]any{"agent": agent}, nil, &r)
	return r.Servers, err
}

// Credential is what an MCP server needs to start for a granted agent.
type Credential struct {
	Connector string
	Command   string
	Args      []string
	Env       map[string]string
}

// Credential returns an MCP server's command and environment for a granted agent.
func (c *Client) Credential(ctx context.Context, connector, agent string) (*Credential, error) {
	var r struct {
		Command string                       `json:"command"`
		Args    []string                     `json:"args"`
		Env     map[string]hostabi.SecretRef `json:"env"`
	}
	env, err := c.runResolved(ctx, "credential", connector, agent, &r, &r.Env)
	if err != nil {
		return nil, err
	}
	return &Credential{Connector: connector, Command: r.Command, Args: r.Args, Env: env}, nil
}

// runResolved runs op (credential, launch) for connector and agent into r, then reads the
// values behind the secret references *refs that r holds (an environment of keys from the
// credential store).
func (c *Client) runResolved(ctx context.Context, op, connector, agent string, r any, refs *map[string]hostabi.SecretRef) (map[string]string, error) {
	out, err := c.r.Run(ctx, op, map[string]any{"connector": connector, "agent": agent}, nil, r)
	if err != nil {
		return nil, err
	}
	env := make(map[string]string, len(*refs))
	for k, ref := range *refs {
		v, ok := out.Secret(ref.Ref)
		if !ok {
			return nil, fmt.Errorf("grantwire: %s reference %q unresolved", op, ref.Ref)
		}
		env[k] = v
	}
	return env, nil
}

// Server is one row of Servers: names only, never a value (as `grantwire mcp list` shows
// it).
type Server struct {
	ID        string   `json:"id"`
	Name      string   `json:"name,omitempty"`
	InCatalog bool     `json:"in_catalog"`
	Command   string   `json:"command"`
	Args      []string `json:"args"`
	// Configured: mcp_servers.json holds the server (its keys are in the credential store).
	Configured bool     `json:"configured"`
	EnvKeys    []string `json:"env_keys"`
	// MissingKeys names the required keys the configuration lacks.
	MissingKeys []string            `json:"missing_keys,omitempty"`
	Grants      map[string][]string `json:"grants"`
	ActiveFor   []string            `json:"active_for"`
}

// Servers lists the MCP servers of mcp_servers.json (with the names of their keys, never
// the values), or with an agent, the servers that agent sees (granted and active).
func (c *Client) Servers(ctx context.Context, agent string) ([]Server, error) {
	return listServers[Server](ctx, c, "mcp_list", agent)
}

// listServers runs a listing operation (mcp_list, mcp_remote_list), of every server or of
// those agent sees, and returns its "servers".
func listServers[T any](ctx context.Context, c *Client, op, agent string) ([]T, error) {
	args := map[string]any{}
	if agent != "" {
		args["agent"] = agent
	}
	var r struct {
		Servers []T `json:"servers"`
	}
	_, err := c.r.Run(ctx, op, args, nil, &r)
	return r.Servers, err
}
