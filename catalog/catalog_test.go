package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/grantwire/grantwire/internal/oprun"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/mcp"
)

// compiled shares the compiled policy between the engines of this package's tests (each
// catalog is its own data document, so each needs its own engine).
var compiled = sync.OnceValue(wazero.NewCompilationCache)

// world returns a memhost world whose authorization server answers at the endpoints of
// cat, and a client on it deciding with cat (grantwire.New validates a file's catalog
// strictly with the policy's validate_catalog operation).
func world(t *testing.T, cat *catalog.Catalog) (*grantwire.Client, *memhost.World, error) {
	t.Helper()
	ctx := context.Background()
	e, err := wasmengine.New(ctx, wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(1),
		wasmengine.WithCompilationCache(compiled()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(ctx) })
	w := memhost.New(time.Unix(1_790_000_000, 0), 3)
	memshell.Serve(w, cat)
	c, err := grantwire.New(ctx, grantwire.WithEngine(e), grantwire.WithCatalog(cat),
		grantwire.WithCapabilities(w.Capabilities("")))
	if err == nil {
		t.Cleanup(func() { _ = c.Close(ctx) })
	}
	return c, w, err
}

// validate runs the policy's validate_catalog operation on a client.
func validate(t *testing.T, c *grantwire.Client, strict bool) ([]string, error) {
	t.Helper()
	out, err := oprun.Of(c).Do(context.Background(), "validate_catalog", map[string]any{"strict": strict}, nil)
	if err != nil {
		return nil, err
	}
	var r struct {
		Problems []string `json:"problems"`
	}
	require.NoError(t, json.Unmarshal(out.Result, &r))
	return r.Problems, nil
}

