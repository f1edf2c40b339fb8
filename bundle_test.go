package grantwire_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/compile"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/audittest"
	"github.com/grantwire/grantwire/internal/testworld/bundletar"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/policy"
)

var memhostStart = audittest.Start

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

var (
	builtOnce sync.Once
	built     *audit.Built
	builtErr  error
)

// builtBundle is the bundle of the embedded policy, with a catalog that adds "acme".
func builtBundle(t *testing.T) []byte {
	t.Helper()
	builtOnce.Do(func() {
		var cat map[string]map[string]any
		if builtErr = json.Unmarshal(catalog.Defaults(), &cat); builtErr != nil {
			return
		}
		cat["connectors"]["acme"] = map[string]any{"type": "oauth_pkce", "display_name": "Acme"}
		raw, _ := json.Marshal(cat)
		built, builtErr = audit.Build(context.Background(), audit.BuildOptions{Catalog: raw, Describe: "test"})
	})
	require.NoError(t, builtErr)
	return built.Bytes
}

// editManifest applies fn to the decoded .manifest.
func editManifest(t *testing.T, files map[string][]byte, fn func(m map[string]any)) {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(files["/.manifest"], &m))
	fn(m)
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	files["/.manifest"] = raw
}

// testBundle reads the built bundle after mutate (nil: unchanged).
func testBundle(t *testing.T, mutate func(files map[string][]byte)) *bundle.Bundle {
	t.Helper()
	raw := builtBundle(t)
	if mutate != nil {
		files := bundletar.Files(t, raw, "")
		mutate(files)
		raw = bundletar.Write(t, files, "")
	}
	b, err := bundle.Read(bytes.NewReader(raw))
	require.NoError(t, err)
	return b
}

func TestClientRunsOnBundle(t *testing.T) {
	ctx := context.Background()
	b := testBundle(t, nil)
	sum := sha256.Sum256(policy.Wasm)
	require.Equal(t, hex.EncodeToString(sum[:]), b.WasmSHA256)
	require.Equal(t, bundle.EmbeddedRevision()+"@test", b.Revision)
	require.Equal(t, "policy.wasm", b.WasmPath)
	require.Contains(t, b.Entrypoints, "grantwire/decide")
	require.Contains(t, b.Rego, "policy/grantwire/gate/gate.rego")

	w := memhost.New(memhostStart, 3)
	caps := w.Capabilities("")
	c, err := grantwire.New(ctx, grantwire.WithBundle(b), grantwire.WithCapabilities(caps))
	require.NoError(t, err)
	defer c.Close(ctx)
	require.Equal(t, b.Revision, c.Revision())
	_, ok := c.Catalog().Entry("acme")
	require.True(t, ok, "the catalog comes from the bundle's data.catalog")

	// The built-in agents come from the bundle's data.agents.builtin.
	require.JSONEq(t, string(catalog.Default().BuiltinAgents()), string(b.Agents))
	agents, _, err := c.Agents(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, agents)
	for _, a := range agents {
		require.Equal(t, "builtin", a.Origin, a.ID)
	}
	act, err := c.Activate(ctx, "mcp-memory", "builtin:chat", nil)
	require.NoError(t, err)
	require.Equal(t, "consumes_mcp_servers", act.GrantSource, "the bundle's builtin:chat consumes MCP servers")
	res, err := c.Grant(ctx, "acme", "builtin:chat", []string{"read"})
	require.NoError(t, err)
	require.True(t, res.Changed)
	_, err = c.GetAccessToken(ctx, "acme", []string{"read"}, "builtin:chat")
	require.True(t, errors.Is(err, grantwire.ErrNotConnected), "%v", err)

	for _, opt := range []grantwire.Option{grantwire.WithCatalog(catalog.Bytes(catalog.Defaults())), grantwire.WithCatalog(catalog.File("catalog.json")),
		grantwire.WithCatalog(catalog.Default())} {
		_, err = grantwire.New(ctx, grantwire.WithBundle(b), grantwire.WithCapabilities(caps), opt)
		require.ErrorContains(t, err, "do not combine")
	}
}

