package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/mcp"
)

// testResult is what `grantwire test` reports.
type testResult struct {
	Connector string `json:"connector"`
	OK        bool   `json:"ok"`
	Detail    string `json:"detail"`
	Code      string `json:"code,omitempty"`
	Fix       string `json:"fix,omitempty"`
	failure   error  // what failed, whose code the command exits with
}

func (a *app) testCmd() *cobra.Command {
	var agent string
	var scopes []string
	return a.command(spec{
		use:   "test <connector>",
		short: "Check that a connector is usable",
		long: `Check that a connector is usable and print "<connector>: OK|FAIL  <detail>".

OAuth providers: the connection exists and was issued under the configured client (the
tripwire, read-only). With --agent, an access token is also obtained as that agent (through
both layers of the gate, refreshing if needed), which proves the refresh token works; the
token is never printed.

MCP servers: the configuration holds every required key and the command is on PATH. With
--agent, the credential is also read from the credential store as that agent (values are
never printed).

A failure exits with the code of its error (4 not connected or not granted, 3
configuration, ...), or 1 when the command is missing.`,
		example: `  grantwire test google
  grantwire test google --agent builtin:email --scopes https://www.googleapis.com/auth/gmail.modify
  grantwire test mcp-github --agent builtin:code
  grantwire test mcp-brave-search --json`,
		args: exactArgs(1),
		run: operation[testResult]{
			parse: func(*cobra.Command, []string) error {
				if len(scopes) > 0 && agent == "" {
					return usagef("--scopes needs --agent (the scopes are checked against that agent's grant)")
				}
				return nil
			},
			call: func(ctx context.Context, c *grantwire.Client, args []string) (testResult, error) {
				id := args[0]
				detail, failure := a.test(ctx, c, id, agent, scopes)
				res := testResult{Connector: id, OK: failure == nil, Detail: detail, failure: failure}
				var ge *grantwire.Error
				if errors.As(failure, &ge) {
					if errors.Is(failure, grantwire.ErrUnknownConnector) || errors.Is(failure, grantwire.ErrUsage) {
						return res, failure
					}
					res.Code, res.Fix, res.Detail = ge.Code, ge.Fix, ge.Summary
				} else if failure != nil {
					res.Detail = failure.Error()
				}
				return res, nil
			},
			render: func(res testResult, _ []string) error {
				verdict := "OK"
				if !res.OK {
					verdict = "FAIL"
				}
				a.printf("%s: %s  %s\n", res.Connector, verdict, res.Detail)
				if res.Fix != "" {
					a.printf("fix: %s\n", res.Fix)
				}
				return nil
			},
			// A failure is printed as the result: the exit code is its error's, nothing more is printed.
			then: func(res testResult, _ []string) error {
				if res.failure != nil {
					return silent{res.failure}
				}
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&agent, "agent", "", "also fetch the credential as this agent")
			addList(cmd.Flags(), &scopes, "scopes", "scopes", "scopes to request with --agent (OAuth: at least one, a token carries every scope of its connection)")
		},
	})
}

// test asks the policy whether the connector is usable (test_connector), then checks what
// only this machine can tell (a local MCP server's command is on PATH) and, with an agent,
// fetches the credential through the gate.
func (a *app) test(ctx context.Context, c *grantwire.Client, id, agent string, scopes []string) (string, error) {
	r, err := c.Test(ctx, id)
	if err != nil {
		return "", err
	}
	detail := r.Detail
	if r.Type == catalog.TypeMCPServer {
		path, err := a.LookPath(r.Command)
		if err != nil {
			return "", fmt.Errorf("the command %q is not on PATH; install it to run %s", r.Command, id)
		}
		detail += fmt.Sprintf("; %s is %s", r.Command, path)
	}
	if agent == "" {
		if r.Type == catalog.TypeMCPServer {
			return detail + "; pass --agent to also read the credential", nil
		}
		return detail + "; pass --agent to also fetch a token", nil
	}
	if r.Type == catalog.TypeMCPServer {
		cred, err := mcp.Of(c).Credential(ctx, id, agent)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s; %s can read its %d value(s)", detail, agent, len(cred.Env)), nil
	}
	tok, err := c.GetAccessToken(ctx, id, scopes, agent)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; %s obtained a token valid until %s", detail, agent, tok.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z")), nil
}

// silent is an error whose message the command has already printed: exit uses its code
// without printing it again.
type silent struct{ err error }

func (s silent) Error() string { return s.err.Error() }
func (s silent) Unwrap() error { return s.err }
