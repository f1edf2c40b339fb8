package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// leaves returns the command path (without "grantwire") of every runnable command.
func leaves(t *testing.T) [][]string {
	t.Helper()
	root := (&app{env: env{}}).rootCmd()
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.Runnable() && len(path) > 0 {
			out = append(out, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(root, nil)
	require.GreaterOrEqual(t, len(out), 20)
	return out
}

// With --json, every error of every command — a bad flag, wrong arguments, an unknown
// command — is one JSON object on stderr, and stdout stays empty.
func TestEveryErrorIsJSONWithJSON(t *testing.T) {
	tw := newWorld(t)
	isJSONError := func(args []string, r result) {
		t.Helper()
		require.NotEqual(t, 0, r.code, "%v", args)
		require.Empty(t, r.stdout, "%v", args)
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Exit    int    `json:"exit"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stderr), &e), "%v: stderr is not one JSON object: %s", args, r.stderr)
		require.NotEmpty(t, e.Error.Code, "%v", args)
		require.NotEmpty(t, e.Error.Message, "%v", args)
		require.Equal(t, r.code, e.Error.Exit, "%v", args)
	}
	for _, path := range leaves(t) {
		for _, tail := range [][]string{
			{"--no-such-flag"},
			{"a1", "a2", "a3", "a4"}, // more arguments than any command takes
		} {
			for _, where := range []string{"first", "last"} {
				args := append(append([]string(nil), path...), tail...)
				if where == "first" {
					args = append([]string{"--json"}, args...)
				} else {
					args = append(args, "--json")
				}
				isJSONError(args, tw.gw(args...))
			}
		}
	}
	for _, args := range [][]string{
		{"--json"}, {"--json", "bogus"}, {"bogus", "--json"}, {"grants", "--json"}, {"--json", "activations", "toggle"},
		{"--json=true", "--engine", "lua", "status"}, {"connect", "--json"}, {"--json", "catalog", "--tier", "bogus"},
	} {
		isJSONError(args, tw.gw(args...))
	}
	r := tw.gw("--json=false", "bogus")
	require.Equal(t, 2, r.code)
	require.True(t, strings.HasPrefix(r.stderr, "grantwire: "), "--json=false: text: %s", r.stderr)
}

// Every --json listing is an object whose named array holds the rows.
func TestJSONListingsAreObjectsWithANamedArray(t *testing.T) {
	tw := newWorld(t)
	for _, tc := range []struct {
		args []string
		key  string
	}{
		{[]string{"catalog"}, "connectors"},
		{[]string{"status"}, "connectors"},
		{[]string{"grants", "list"}, "grants"},
		{[]string{"activations", "list"}, "activations"},
		{[]string{"mcp", "list"}, "servers"},
		{[]string{"mcp", "list", "--agent", "builtin:chat"}, "servers"},
		{[]string{"agents", "list"}, "agents"},
	} {
		r := tw.gw(append(tc.args, "--json")...)
		require.Equal(t, 0, r.code, "%v: %s", tc.args, r.stderr)
		var doc map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), "%v: not an object: %s", tc.args, r.stdout)
		var rows []json.RawMessage
		require.NoError(t, json.Unmarshal(doc[tc.key], &rows), "%v: %q is not an array", tc.args, tc.key)
		require.NotNil(t, rows, "%v: %q is an array, never null", tc.args, tc.key)
	}
}