func TestEmbeddedCatalogIsCompleteAndValid(t *testing.T) {
	c := catalog.Default()
	cl, _, err := world(t, c)
	require.NoError(t, err)
	problems, err := validate(t, cl, true)
	require.NoError(t, err, "the embedded catalog passes the checks a user's file must pass")
	require.Empty(t, problems)

	// `grantwire catalog --raw > my.json`, then `--catalog my.json`: the embedded catalog
	// written to a file is a valid override, judged strictly by the policy.
	p := filepath.Join(t.TempDir(), "my.json")
	require.NoError(t, os.WriteFile(p, catalog.Defaults(), 0o600))
	fromFile, err := catalog.LoadFile(p)
	require.NoError(t, err)
	require.True(t, fromFile.Strict())
	require.False(t, c.Strict(), "the embedded catalog is not a user's file")
	_, _, err = world(t, fromFile)
	require.NoError(t, err)
	require.Equal(t, c.IDs(), fromFile.IDs())
	require.JSONEq(t, string(c.Data()), string(fromFile.Data()), "a file keeps the built-in agents")

	ids := c.IDs()
	require.GreaterOrEqual(t, len(ids), 30)
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
			for _, u := range []string{e.AuthorizationURL, e.TokenURL, e.UserinfoURL, e.RevocationURL} {
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
	require.GreaterOrEqual(t, types[catalog.TypeOAuth], 10)
	require.GreaterOrEqual(t, types[catalog.TypeMCPServer], 20)

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
	require.True(t, g.ClientSecretRequired, "Google requires the client secret")
	require.Equal(t, "https://accounts.google.com", g.Issuer)
	ms, _ := c.Entry("microsoft")
	require.Equal(t, "consumers", ms.Tenant)
	mw, _ := c.Entry("microsoft_work")
	require.Equal(t, "organizations", mw.Tenant)
	require.Equal(t, "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token", mw.TokenURL)
	lin, _ := c.Entry("linear")
	require.Equal(t, ",", lin.ScopeSeparator)

	// The built-in agents ship with the catalog and reach the policy as data.agents.builtin.
	var data struct {
		Agents struct {
			Builtin []struct {
				ID string `json:"id"`
			} `json:"builtin"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal(c.Data(), &data))
	var builtins []string
	for _, a := range data.Agents.Builtin {
		builtins = append(builtins, a.ID)
	}
	require.Contains(t, builtins, "builtin:chat")
	agents, _, err := cl.Agents(context.Background())
	require.NoError(t, err)
	require.Len(t, agents, len(builtins), "every built-in agent is registered")
	for _, a := range agents {
		require.Equal(t, "builtin", a.Origin, a.ID)
		require.Contains(t, builtins, a.ID)
	}
}

// The policy decides over every entry: status lists them all, every OAuth provider can be
// given a client and connected with its default scopes, every MCP server can be configured
// with its required keys, activated and handed to a granted agent.
//
// The authorization server answers each provider at its endpoints with the tenant the test
// configures in place of {tenant} (microsoft_work's own, microsoft the catalog's default),
// so a connection reaches exactly the URLs its client's tenant names. (memshell.Serve
// serves "{tenant}" as any tenant, which cannot tell microsoft from microsoft_work: they
// share their endpoints.)
func TestPolicyAcceptsEveryEntry(t *testing.T) {
	ctx := context.Background()
	c := catalog.Default()
	w := memhost.New(time.Unix(1_790_000_000, 0), 3)
	tenants := map[string]string{"microsoft_work": "contoso.onmicrosoft.com"}
	memshell.Serve(w, c) // every provider at its URLs, a {tenant} in them any tenant
	e, err := wasmengine.New(ctx, wasmengine.WithData(c.Data()), wasmengine.WithPoolSize(1),
		wasmengine.WithCompilationCache(compiled()))
	require.NoError(t, err)
	defer e.Close(ctx)
	cl, err := grantwire.New(ctx, grantwire.WithEngine(e), grantwire.WithCatalog(c),
		grantwire.WithCapabilities(w.Capabilities("")))
	require.NoError(t, err)
	defer cl.Close(ctx)

	rows, err := cl.Status(ctx)
	require.NoError(t, err)
	require.Len(t, rows, len(c.IDs()))

	for _, entry := range c.Entries() {
		switch entry.Type {
		case catalog.TypeOAuth:
			secret := ""
			if entry.ClientSecretRequired {
				secret = "client-secret"
			}
			res, err := cl.Configure(ctx, entry.ID, grantwire.ConfigureInput{ClientID: "client-" + entry.ID, ClientSecret: secret, Tenant: tenants[entry.ID]})
			require.NoError(t, err, entry.ID)
			require.Equal(t, secret != "", res.HasSecret, entry.ID)
			wantTenant := entry.Tenant // a client without a tenant of its own uses the catalog's
			if t, ok := tenants[entry.ID]; ok {
				wantTenant = t
			}
			require.Equal(t, wantTenant, res.Tenant, entry.ID)
			if entry.Issuer != "" {
				// The provider names itself in the callback (RFC 9207), as Google does.
				w.Server.ScriptAuthorize(entry.ID, authserver.Authorization{Status: "ok", Iss: &entry.Issuer})
			}
			conn, err := cl.Connect(ctx, entry.ID, nil, nil)
			require.NoError(t, err, entry.ID)
			require.ElementsMatch(t, entry.DefaultScopes, conn.Scopes, entry.ID)
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
			_, err := cl.Configure(ctx, entry.ID, grantwire.ConfigureInput{Env: env})
			require.NoError(t, err, entry.ID)
			act, err := cl.Activate(ctx, entry.ID, "builtin:test", []string{"use"})
			require.NoError(t, err, entry.ID)
			require.True(t, act.AutoGranted)
			cred, err := mcp.Of(cl).Credential(ctx, entry.ID, "builtin:test")
			require.NoError(t, err, entry.ID)
			require.Equal(t, entry.Command, cred.Command)
			require.Equal(t, entry.Args, cred.Args)
			require.Equal(t, env, cred.Env)
		default:
			t.Fatalf("%s: type %s is not exercised by this test", entry.ID, entry.Type)
		}
	}
	rows, err = cl.Status(ctx)
	require.NoError(t, err)
	for _, r := range rows {
		require.True(t, r.Configured, r.ID)
	}
}

// What is not a catalog document at all is refused when the file is loaded, with its path.
func TestLoadFileErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, doc, want string
	}{
		{"not json", `{"connectors": `, "not valid JSON"},
		{"not an object", `["connectors"]`, "cannot unmarshal array"},
		{"duplicate id", `{"connectors": {"a": {"type": "mcp_server"}, "a": {"type": "mcp_server"}}}`, `duplicate member name "a"`},
		{"entry not an object", `{"connectors": {"a": ["mcp_server"]}}`, `connector "a"`},
		{"connectors not an object", `{"connectors": ["a"]}`, "cannot unmarshal array"},
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
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = catalog.LoadFile(dir)
	require.ErrorContains(t, err, dir+" is a directory, not a regular file")

	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, []byte(`{"connectors": {}, "pad": "`+strings.Repeat("x", catalog.MaxFileBytes)+`"}`), 0o600))
	_, err = catalog.LoadFile(big)
	require.ErrorContains(t, err, big+" is larger than")
}

// A file that is a catalog document is judged by the policy (validate_catalog, strict):
// grantwire.New refuses it with a CONFIGURATION error naming the file, the connector and
// the problem.
func TestPolicyRefusesIncompleteFiles(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, doc, want string
	}{
		{"no connectors", `{"connectors": {}}`, "catalog: the catalog has no connectors"},
		{"bad id", `{"connectors": {"Bad Id": {"type": "mcp_server", "display_name": "X", "tier": "dev", "command": "x"}}}`,
			`catalog: connector "Bad Id": the id must be 1-64 of a-z 0-9 _ . - starting with a letter or digit`},
		{"unknown type", `{"connectors": {"x": {"type": "ftp", "display_name": "X", "tier": "dev"}}}`,
			`catalog: connector "x": unknown type "ftp" (oauth_pkce, mcp_server or mcp_remote)`},
		{"http endpoint", `{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "core",
			"authorization_url": "http://example.com/a", "token_url": "https://example.com/t", "client_id_env": "X_ID",
			"default_scopes": ["a"], "available_scopes": ["a"]}}}`,
			`catalog: connector "x": authorization_url: plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)`},
		{"default not available", `{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "core",
			"authorization_url": "https://example.com/a", "token_url": "https://example.com/t", "client_id_env": "X_ID",
			"default_scopes": ["b"], "available_scopes": ["a"]}}}`,
			`catalog: connector "x": every default scope must be among available_scopes`},
		{"placeholder without tenant", `{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "core",
			"authorization_url": "https://example.com/a", "token_url": "https://h/{tenant}/t", "client_id_env": "X_ID",
			"default_scopes": ["a"], "available_scopes": ["a"]}}}`,
			`catalog: connector "x": token_url holds {tenant}, but only the endpoints of a provider with a tenant may`},
		{"typo in a field", `{"connectors": {"x": {"type": "mcp_server", "display_name": "X", "tier": "dev", "command": "x", "evn": []}}}`,
			`catalog: connector "x": unknown field(s) evn`},
		{"missing endpoints", `{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "core"}}}`,
			`catalog: connector "x": an oauth_pkce connector needs authorization_url, token_url, client_id_env, default_scopes and available_scopes`},
		{"mcp without command", `{"connectors": {"x": {"type": "mcp_server", "display_name": "X", "tier": "dev"}}}`,
			`catalog: connector "x": an mcp_server connector needs command`},
		{"remote without url", `{"connectors": {"x": {"type": "mcp_remote", "display_name": "X", "tier": "dev"}}}`,
			`catalog: connector "x": an mcp_remote connector needs url`},
		{"no display name", `{"connectors": {"x": {"type": "mcp_server", "tier": "dev", "command": "x"}}}`,
			`catalog: connector "x": display_name is required`},
		{"bad env key", `{"connectors": {"x": {"type": "mcp_server", "display_name": "X", "tier": "dev", "command": "x",
			"env": [{"key": "A-B"}]}}}`,
			`catalog: connector "x": env must be a list of {key, required, secret, description} with distinct environment variable names`},
		{"env on oauth", `{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "core",
			"authorization_url": "https://example.com/a", "token_url": "https://example.com/t", "client_id_env": "X_ID",
			"default_scopes": ["a"], "available_scopes": ["a"], "env": [{"key": "A"}]}}}`,
			`catalog: connector "x": command, args and env are for mcp_server connectors only`},
		{"secret without its variable", `{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "core",
			"authorization_url": "https://example.com/a", "token_url": "https://example.com/t", "client_id_env": "X_ID",
			"client_secret_required": true, "default_scopes": ["a"], "available_scopes": ["a"]}}}`,
			`catalog: connector "x": client_secret_required needs client_secret_env`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			require.NoError(t, os.WriteFile(p, []byte(tc.doc), 0o600))
			cat, err := catalog.LoadFile(p)
			require.NoError(t, err, "the file is a catalog document: the policy judges it")
			_, _, err = world(t, cat)
			require.ErrorIs(t, err, grantwire.ErrConfiguration)
			var ge *grantwire.Error
			require.True(t, errors.As(err, &ge))
			problem := strings.TrimPrefix(tc.want, "catalog: ")
			require.Equal(t, "configuration error: the catalog "+p+": "+problem, ge.Message, "exactly one problem, named whole, in the file named")
			require.Empty(t, ge.Fix)
			var problems []string
			require.NoError(t, json.Unmarshal(ge.Fields["problems"], &problems))
			require.Equal(t, []string{problem}, problems)
		})
	}

	// Every problem is listed; the message names the first and counts the others.
	p := filepath.Join(dir, "several.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"connectors": {
	  "b": {"type": "mcp_server", "display_name": "B", "tier": "dev"},
	  "a": {"type": "mcp_server", "tier": "dev", "command": "a", "evn": []}}}`), 0o600))
	cat, err := catalog.LoadFile(p)
	require.NoError(t, err)
	_, _, err = world(t, cat)
	var ge *grantwire.Error
	require.True(t, errors.As(err, &ge), "%v", err)
	require.Equal(t, "configuration error: the catalog "+p+`: connector "a": display_name is required (and 2 more)`, ge.Message)
	var problems []string
	require.NoError(t, json.Unmarshal(ge.Fields["problems"], &problems))
	require.Equal(t, []string{
		`connector "a": display_name is required`,
		`connector "a": unknown field(s) evn`,
		`connector "b": an mcp_server connector needs command`,
	}, problems)

	// WithCatalogFile loads and judges the file in one step.
	_, err = grantwire.New(context.Background(), grantwire.WithCatalog(catalog.File(p)),
		grantwire.WithCapabilities(memhost.New(time.Unix(1_790_000_000, 0), 1).Capabilities("")))
	require.ErrorIs(t, err, grantwire.ErrConfiguration)
	require.ErrorContains(t, err, `connector "a": display_name is required (and 2 more)`)
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
	require.True(t, c.Strict())
	cl, _, err := world(t, c)
	require.NoError(t, err, "the policy accepts the file")
	problems, err := validate(t, cl, true)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Equal(t, []string{"local", "my-server"}, c.IDs())
	e, ok := c.Entry("my-server")
	require.True(t, ok)
	k, ok := e.EnvKey("MY_KEY")
	require.True(t, ok)
	require.True(t, k.Secret)
	require.Equal(t, "community", c.Entries()[1].Tier, "unknown tiers sort after the known ones")
	require.JSONEq(t, doc, string(c.JSON()))
	rows, err := cl.Status(context.Background())
	require.NoError(t, err)
	require.Len(t, rows, 2)
}

