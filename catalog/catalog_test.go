package catalog_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/hostabi/memhost"
)

func TestEmbeddedCatalogIsCompleteAndValid(t *testing.T) {
	c, err := catalog.Load(nil)
	require.NoError(t, err)
	require.NoError(t, c.Strict(), "the embedded catalog passes the checks a user's file must pass")

	ids := c.IDs()
	require.GreaterOrEqual(t, len(ids), 23)
	tiers := map[string]int{}
	types := map[string]int{}
	idRE := regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	for _, e := range c.Entries() {
		require.Regexp(t, idRE, e.ID)
		require.Contains(t, catalog.Tiers, e.Tier, "%s: tier", e.ID)
		require.NotEmpty(t, e.Description, "%s: description", e.ID)
		require.NotEmpty(t, e.Category, "%s: category", e.ID)
		require.True(t, strings.HasPrefix(e.DocsURL, "https://"), "%s: docs_url", e.ID)
		tiers[e.Tier]++
		types[e.Type]++
		switch e.Type {
		case catalog.TypeOAuth:
			for _, u := range []string{e.AuthorizationURL, e.TokenURL, e.UserinfoURL} {
				if u != "" {
					require.True(t, strings.HasPrefix(u, "https://"), "%s: %s", e.ID, u)
				}
			}
			require.True(t, strings.HasPrefix(e.ClientIDEnv, "GRANTWIRE_"), "%s", e.ID)
			require.NotEmpty(t, e.DefaultScopes, e.ID)
		case catalog.TypeMCPServer:
			require.NotEmpty(t, e.Command, e.ID)
			require.True(t, strings.HasPrefix(e.ID, "mcp-"), "MCP server ids start with mcp- (as GAIA's do): %s", e.ID)
			require.Equal(t, []string{"use"}, e.DefaultScopes, e.ID)
		}
	}
	for _, tier := range catalog.Tiers {
		require.Positive(t, tiers[tier], "tier %s has connectors", tier)
	}
	require.GreaterOrEqual(t, types[catalog.TypeOAuth], 8)
	require.GreaterOrEqual(t, types[catalog.TypeMCPServer], 12)

	// GAIA's catalog ids are all here, with GAIA's types and tenants.
	for id, typ := range map[string]string{
		"google": "oauth_pkce", "microsoft": "oauth_pkce", "microsoft_work": "oauth_pkce",
		"mcp-git": "mcp_server", "mcp-github": "mcp_server", "mcp-memory": "mcp_server", "mcp-tavily": "mcp_server",
	} {
		e, ok := c.Entry(id)
		require.True(t, ok, id)
		require.Equal(t, typ, e.Type, id)
	}
	g, _ := c.Entry("google")
	require.True(t, g.ClientSecretNeeded, "Google requires the client secret")
	ms, _ := c.Entry("microsoft")
	require.Equal(t, "consumers", ms.Tenant)
	mw, _ := c.Entry("microsoft_work")
	require.Equal(t, "organizations", mw.Tenant)
	require.Equal(t, "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token",
		catalog.ExpandTenant(mw.TokenURL, "contoso.onmicrosoft.com"))
	lin, _ := c.Entry("linear")
	require.Equal(t, ",", lin.ScopeSeparator)
}

