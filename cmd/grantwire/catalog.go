package main

import (
	"fmt"
	"github.com/grantwire/grantwire/internal/oprun"
	"net/url"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/safetext"
)

func (a *app) catalogCmd() *cobra.Command {
	var tier string
	var raw bool
	cmd := &cobra.Command{
		Use:   "catalog [connector]",
		Short: "List the connectors that can be connected, or show one",
		Long: `List the catalog's connectors (OAuth providers and MCP servers) by tier, or show one
connector: its endpoints and scopes (OAuth) or its command and environment keys (MCP).

The catalog is embedded; --catalog FILE or $GRANTWIRE_CATALOG replaces it with a file.
--raw prints the catalog document itself, a starting point for such a file.`,
		Example: `  grantwire catalog
  grantwire catalog --tier search
  grantwire catalog google
  grantwire catalog --json | jq -r '.connectors[] | select(.type == "mcp_server") | .id'
  grantwire catalog --raw > my-catalog.json && grantwire --catalog my-catalog.json catalog`,
		Args: maxArgs(1),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			cat, err := a.Catalog()
			if err != nil {
				return err
			}
			if cat.Strict() {
				// A catalog file is judged by the policy before it is shown.
				engine, err := a.Engine(cmd.Context())
				if err != nil {
					return err
				}
				if err := oprun.ValidateCatalog(cmd.Context(), engine, cat); err != nil {
					return err
				}
			}
			if tiers := catalogTiers(cat); tier != "" && !slices.Contains(tiers, tier) {
				return usagef("--tier must be one of %s, not %q", strings.Join(tiers, ", "), tier)
			}
			if raw {
				_, err := a.Stdout.Write(append(cat.JSON(), '\n'))
				return err
			}
			if len(args) == 1 {
				e, ok := cat.Entry(args[0])
				if !ok {
					return a.unknownConnector(cmd.Context(), args[0])
				}
				if a.jsonOut {
					return a.printJSON(e)
				}
				a.showEntry(e)
				return nil
			}
			var list []catalog.Entry
			for _, e := range cat.Entries() {
				if tier == "" || e.Tier == tier {
					list = append(list, e)
				}
			}
			if a.jsonOut {
				if list == nil {
					list = []catalog.Entry{}
				}
				return a.printJSON(map[string]any{"connectors": list})
			}
			if len(list) == 0 {
				a.printf("No connectors in tier %q.\n", tier)
				return nil
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTYPE\tTIER\tNAME")
			for _, e := range list {
				safetext.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.ID, e.Type, e.Tier, e.Name())
			}
			return tw.Flush()
		}),
	}
	cmd.AddCommand(a.catalogSetCmd())
	cmd.Flags().StringVar(&tier, "tier", "", "only connectors of this tier ("+strings.Join(catalog.Tiers, ", ")+")")
	cmd.Flags().BoolVar(&raw, "raw", false, "print the catalog document ({\"connectors\": ...})")
	return cmd
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

func (a *app) showEntry(e catalog.Entry) {
	tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			safetext.Fprintf(tw, "%s:\t%s\n", k, v)
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
	_ = tw.Flush()
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
