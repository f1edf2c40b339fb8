// Package audit is grantwire's policy tooling on OPA's Go packages: it builds the OPA
// bundle that grantwire, OPA servers and OPA's bundle service share ([Build]), generates
// docs/policy.md from the policy's METADATA ([Docs]), runs the policy's Rego tests,
// and provides what the `grantwire policy` commands of cmd/grantwire run (audit, build, docs,
// replay, test; in the OPA build of the command).
//
// It imports OPA (compile, bundle, ast, tester) and so must never be imported by the
// runtime: the root package, core/wasmengine and the shells stay OPA-free (a test checks
// the root package's dependencies). It compiles the policy; package bundle reads and
// writes the file without OPA; replaying a decision log is package decisionlog's.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/compile"
	"github.com/open-policy-agent/opa/v1/version"

	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/policy"
)

// EmbeddedPolicyPath is where the embedded Rego sources live in the repository; the
// embedded policy is compiled under this path so that the paths OPA records in
// policy.wasm are the ones `make wasm` records.
const EmbeddedPolicyPath = "policy/grantwire"

// BuildOptions says what to put in a bundle.
type BuildOptions struct {
	// PolicyDir compiles the Rego modules of this directory (tests excluded) instead of
	// the embedded policy. Without it, the embedded sources are compiled and the result
	// must be byte-identical to the embedded policy.wasm (else the build fails: run
	// `make wasm`).
	PolicyDir string
	// Catalog is the catalog JSON ({"connectors": ...}) to ship as data.catalog; nil ships
	// the embedded catalog. The embedded built-in agents are shipped as
	// data.agents.builtin either way.
	Catalog []byte
	// Describe is appended to the revision ("sha256:<16 hex>@<describe>"), typically
	// `git describe --always --dirty`; see [GitDescribe].
	Describe string
	// Revision, when set, replaces the computed revision.
	Revision string
	// RegoOnly leaves policy.wasm and the manifest's wasm entrypoints out, for OPA builds
	// without WebAssembly support (they refuse a bundle with wasm entrypoints with "engine
	// not found"). grantwire cannot run on such a bundle.
	RegoOnly bool
}

// Built is a built bundle.
type Built struct {
	Bytes       []byte   // the .tar.gz
	Revision    string   // the manifest's revision
	WasmSHA256  string   // hex sha256 of policy.wasm
	Entrypoints []string // the wasm entrypoints, as the manifest lists them
}

// Build compiles the policy to WebAssembly with OPA's compiler (against
// policy/capabilities.json, entrypoints from the `entrypoint: true` annotations, exactly
// as `make wasm` does) and writes an OPA bundle: a .manifest with the revision, roots
// [agents catalog grantwire], the wasm entrypoints and metadata.grantwire {wasm_sha256,
// opa_version}; the Rego modules (tests excluded); /policy.wasm; and /data.json holding
// the catalog under data.catalog and the built-in agents under data.agents.builtin. The
// compiled policy judges the catalog first (validate_catalog). The output is
// deterministic.
func Build(ctx context.Context, o BuildOptions) (*Built, error) {
	caps, err := ast.LoadCapabilitiesJSON(bytes.NewReader(policy.Capabilities))
	if err != nil {
		return nil, fmt.Errorf("audit: capabilities: %w", err)
	}
	cat, err := catalog.Load(o.Catalog)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if cat, err = cat.WithBuiltinAgents(catalog.Default().BuiltinAgents()); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	var data map[string]any
	if err := json.Unmarshal(cat.Data(), &data); err != nil {
		return nil, fmt.Errorf("audit: catalog data: %w", err)
	}

	fsys, root, err := policyFS(o.PolicyDir)
	if err != nil {
		return nil, err
	}
	c := compile.New().
		WithCapabilities(caps).
		WithTarget(compile.TargetWasm).
		WithRegoAnnotationEntrypoints(true).
		WithRegoVersion(ast.RegoV1).
		WithFS(fsys).
		WithPaths(root).
		WithFilter(func(_ string, info fs.FileInfo, _ int) bool {
			return !info.IsDir() && strings.HasSuffix(info.Name(), "_test.rego")
		})
	if err := c.Build(ctx); err != nil {
		return nil, fmt.Errorf("audit: compile %s: %w", root, err)
	}
	compiled := c.Bundle()
	if len(compiled.WasmModules) != 1 {
		return nil, fmt.Errorf("audit: the compiler produced %d wasm modules, want 1", len(compiled.WasmModules))
	}
	wasm := compiled.WasmModules[0].Raw
	if o.PolicyDir == "" && !bytes.Equal(wasm, policy.Wasm) {
		return nil, errors.New("audit: the embedded policy.wasm differs from a fresh compile of the embedded Rego: run `make wasm`")
	}
	if err := validateCatalog(ctx, wasm, cat.Data()); err != nil {
		return nil, err
	}
	out := &Built{WasmSHA256: bundle.WasmSHA256(wasm), Revision: o.Revision}
	if out.Revision == "" {
		out.Revision = bundle.RevisionOf(wasm)
		if o.Describe != "" {
			out.Revision += "@" + o.Describe
		}
	}
	for _, w := range compiled.Manifest.WasmResolvers {
		out.Entrypoints = append(out.Entrypoints, w.Entrypoint)
	}

	meta := map[string]any{"opa_version": version.Version, "catalog_connectors": cat.IDs()}
	contents := bundle.Contents{Revision: out.Revision, Data: data, Wasm: wasm, Entrypoints: out.Entrypoints,
		Metadata: map[string]any{bundle.MetadataKey: meta}}
	if o.RegoOnly {
		contents.Wasm, contents.Entrypoints, out.Entrypoints = nil, nil, nil
		meta["rego_only"] = true
	} else {
		meta[bundle.WasmSHA256Key] = out.WasmSHA256
	}
	// The compiler leaves out of its modules the rules it compiled to wasm entrypoints;
	// ship the sources as written instead, so OPA's evaluator (and a reader) has them all.
	if contents.Modules, err = sourceModules(fsys, root); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := bundle.Write(&buf, contents); err != nil {
		return nil, fmt.Errorf("audit: write bundle: %w", err)
	}
	out.Bytes = buf.Bytes()
	return out, nil
}

