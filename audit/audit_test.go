package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/internal/testworld/bundletar"
	"github.com/grantwire/grantwire/policy"
)

func defaultData(t *testing.T) []byte {
	t.Helper()
	c, err := catalog.Load(nil)
	require.NoError(t, err)
	return c.Data()
}

func TestDocsUpToDate(t *testing.T) {
	doc, err := audit.EmbeddedDocs()
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join("..", audit.DocsPath))
	require.NoError(t, err, "docs/policy.md is missing: run `make docs`")
	if !bytes.Equal(append(doc, '\n'), committed) {
		t.Fatalf("docs/policy.md is stale: the policy changed without `make docs` (run it and commit the result)")
	}
}

func TestDocsStable(t *testing.T) {
	first, err := audit.EmbeddedDocs()
	require.NoError(t, err)
	for range 3 {
		again, err := audit.EmbeddedDocs()
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
}

// section returns the Markdown section of an operation.
func section(t *testing.T, doc, op string) string {
	t.Helper()
	start := strings.Index(doc, "### `"+op+"`\n")
	require.GreaterOrEqual(t, start, 0, "no section for %s", op)
	rest := doc[start+1:]
	if end := strings.Index(rest, "\n### "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

func TestDocsDeriveOperations(t *testing.T) {
	raw, err := audit.EmbeddedDocs()
	require.NoError(t, err)
	doc := string(raw)

	// Every operation the policy publishes has a section.
	e, err := regoengine.New(context.Background(), regoengine.WithData(defaultData(t)))
	require.NoError(t, err)
	ops := make([]string, 0, len(e.Manifest().Ops))
	for op := range e.Manifest().Ops {
		ops = append(ops, op)
		section(t, doc, op)
	}
	sort.Strings(ops)
	require.Equal(t, []string{"activate", "activation_changes", "agent_id", "configure", "configure_client", "configure_mcp", "connect",
		"connections", "connector_view", "credential", "deactivate", "disconnect", "get_access_token", "grant", "grant_changes",
		"import_forwarded", "launch", "list_activations", "list_agents", "list_grants", "maintain", "mcp_add", "mcp_auth", "mcp_challenge", "mcp_list",
		"mcp_logout", "mcp_remote_list", "mcp_remove", "mcp_token", "mcp_tool", "revoke", "start_flow", "status", "test_connector",
		"validate_catalog", "visible_servers"}, ops)

	gate := section(t, doc, "get_access_token")
	require.Contains(t, gate, "Decision rule `grantwire.gate.decision` (`policy/grantwire/gate/gate.rego`): get_access_token decision.")
	require.Contains(t, gate, "- Arguments (`input.args`): `agent`, `provider`, `scopes`\n")
	require.Contains(t, gate, "- Facts it may ask for: `clock.now`, `env.get`, `http.request`, `keyring.get`, `ledger.read`, `lock.acquire`\n")
	// Only the host ABI's effect kinds: the classification of a token endpoint's failure
	// ({"kind": "transport", ...}) is not an effect.
	require.Contains(t, gate, "- Effects it may request: `event.emit`, `keyring.delete`, `keyring.set`, `ledger.write`\n")
	require.Contains(t, gate, "- Events it may emit: `connector.connection.cleared`\n")
	for _, code := range []string{"AGENT_NOT_GRANTED", "NOT_CONNECTED", "REAUTH_REQUIRED", "TENANT_MISMATCH", "BUSY",
		"CONNECTION_MISSING_SCOPES", "CONNECTION_REVOKED", "PROVIDER_ERROR", "INSECURE_TRANSPORT"} {
		require.Contains(t, gate, "| `"+code+"` |", code)
	}
	require.NotContains(t, gate, "SCOPE_MISMATCH")

	// Arguments read through an alias (`_args := input.args`); secrets are not arguments.
	fwd := section(t, doc, "import_forwarded")
	require.Contains(t, fwd, "- Arguments (`input.args`): `account_email`, `account_type`, `grant_agents`, `provider`, `scopes`\n")
	require.NotContains(t, fwd, "`refresh_token`")
	require.Contains(t, fwd, "| `SCOPE_MISMATCH` | 403 | 4 |")

	// Disconnect revokes at the provider, best effort: a request it does not wait for.
	require.Contains(t, section(t, doc, "disconnect"), "- Effects it may request: `event.emit`, `http.send`, `keyring.delete`, `ledger.write`\n")

	// validate_catalog does no I/O at all.
	vc := section(t, doc, "validate_catalog")
	require.Contains(t, vc, "- Arguments (`input.args`): `file`, `strict`\n")
	require.Contains(t, vc, "- Facts it may ask for: none\n")
	require.Contains(t, vc, "- Effects it may request: none\n")

	require.Contains(t, doc, "| `grantwire.gate.margin_ms` | `60000` | expiry margin:")
	// Host failures are facts the policy turns into errors, for every operation.
	require.Contains(t, doc, "| `INSECURE_STORE` | 500 | 5 | host failure: ")
	require.Regexp(t, "\\| `INSECURE_STORE` \\|[^\\n]*\\| every operation \\(`decide`\\) \\|\\n", doc)
	require.Contains(t, doc, "| `INTERNAL` | 500 | 5 |")
	require.NotContains(t, doc, "no METADATA", "every public rule carries METADATA")
}

func TestDocsFollowAPolicyChange(t *testing.T) {
	dir := copyPolicy(t, t.TempDir(), map[string][][2]string{
		"gate/gate.rego": {{"margin_ms := 60000", "margin_ms := 300000"}},
		"errors/errors.rego": {{"not_connected(c, list) := error(\n\t\"NOT_CONNECTED\",", "not_connected(c, list) := error(\n\t\"NOT_LINKED\","},
			{"\"NOT_CONNECTED\": {\"status\": 401, \"exit\": 4},", "\"NOT_CONNECTED\": {\"status\": 401, \"exit\": 4},\n\t\"NOT_LINKED\": {\"status\": 401, \"exit\": 4},"}},
	})
	raw, err := audit.Docs(os.DirFS(filepath.Dir(dir)), "grantwire")
	require.NoError(t, err)
	doc := string(raw)
	require.Contains(t, doc, "| `grantwire.gate.margin_ms` | `300000` |")
	gate := section(t, doc, "get_access_token")
	require.Contains(t, gate, "| `NOT_LINKED` | 401 | 4 | not connected |")
	require.NotContains(t, gate, "`NOT_CONNECTED`")
	require.Contains(t, section(t, doc, "credential"), "| `NOT_CONNECTED` |", "credential still uses not_connected_mcp")
}

func TestBuildEmbedded(t *testing.T) {
	ctx := context.Background()
	a, err := audit.Build(ctx, audit.BuildOptions{})
	require.NoError(t, err)
	b, err := audit.Build(ctx, audit.BuildOptions{})
	require.NoError(t, err)
	require.Equal(t, a.Bytes, b.Bytes, "builds are deterministic")
	require.Equal(t, bundle.EmbeddedRevision(), a.Revision)
	require.Equal(t, strings.Fields(policy.WasmSHA256)[0], a.WasmSHA256)

	files := bundletar.Files(t, a.Bytes, "/")
	require.Equal(t, policy.Wasm, files["policy.wasm"], "the bundle carries the committed policy.wasm")
	var m struct {
		Revision string   `json:"revision"`
		Roots    []string `json:"roots"`
		Wasm     []struct {
			Entrypoint string `json:"entrypoint"`
			Module     string `json:"module"`
		} `json:"wasm"`
		Metadata map[string]map[string]any `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(files[".manifest"], &m))
	require.Equal(t, a.Revision, m.Revision)
	require.ElementsMatch(t, []string{"agents", "catalog", "grantwire"}, m.Roots)
	eps := map[string]string{}
	for _, w := range m.Wasm {
		eps[w.Entrypoint] = w.Module
	}
	require.Equal(t, "/policy.wasm", eps["grantwire/decide"])
	require.Equal(t, "/policy.wasm", eps["grantwire/manifest"])
	require.Equal(t, a.WasmSHA256, m.Metadata["grantwire"]["wasm_sha256"])
	require.Equal(t, "1.22.3", m.Metadata["grantwire"]["opa_version"])

	var data map[string]any
	require.NoError(t, json.Unmarshal(files["data.json"], &data))
	require.JSONEq(t, string(defaultData(t)), string(files["data.json"]))
	var rego []string
	for name := range files {
		if strings.HasSuffix(name, ".rego") {
			rego = append(rego, name)
			require.NotContains(t, name, "_test.rego")
		}
	}
	require.Contains(t, rego, "policy/grantwire/decide.rego")

	// grantwire reads it without OPA.
	rb, err := bundle.Read(bytes.NewReader(a.Bytes))
	require.NoError(t, err)
	require.Equal(t, a.Revision, rb.Revision)
}

func TestBuildFromDirectory(t *testing.T) {
	ctx := context.Background()
	dir := copyPolicy(t, t.TempDir(), nil)
	// A test file is never shipped.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gate", "gate_test.rego"),
		[]byte("package grantwire.gate_test\n\ntest_x if true\n"), 0o644))
	b, err := audit.Build(ctx, audit.BuildOptions{PolicyDir: dir, Describe: "v1.2.3-4-gabcdef0"})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(b.Revision, "@v1.2.3-4-gabcdef0"), b.Revision)
	for name := range bundletar.Files(t, b.Bytes, "/") {
		require.NotContains(t, name, "_test.rego")
	}
	r, err := audit.Build(ctx, audit.BuildOptions{PolicyDir: dir, RegoOnly: true, Revision: "r1"})
	require.NoError(t, err)
	files := bundletar.Files(t, r.Bytes, "/")
	require.NotContains(t, files, "policy.wasm")
	require.NotContains(t, string(files[".manifest"]), `"wasm"`)
	require.Contains(t, string(files[".manifest"]), `"revision":"r1"`)

	_, err = audit.Build(ctx, audit.BuildOptions{PolicyDir: filepath.Join(dir, "missing")})
	require.ErrorContains(t, err, "not a directory")
}