// The policy decides over every entry: status lists them all, every OAuth provider can be
// given a client and connected with its default scopes, every MCP server can be configured
// with its required keys, activated and handed to a granted agent.
func TestPolicyAcceptsEveryEntry(t *testing.T) {
	ctx := context.Background()
	c, err := catalog.Load(nil)
	require.NoError(t, err)
	e, err := wasmengine.New(ctx, wasmengine.WithData(c.Data()), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	defer e.Close(ctx)
	w := memhost.New(time.Unix(1_790_000_000, 0), 3)
	caps := w.Capabilities("")
	caps.Catalog = c.Connector
	cl, err := grantwire.New(ctx, grantwire.WithEngine(e), grantwire.WithCapabilities(caps))
	require.NoError(t, err)

	rows, err := cl.Status(ctx)
	require.NoError(t, err)
	require.Len(t, rows, len(c.IDs()))

	for _, entry := range c.Entries() {
		switch entry.Type {
		case catalog.TypeOAuth:
			secret := ""
			if entry.ClientSecretNeeded {
				secret = "client-secret"
			}
			require.NoError(t, cl.ConfigureClient(ctx, entry.ID, "client-"+entry.ID, secret, ""), entry.ID)
			res, err := cl.Connect(ctx, entry.ID, nil, nil)
			require.NoError(t, err, entry.ID)
			require.ElementsMatch(t, entry.DefaultScopes, res.Scopes, entry.ID)
			_, err = cl.Grant(ctx, entry.ID, "builtin:test", entry.DefaultScopes)
			require.NoError(t, err, entry.ID)
			tok, err := cl.GetAccessToken(ctx, entry.ID, entry.DefaultScopes, "builtin:test")
			require.NoError(t, err, entry.ID)
			require.NotEmpty(t, tok.AccessToken)
		case catalog.TypeMCPServer:
			env := map[string]string{}
			for _, k := range entry.Env {
				if k.Required {
					env[k.Key] = "value-of-" + k.Key
				}
			}
			require.NoError(t, cl.ConfigureMCP(ctx, entry.ID, env), entry.ID)
			act, err := cl.Activate(ctx, entry.ID, "builtin:test", []string{"use"})
			require.NoError(t, err, entry.ID)
			require.True(t, act.AutoGranted)
			cred, err := cl.Credential(ctx, entry.ID, "builtin:test")
			require.NoError(t, err, entry.ID)
			require.Equal(t, entry.Command, cred.Command)
			require.Equal(t, entry.Args, cred.Args)
			require.Equal(t, env, cred.Env)
		}
	}
	rows, err = cl.Status(ctx)
	require.NoError(t, err)
	for _, r := range rows {
		require.True(t, r.Configured, r.ID)
	}
}

func TestLoadFileErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, doc, want string
	}{
		{"not json", `{"connectors": `, "unexpected end"},
		{"no connectors", `{"connectors": {}}`, "no connectors"},
		{"duplicate id", `{"connectors": {"a": {"type": "mcp_server"}, "a": {"type": "mcp_server"}}}`, `"a" appears twice`},
		{"bad id", `{"connectors": {"Bad Id": {"type": "mcp_server"}}}`, `"Bad Id"`},
		{"unknown type", `{"connectors": {"x": {"type": "ftp"}}}`, `unknown type "ftp"`},
		{"http endpoint", `{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "core",
			"authorization_url": "http://example.com/a", "token_url": "https://example.com/t", "client_id_env": "X_ID",
			"default_scopes": ["a"], "available_scopes": ["a"]}}}`, "must be https"},
		{"default not available", `{"connectors": {"x": {"type": "oauth_pkce", "default_scopes": ["b"], "available_scopes": ["a"]}}}`, `default scope "b"`},
		{"placeholder without tenant", `{"connectors": {"x": {"type": "oauth_pkce", "token_url": "https://h/{tenant}/t"}}}`, "placeholder"},
		{"typo in a field", `{"connectors": {"x": {"type": "mcp_server", "display_name": "X", "tier": "dev", "command": "x", "evn": []}}}`, `unknown field "evn"`},
		{"missing endpoints", `{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "core"}}}`, "needs authorization_url"},
		{"mcp without command", `{"connectors": {"x": {"type": "mcp_server", "display_name": "X", "tier": "dev"}}}`, "needs command"},
		{"bad env key", `{"connectors": {"x": {"type": "mcp_server", "env": [{"key": "A-B"}]}}}`, `"A-B"`},
		{"env on oauth", `{"connectors": {"x": {"type": "oauth_pkce", "env": [{"key": "A"}]}}}`, "mcp_server connectors only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			require.NoError(t, os.WriteFile(p, []byte(tc.doc), 0o600))
			_, err := catalog.LoadFile(p)
			require.Error(t, err)
			require.Contains(t, err.Error(), p)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := catalog.LoadFile(filepath.Join(dir, "absent.json"))
	require.ErrorContains(t, err, "absent.json")
}

func TestLoadFileAcceptsACompleteOverride(t *testing.T) {
	p := filepath.Join(t.TempDir(), "catalog.json")
	doc := `{"connectors": {
	  "local": {"type": "oauth_pkce", "display_name": "Local", "tier": "dev",
	    "authorization_url": "http://127.0.0.1:8080/authorize", "token_url": "http://127.0.0.1:8080/token",
	    "client_id_env": "LOCAL_CLIENT_ID", "default_scopes": ["a"], "available_scopes": ["a", "b"]},
	  "my-server": {"type": "mcp_server", "display_name": "Mine", "tier": "community", "command": "my-server",
	    "env": [{"key": "MY_KEY", "required": true, "secret": true}]}}}`
	require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
	c, err := catalog.LoadFile(p)
	require.NoError(t, err)
	require.Equal(t, []string{"local", "my-server"}, c.IDs())
	e, ok := c.Entry("my-server")
	require.True(t, ok)
	k, ok := e.EnvKey("MY_KEY")
	require.True(t, ok)
	require.True(t, k.Secret)
	require.Equal(t, "community", c.Entries()[1].Tier, "unknown tiers sort after the known ones")
	require.JSONEq(t, doc, string(c.JSON()))
}

func TestLenientLoadKeepsMinimalCatalogs(t *testing.T) {
	c, err := catalog.Load([]byte(`{"connectors": {"google": {"type": "oauth_pkce", "default_scopes": ["openid"]}}}`))
	require.NoError(t, err)
	require.Error(t, c.Strict())
	require.Equal(t, []string{"google"}, c.IDs())
}
