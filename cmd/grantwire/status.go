package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/grantwire/grantwire/internal/oprun"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
)

func (a *app) statusCmd() *cobra.Command {
	return a.command(spec{
		use:     "status [connector]",
		aliases: []string{"list"},
		short:   "Show what is connected and configured, and which agents may use it",
		long: `Show every catalog connector (or one) with its state: connected or not (OAuth, with the
account and scopes), configured or not (MCP servers, with the environment keys stored), the
agents granted and the agents it is active for.

Read-only: a connection issued under an OAuth client that has since changed is reported as
stale and nothing is cleared. Secrets are never shown, with or without --json.`,
		example: `  grantwire status
  grantwire status google
  grantwire status --json | jq -r '.connectors[] | select(.configured) | .id'`,
		args: maxArgs(1),
		run: operation[[]grantwire.ConnectorStatus]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) ([]grantwire.ConnectorStatus, error) {
				return status(ctx, c, optionalArg(args))
			},
			json: func(rows []grantwire.ConnectorStatus, _ []string) any {
				return map[string]any{"home": a.home, "keyring_service": a.service, "connectors": rows}
			},
			render: func(rows []grantwire.ConnectorStatus, _ []string) error {
				cells := make([][]string, 0, len(rows))
				for _, r := range rows {
					state, detail := describeStatus(r)
					cells = append(cells, []string{r.ID, r.Type, state, detail, orDash(slices.Sorted(maps.Keys(r.Grants))), orDash(r.Activations)})
				}
				return a.printTable([]string{"ID", "TYPE", "STATE", "DETAIL", "GRANTED", "ACTIVE"}, cells)
			},
		}.runE(a),
	})
}

// status runs the read-only status operation for every connector, or one.
func status(ctx context.Context, c *grantwire.Client, id string) ([]grantwire.ConnectorStatus, error) {
	args := map[string]any{}
	if id != "" {
		args["connector"] = id
	}
	out, err := oprun.Of(c).Do(ctx, "status", args, nil)
	if err != nil {
		return nil, err
	}
	var r struct {
		Connectors []grantwire.ConnectorStatus `json:"connectors"`
	}
	if err := json.Unmarshal(out.Result, &r); err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	for i := range r.Connectors {
		if r.Connectors[i].Grants == nil {
			r.Connectors[i].Grants = map[string][]string{}
		}
		if r.Connectors[i].Activations == nil {
			r.Connectors[i].Activations = []string{}
		}
	}
	return r.Connectors, nil
}

func describeStatus(r grantwire.ConnectorStatus) (state, detail string) {
	if r.Type == catalog.TypeMCPRemote {
		if !r.Configured {
			return "not authorized", r.URL
		}
		return "authorized", fmt.Sprintf("%s, %d scope(s)", r.Issuer, len(r.Scopes))
	}
	if r.Type == catalog.TypeMCPServer {
		if !r.Configured {
			return "not configured", "-"
		}
		if len(r.EnvKeys) == 0 {
			return "configured", "no keys"
		}
		return "configured", strings.Join(r.EnvKeys, ",")
	}
	if !r.Configured {
		if r.ClientConfigured {
			return "not connected", "client configured"
		}
		return "not connected", "no client"
	}
	state = "connected"
	if r.Tripwire != "" && r.Tripwire != "ok" {
		state = "stale (" + r.Tripwire + ")"
	}
	account := r.Account
	if account == "" {
		account = "(account unknown)"
	}
	return state, fmt.Sprintf("%s, %d scope(s)", account, len(r.Scopes))
}

func orDash(list []string) string {
	if len(list) == 0 {
		return "-"
	}
	return strings.Join(list, ",")
}
