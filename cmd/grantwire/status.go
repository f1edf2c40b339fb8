package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/grantwire/grantwire/internal/oprun"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/safetext"
)

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "status [connector]",
		Aliases: []string{"list"},
		Short:   "Show what is connected and configured, and which agents may use it",
		Long: `Show every catalog connector (or one) with its state: connected or not (OAuth, with the
account and scopes), configured or not (MCP servers, with the environment keys stored), the
agents granted and the agents it is active for.

Read-only: a connection issued under an OAuth client that has since changed is reported as
stale and nothing is cleared. Secrets are never shown, with or without --json.`,
		Example: `  grantwire status
  grantwire status google
  grantwire status --json | jq -r '.connectors[] | select(.configured) | .id'`,
		Args: maxArgs(1),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			rows, err := a.status(cmd.Context(), id)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"home": a.home, "keyring_service": a.service, "connectors": rows})
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTYPE\tSTATE\tDETAIL\tGRANTED\tACTIVE")
			for _, r := range rows {
				state, detail := describeStatus(r)
				safetext.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Type, state, detail, orDash(slices.Sorted(maps.Keys(r.Grants))), orDash(r.Activations))
			}
			return tw.Flush()
		}),
	}
}

// status runs the read-only status operation for every connector, or one.
func (a *app) status(ctx context.Context, id string) ([]grantwire.ConnectorStatus, error) {
	c, err := a.Client(ctx)
	if err != nil {
		return nil, err
	}
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
