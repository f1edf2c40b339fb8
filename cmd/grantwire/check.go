package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
)

// testResult is what `grantwire test` reports.
type testResult struct {
	Connector string `json:"connector"`
	OK        bool   `json:"ok"`
	Detail    string `json:"detail"`
	Code      string `json:"code,omitempty"`
	Fix       string `json:"fix,omitempty"`
}

func (a *app) testCmd() *cobra.Command {
	var agent string
	var scopes []string
	cmd := &cobra.Command{
		Use:   "test <connector>",
		Short: "Check that a connector is usable",
		Long: `Check that a connector is usable and print "<connector>: OK|FAIL  <detail>".

OAuth providers: the connection exists and was issued under the configured client (the
tripwire, read-only). With --agent, an access token is also obtained as that agent (through
both layers of the gate, refreshing if needed), which proves the refresh token works; the
token is never printed.

MCP servers: the configuration holds every required key and the command is on PATH. With
--agent, the credential is also read from the credential store as that agent (values are
never printed).

A failure exits with the code of its error (4 not connected or not granted, 3
configuration, ...), or 1 when the command is missing.`,
		Example: `  grantwire test google
  grantwire test google --agent builtin:email --scopes https://www.googleapis.com/auth/gmail.modify
  grantwire test mcp-github --agent builtin:code
  grantwire test mcp-brave-search --json`,
		Args: exactArgs(1),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id := args[0]
			cat, err := a.Catalog()
			if err != nil {
				return err
			}
			e, ok := cat.Entry(id)
			if !ok {
				return a.unknownConnector(ctx, id)
			}
			if len(scopes) > 0 && agent == "" {
				return usagef("--scopes needs --agent (the scopes are checked against that agent's grant)")
			}
			rows, err := a.status(ctx, id)
			if err != nil {
				return err
			}
			if len(rows) != 1 {
				return fmt.Errorf("status of %s returned %d rows", id, len(rows))
			}
			row := rows[0]
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			var detail string
			var failure error
			switch e.Type {
			case catalog.TypeMCPServer:
				detail, failure = a.testMCP(cmd, c, e, row, agent)
			default:
				detail, failure = a.testOAuth(cmd, c, e, row, agent, scopes)
			}
			res := testResult{Connector: id, OK: failure == nil, Detail: detail}
			var ge *grantwire.Error
			if errors.As(failure, &ge) {
				res.Code, res.Fix = ge.Code, ge.Fix
				res.Detail = strings.TrimSuffix(ge.Message, "; fix: "+ge.Fix)
			} else if failure != nil {
				res.Detail = failure.Error()
			}
			if a.jsonOut {
				if err := a.printJSON(res); err != nil {
					return err
				}
			} else {
				verdict := "OK"
				if !res.OK {
					verdict = "FAIL"
				}
				a.printf("%s: %s  %s\n", id, verdict, res.Detail)
				if res.Fix != "" {
					a.printf("fix: %s\n", res.Fix)
				}
			}
			if failure != nil {
				return silent{failure}
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "also fetch the credential as this agent")
	addList(cmd.Flags(), &scopes, "scopes", "scopes", "scopes to request with --agent (OAuth; default: none beyond the grant)")
	return cmd
}

func (a *app) testOAuth(cmd *cobra.Command, c *grantwire.Client, e catalog.Entry, row grantwire.ConnectorStatus, agent string, scopes []string) (string, error) {
	ctx := cmd.Context()
	if !row.Configured {
		return "", a.codeError(ctx, "NOT_CONNECTED", e.ID+" is not connected",
			"grantwire connect "+e.ID+" --scopes "+strings.Join(e.DefaultScopes, ","))
	}
	if row.Tripwire != "" && row.Tripwire != "ok" {
		return "", a.codeError(ctx, "REAUTH_REQUIRED",
			fmt.Sprintf("the %s connection must be authorized again (%s); it is cleared on its next use", e.ID, row.Tripwire),
			"grantwire connect "+e.ID+" --scopes "+strings.Join(row.Scopes, ","))
	}
	detail := fmt.Sprintf("connected as %s with %d scope(s)", orUnknown(row.Account), len(row.Scopes))
	if agent == "" {
		return detail + "; pass --agent to also fetch a token", nil
	}
	tok, err := c.GetAccessToken(ctx, e.ID, scopes, agent)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; %s obtained a token valid until %s", detail, agent, tok.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z")), nil
}

func (a *app) testMCP(cmd *cobra.Command, c *grantwire.Client, e catalog.Entry, row grantwire.ConnectorStatus, agent string) (string, error) {
	ctx := cmd.Context()
	if !row.Configured {
		return "", a.codeError(ctx, "NOT_CONNECTED", e.ID+" is not configured", "grantwire configure "+e.ID+" --from-stdin")
	}
	have := map[string]bool{}
	for _, k := range row.EnvKeys {
		have[k] = true
	}
	var missing []string
	for _, k := range e.Env {
		if k.Required && !have[k.Key] {
			missing = append(missing, k.Key)
		}
	}
	if len(missing) > 0 {
		return "", a.codeError(ctx, "CONFIGURATION", "configuration error: "+e.ID+" lacks "+strings.Join(missing, ", "),
			"grantwire configure "+e.ID+" --from-stdin")
	}
	path, err := a.LookPath(e.Command)
	if err != nil {
		return "", fmt.Errorf("the command %q is not on PATH; install it to run %s", e.Command, e.ID)
	}
	detail := fmt.Sprintf("configured (%s); %s is %s", orNone(row.EnvKeys), e.Command, path)
	if agent == "" {
		return detail + "; pass --agent to also read the credential", nil
	}
	cred, err := c.Credential(ctx, e.ID, agent)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; %s can read its %d value(s)", detail, agent, len(cred.Env)), nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(account unknown)"
	}
	return s
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no keys"
	}
	return strings.Join(list, ", ")
}

// silent is an error whose message the command has already printed: exit uses its code
// without printing it again.
type silent struct{ err error }

func (s silent) Error() string { return s.err.Error() }
func (s silent) Unwrap() error { return s.err }
