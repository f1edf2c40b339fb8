package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/oprun"
)

// catalogView is what catalog shows: the document itself (--raw), one entry, or the
// entries of a tier (every one without --tier).
type catalogView struct {
	raw   verbatim
	entry *catalog.Entry
	list  []catalog.Entry
	tier  string
}

func (a *app) catalogCmd() *cobra.Command {
	var tier string
	var raw bool
	return a.command(spec{
		use:   "catalog [connector]",
		short: "List the connectors that can be connected, or show one",
		long: `List the catalog's connectors (OAuth providers and MCP servers) by tier, or show one
connector: its endpoints and scopes (OAuth) or its command and environment keys (MCP).

The catalog is embedded; --catalog FILE or $GRANTWIRE_CATALOG replaces it with a file.
--raw prints the catalog document itself, a starting point for such a file.`,
		example: `  grantwire catalog
  grantwire catalog --tier search
  grantwire catalog google
  grantwire catalog --json | jq -r '.connectors[] | select(.type == "mcp_server") | .id'
  grantwire catalog --raw > my-catalog.json && grantwire --catalog my-catalog.json catalog`,
		args: maxArgs(1),
		run: operation[catalogView]{
			do: func(ctx context.Context, args []string) (v catalogView, err error) {
				cat, err := a.Catalog()
				if err != nil {
					return v, err
				}
				if cat.Strict() {
					// A catalog file is judged by the policy before it is shown.
					engine, err := a.Engine(ctx)
					if err != nil {
						return v, err
					}
					if err := oprun.ValidateCatalog(ctx, engine, cat); err != nil {
						return v, err
					}
				}
				if tiers := catalogTiers(cat); tier != "" && !slices.Contains(tiers, tier) {
					return v, usagef("--tier must be one of %s, not %q", strings.Join(tiers, ", "), tier)
				}
				if raw {
					return catalogView{raw: append(cat.JSON(), '\n')}, nil
				}
				if len(args) == 1 {
					e, ok := cat.Entry(args[0])
					if !ok {
						return v, a.unknownConnector(ctx, args[0])
					}
					return catalogView{entry: &e}, nil
				}
				v = catalogView{list: []catalog.Entry{}, tier: tier}
				for _, e := range cat.Entries() {
					if tier == "" || e.Tier == tier {
						v.list = append(v.list, e)
					}
				}
				return v, nil
			},
			json: func(v catalogView, _ []string) any {
				switch {
				case v.raw != nil:
					return v.raw
				case v.entry != nil:
					return v.entry
				}
				return map[string]any{"connectors": v.list}
			},
			render: func(v catalogView, _ []string) error {
				switch {
				case v.raw != nil:
					_, err := a.Stdout.Write(v.raw)
					return err
				case v.entry != nil:
					return a.printTable(nil, entryRows(*v.entry))
				case len(v.list) == 0:
					a.printf("No connectors in tier %q.\n", v.tier)
					return nil
				}
				rows := make([][]string, 0, len(v.list))
				for _, e := range v.list {
					rows = append(rows, []string{e.ID, e.Type, e.Tier, e.Name()})
				}
				return a.printTable([]string{"ID", "TYPE", "TIER", "NAME"}, rows)
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&tier, "tier", "", "only connectors of this tier ("+strings.Join(catalog.Tiers, ", ")+")")
			cmd.Flags().BoolVar(&raw, "raw", false, "print the catalog document ({\"connectors\": ...})")
		},
	}, a.catalogSetCmd())
}

// catalogTiers are the standard tiers and any other tier the catalog's entries use.
func catalogTiers(cat *catalog.Catalog) []string {
	tiers := slices.Clone(catalog.Tiers)
	for _, e := range cat.Entries() {
		if e.Tier != "" && !slices.Contains(tiers, e.Tier) {
			tiers = append(tiers, e.Tier)
		}
	}
	return tiers
}

// entryRows are the "field: value" rows catalog <connector> prints of e (empty ones left out).
func entryRows(e catalog.Entry) [][]string {
	var rows [][]string
	row := func(k, v string) {
		if v != "" {
			rows = append(rows, []string{k + ":", v})
		}
	}
	row("id", e.ID)
	row("name", e.Name())
	row("type", e.Type)
	row("tier", e.Tier)
	row("category", e.Category)
	row("description", e.Description)
	row("docs", e.DocsURL)
	switch e.Type {
	case catalog.TypeOAuth:
		row("authorization", e.AuthorizationURL)
		row("issuer", issuerRow(e))
		row("token", e.TokenURL)
		row("userinfo", e.UserinfoURL)
		if e.DeviceAuthorizationURL != "" {
			device := e.DeviceAuthorizationURL + " (connect --device)"
			if e.DeviceScopes != nil {
				device += " for " + strings.Join(e.DeviceScopes, " ")
			}
			row("device", device)
		}
		row("tenant", e.Tenant)
		if len(e.AuthParams) > 0 {
			var kv []string
			for k, v := range e.AuthParams {
				kv = append(kv, k+"="+v)
			}
			sort.Strings(kv)
			row("parameters", strings.Join(kv, " "))
		}
		client := "$" + e.ClientIDEnv
		if e.ClientSecretRequired {
			client += " + $" + e.ClientSecretEnv + " (secret required)"
		} else if e.ClientSecretEnv != "" {
			client += " (optional secret $" + e.ClientSecretEnv + ")"
		}
		row("client", client+", or grantwire configure "+e.ID+" --client-id …")
		row("default scopes", strings.Join(e.DefaultScopes, " "))
		row("available scopes", strings.Join(e.AvailableScopes, " "))
	case catalog.TypeMCPServer:
		row("command", strings.TrimSpace(e.Command+" "+strings.Join(e.Args, " ")))
		if len(e.Env) == 0 {
			row("environment", "(none)")
		}
		for _, k := range e.Env {
			var tags []string
			if k.Required {
				tags = append(tags, "required")
			} else {
				tags = append(tags, "optional")
			}
			if k.Secret {
				tags = append(tags, "secret: stdin or file only")
			}
			desc := k.Key + " (" + strings.Join(tags, ", ") + ")"
			if k.Description != "" {
				desc += " " + k.Description
			}
			row("env", desc)
		}
	case catalog.TypeMCPRemote:
		row("url", e.URL)
	}
	return rows
}

// issuerRow is the issuer an authorization response of e must name (RFC 9207): the
// catalog's, else the origin of its authorization endpoint (the policy's oauth.issuer).
func issuerRow(e catalog.Entry) string {
	if e.Issuer != "" {
		return e.Issuer + " (every authorization response must name it)"
	}
	u, err := url.Parse(e.AuthorizationURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + " (not in the catalog: the authorization endpoint's origin, if a response names one)"
}

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