// A bundle's catalog is judged by the policy when a client runs it (validate_catalog: what
// it holds must be right), and its built-in agents are the ones the client registers.
func TestBundleDataJudgedByThePolicy(t *testing.T) {
	ctx := context.Background()
	b := testBundle(t, func(f map[string][]byte) {
		var data map[string]any
		require.NoError(t, json.Unmarshal(f["/data.json"], &data))
		data["catalog"] = map[string]any{"connectors": map[string]any{"x": map[string]any{"type": "teleport"}}}
		f["/data.json"], _ = json.Marshal(data)
	})
	w := memhost.New(memhostStart, 1)
	_, err := grantwire.New(ctx, grantwire.WithBundle(b), grantwire.WithCapabilities(w.Capabilities("")))
	require.ErrorIs(t, err, bundle.ErrRefused)
	require.ErrorIs(t, err, grantwire.ErrConfiguration)
	require.ErrorContains(t, err, `data.catalog: grantwire: configuration error: the catalog: connector "x": unknown type "teleport"`)

	b = testBundle(t, func(f map[string][]byte) {
		var data map[string]any
		require.NoError(t, json.Unmarshal(f["/data.json"], &data))
		data["agents"] = map[string]any{"builtin": []any{map[string]any{"id": "builtin:x", "name": "X"}}}
		f["/data.json"], _ = json.Marshal(data)
	})
	c, err := grantwire.New(ctx, grantwire.WithBundle(b), grantwire.WithCapabilities(w.Capabilities("")))
	require.NoError(t, err)
	defer c.Close(ctx)
	agents, _, err := c.Agents(ctx)
	require.NoError(t, err)
	require.Len(t, agents, 1, "the bundle's agents replace the embedded ones")
	require.Equal(t, "builtin:x", agents[0].ID)
	require.Equal(t, "X", agents[0].Name)
}

// hostBuiltinModule compiles a grantwire-shaped policy that needs the host builtin
// time.now_ns: a valid OPA module, which the wasm engine refuses.
func hostBuiltinModule(t *testing.T) []byte {
	t.Helper()
	src := "package grantwire\n\n# METADATA\n# entrypoint: true\ndecide := {\"status\": \"done\", \"result\": time.now_ns(), \"effects\": []}\n\n" +
		"# METADATA\n# entrypoint: true\nmanifest := {\"ops\": {\"x\": {\"prefetch\": []}}, \"errors\": {}}\n"
	b := compileSource(t, src)
	return b
}

func compileSource(t *testing.T, src string) []byte {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, writeFile(dir+"/p.rego", src))
	c := compile.New().WithTarget(compile.TargetWasm).WithRegoAnnotationEntrypoints(true).
		WithRegoVersion(ast.RegoV1).WithPaths(dir)
	require.NoError(t, c.Build(context.Background()))
	return c.Bundle().WasmModules[0].Raw
}

func setWasm(t *testing.T, files map[string][]byte, wasm []byte) {
	files["/policy.wasm"] = wasm
	sum := sha256.Sum256(wasm)
	editManifest(t, files, func(m map[string]any) {
		m["metadata"].(map[string]any)["grantwire"].(map[string]any)["wasm_sha256"] = hex.EncodeToString(sum[:])
	})
}