// validateCatalog has the compiled policy judge the catalog it will ship with (its
// validate_catalog operation, as grantwire judges a bundle's catalog when it runs one), so
// no bundle is built that grantwire would refuse. A policy without the operation is not
// asked.
func validateCatalog(ctx context.Context, wasm, data []byte) error {
	e, err := wasmengine.New(ctx, wasmengine.WithModule(wasm), wasmengine.WithData(data), wasmengine.WithPoolSize(1))
	if err != nil {
		return fmt.Errorf("audit: the compiled policy: %w", err)
	}
	defer e.Close(ctx)
	if _, ok := e.Manifest().Ops["validate_catalog"]; !ok {
		return nil
	}
	d, err := e.Decide(ctx, &core.Query{Op: "validate_catalog", Args: json.RawMessage(`{"strict":false}`),
		Facts: map[string]json.RawMessage{}})
	if err != nil {
		return fmt.Errorf("audit: validate_catalog: %w", err)
	}
	if d.Error != nil {
		return fmt.Errorf("audit: %s", d.Error.Message)
	}
	return nil
}

// sourceModules reads the Rego modules under root, tests excluded, each parsed (a module
// OPA cannot parse is not shipped), sorted by path.
func sourceModules(fsys fs.FS, root string) ([]bundle.File, error) {
	var out []bundle.File
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if _, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1}); err != nil {
			return err
		}
		out = append(out, bundle.File{Path: p, Raw: src})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// policyFS returns the file system and path to compile. The embedded sources are mounted
// under EmbeddedPolicyPath; a directory is compiled by its base name from its parent.
func policyFS(dir string) (fs.FS, string, error) {
	if dir == "" {
		return prefixFS{prefix: "policy", fsys: policy.Sources}, EmbeddedPolicyPath, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("audit: policy directory %s: not a directory", dir)
	}
	// A relative path inside the working directory is compiled as given, as `make wasm`
	// does from the repository root, so the paths recorded in policy.wasm are the same.
	if rel := filepath.ToSlash(filepath.Clean(dir)); !filepath.IsAbs(dir) && fs.ValidPath(rel) && rel != "." {
		return os.DirFS("."), rel, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", fmt.Errorf("audit: %w", err)
	}
	return os.DirFS(filepath.Dir(abs)), filepath.Base(abs), nil
}

// prefixFS shows fsys under a directory named prefix.
type prefixFS struct {
	prefix string
	fsys   fs.FS
}

func (p prefixFS) rel(name string) (string, error) {
	if name == p.prefix {
		return ".", nil
	}
	if rest, ok := strings.CutPrefix(name, p.prefix+"/"); ok {
		return rest, nil
	}
	return "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (p prefixFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	rel, err := p.rel(name)
	if err != nil {
		return nil, err
	}
	return p.fsys.Open(rel)
}

// GitDescribe returns `git describe --always --dirty --tags` run in dir, or "" when dir
// is not in a git checkout (or git is missing).
func GitDescribe(dir string) string {
	cmd := exec.Command("git", "describe", "--always", "--dirty", "--tags")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