// A catalog given as JSON (tests, embedders) is checked leniently: what is present must be
// right, but nothing a working connector needs is required and unknown fields pass.
func TestLenientLoadKeepsMinimalCatalogs(t *testing.T) {
	c, err := catalog.Load([]byte(`{"connectors": {"google": {"type": "oauth_pkce", "default_scopes": ["openid"], "note": "x"}}}`))
	require.NoError(t, err)
	require.False(t, c.Strict())
	require.Equal(t, []string{"google"}, c.IDs())
	cl, _, err := world(t, c)
	require.NoError(t, err)
	problems, err := validate(t, cl, false)
	require.NoError(t, err)
	require.Empty(t, problems)
	_, err = validate(t, cl, true)
	require.ErrorIs(t, err, grantwire.ErrConfiguration, "strictly, the entry is incomplete")
	require.ErrorContains(t, err, `connector "google": an oauth_pkce connector needs authorization_url`)
}

// The built-in agents travel with the catalog: the embedded catalog and a user's file carry
// the embedded ones, catalog JSON none, and a bundle its own (WithBuiltinAgents).
func TestBuiltinAgents(t *testing.T) {
	var embedded []map[string]any
	require.NoError(t, json.Unmarshal(catalog.Default().BuiltinAgents(), &embedded))
	require.NotEmpty(t, embedded)
	require.Equal(t, "builtin:chat", embedded[0]["id"])

	c, err := catalog.Load([]byte(`{"connectors": {"mcp-x": {"type": "mcp_server"}}}`))
	require.NoError(t, err)
	require.Nil(t, c.BuiltinAgents())
	require.JSONEq(t, `{"catalog": {"connectors": {"mcp-x": {"type": "mcp_server"}}}}`, string(c.Data()))

	own := json.RawMessage(`[{"id": "builtin:x", "name": "X"}]`)
	withOwn, err := c.WithBuiltinAgents(own)
	require.NoError(t, err)
	require.JSONEq(t, string(own), string(withOwn.BuiltinAgents()))
	require.JSONEq(t, `{"catalog": {"connectors": {"mcp-x": {"type": "mcp_server"}}}, "agents": {"builtin": [{"id": "builtin:x", "name": "X"}]}}`,
		string(withOwn.Data()))
	require.Nil(t, c.BuiltinAgents(), "the catalog it was made from is unchanged")
	require.Equal(t, c.IDs(), withOwn.IDs())

	none, err := catalog.Default().WithBuiltinAgents(nil)
	require.NoError(t, err)
	require.Nil(t, none.BuiltinAgents())
	require.NotContains(t, string(none.Data()), `"agents"`)

	_, err = c.WithBuiltinAgents(json.RawMessage(`{"builtin": []}`))
	require.ErrorContains(t, err, "the built-in agents must be a JSON array")
}