func TestBundleRefusals(t *testing.T) {
	raw := builtBundle(t)
	cases := []struct {
		name   string
		mutate func(t *testing.T, files map[string][]byte)
		want   string
	}{
		{"roots: everything", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { m["roots"] = []string{""} })
		}, "a grantwire bundle owns exactly"},
		{"roots: grantwire only", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { m["roots"] = []string{"grantwire"} })
		}, "a grantwire bundle owns exactly"},
		{"roots: one too many", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { m["roots"] = []string{"grantwire", "catalog", "agents", "other"} })
		}, "a grantwire bundle owns exactly"},
		{"roots: without agents", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { m["roots"] = []string{"grantwire", "catalog"} })
		}, `roots ["grantwire" "catalog"]: a grantwire bundle owns exactly ["agents" "catalog" "grantwire"]`},
		{"roots: none", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { delete(m, "roots") })
		}, "declares no roots"},
		{"no revision", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { m["revision"] = "" })
		}, "no revision"},
		{"no grantwire/decide entrypoint", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { m["wasm"] = dropEntrypoint(m["wasm"], "grantwire/decide") })
		}, "no wasm entrypoint grantwire/decide"},
		{"no grantwire/manifest entrypoint", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { m["wasm"] = dropEntrypoint(m["wasm"], "grantwire/manifest") })
		}, "no wasm entrypoint grantwire/manifest"},
		{"no wasm at all (a --rego-only bundle)", func(t *testing.T, f map[string][]byte) {
			delete(f, "/policy.wasm")
			editManifest(t, f, func(m map[string]any) { delete(m, "wasm") })
		}, "no wasm entrypoint grantwire/decide"},
		{"module missing", func(t *testing.T, f map[string][]byte) { delete(f, "/policy.wasm") }, "does not contain"},
		{"wasm changed after the digest was recorded", func(t *testing.T, f map[string][]byte) {
			f["/policy.wasm"] = append(bytes.Clone(f["/policy.wasm"]), 0)
		}, "but the manifest records"},
		{"digest of another module recorded", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) {
				m["metadata"].(map[string]any)["grantwire"].(map[string]any)["wasm_sha256"] = strings.Repeat("ab", 32)
			})
		}, "but the manifest records"},
		{"no digest recorded", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) {
				delete(m["metadata"].(map[string]any)["grantwire"].(map[string]any), "wasm_sha256")
			})
		}, "no metadata.grantwire.wasm_sha256"},
		{"no metadata", func(t *testing.T, f map[string][]byte) {
			editManifest(t, f, func(m map[string]any) { delete(m, "metadata") })
		}, "no metadata.grantwire object"},
		{"signed", func(t *testing.T, f map[string][]byte) { f["/.signatures.json"] = []byte(`{"signatures":[]}`) }, "signed bundles"},
		{"no manifest", func(t *testing.T, f map[string][]byte) { delete(f, "/.manifest") }, "no .manifest"},
		{"no catalog", func(t *testing.T, f map[string][]byte) { f["/data.json"] = []byte(`{}`) }, "no data.catalog"},
		{"catalog entry not an object", func(t *testing.T, f map[string][]byte) {
			f["/data.json"] = []byte(`{"catalog":{"connectors":{"x":["teleport"]}}}`)
		}, `data.catalog: catalog: connector "x"`},
		{"catalog not a catalog document", func(t *testing.T, f map[string][]byte) {
			f["/data.json"] = []byte(`{"catalog":{"connectors":["x"]}}`)
		}, "data.catalog: catalog: json: cannot unmarshal array"},
		{"agents not a list", func(t *testing.T, f map[string][]byte) {
			f["/data.json"] = []byte(`{"catalog":{"connectors":{}},"agents":{"builtin":{"id":"builtin:x"}}}`)
		}, `data.agents must be {"builtin": [agents]}`},
		{"agents beside the built-in ones", func(t *testing.T, f map[string][]byte) {
			f["/data.json"] = []byte(`{"catalog":{"connectors":{}},"agents":{"builtin":[],"extra":[]}}`)
		}, `data.agents must be {"builtin": [agents]}`},
		{"data outside the catalog", func(t *testing.T, f map[string][]byte) {
			f["/grantwire/data.json"] = []byte(`{"margin_ms": 1}`)
		}, "data.grantwire is outside data.catalog and data.agents"},
		{"path escaping the bundle", func(t *testing.T, f map[string][]byte) { f["../evil.rego"] = []byte("package x") }, "escapes the bundle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := bundletar.Files(t, raw, "")
			tc.mutate(t, files)
			_, err := bundle.Read(bytes.NewReader(bundletar.Write(t, files, "")))
			require.ErrorIs(t, err, bundle.ErrRefused)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := bundle.Read(strings.NewReader("not a tarball"))
	require.ErrorIs(t, err, bundle.ErrRefused)
}

func dropEntrypoint(v any, ep string) []any {
	var out []any
	for _, w := range v.([]any) {
		if w.(map[string]any)["entrypoint"] != ep {
			out = append(out, w)
		}
	}
	return out
}

// A module whose manifest is consistent but that the engine refuses: New fails with an
// error wrapping both ErrBundle and the engine's reason.
func TestBundleABIRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		wasm []byte
		want string
	}{
		{"not an OPA module", []byte("\x00asm\x01\x00\x00\x00"), "imports 0 memories"},
		{"needs host builtins", hostBuiltinModule(t), "needs host builtins [time.now_ns]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := testBundle(t, func(f map[string][]byte) { setWasm(t, f, tc.wasm) })
			w := memhost.New(memhostStart, 1)
			_, err := grantwire.New(ctx, grantwire.WithBundle(b), grantwire.WithCapabilities(w.Capabilities("")))
			require.ErrorIs(t, err, bundle.ErrRefused)
			require.ErrorIs(t, err, wasmengine.ErrNotPolicy)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The runtime packages must not link OPA: reading, writing and running a bundle, and writing
// decision logs, are done with the standard library and wazero.
func TestRuntimeDoesNotImportOPA(t *testing.T) {
	for _, pkg := range []string{".", "./bundle", "./decisionlog", "./core/wasmengine"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "github.com/grantwire/grantwire/core\n", "go list output looks wrong")
		require.NotContains(t, string(out), "github.com/open-policy-agent/opa", "%s imports OPA", pkg)
	}
}
