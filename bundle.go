package grantwire

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/policy"
)

// An OPA bundle (https://www.openpolicyagent.org/docs/management-bundles) carrying
// grantwire's policy: a .manifest with a revision, the roots grantwire and catalog, the
// wasm entrypoints and the sha256 of policy.wasm in its metadata; the Rego sources (which
// OPA evaluates; the wasm engine does not); policy.wasm; and data.json holding the catalog
// under data.catalog. Package audit builds one; this file reads one without OPA.

// ErrBundle reports a bundle grantwire refuses to run on (errors.Is).
var ErrBundle = errors.New("grantwire: bundle refused")

// Bundle conventions shared with the builder (package audit).
const (
	// BundleMetadataKey names grantwire's object in the manifest's metadata.
	BundleMetadataKey = "grantwire"
	// BundleWasmSHA256 is the metadata field holding the hex sha256 of policy.wasm.
	BundleWasmSHA256 = "wasm_sha256"
	// BundleName is the bundle's name in decision logs ("bundles": {"grantwire": ...}).
	BundleName = "grantwire"
)

// BundleRoots are the data roots a grantwire bundle owns, sorted.
var BundleRoots = []string{"catalog", "grantwire"}

const (
	maxBundleBytes = 64 << 20 // uncompressed, all files together
	maxBundleFiles = 4096
)

// Bundle is an OPA bundle read by [ReadBundle]: checked, ready for [WithBundle].
type Bundle struct {
	Revision   string          // the manifest's revision
	Manifest   json.RawMessage // .manifest as read
	Wasm       []byte          // the module the grantwire entrypoints name
	WasmPath   string          // its path in the bundle ("policy.wasm")
	WasmSHA256 string          // hex sha256 of Wasm, as recorded in the manifest
	// Entrypoints are every wasm entrypoint of the manifest, sorted.
	Entrypoints []string
	Catalog     []byte   // data.catalog as JSON ({"connectors": ...}), validated
	Rego        []string // paths of the Rego modules it carries, sorted (OPA evaluates them)
}

type bundleManifest struct {
	Revision *string   `json:"revision"`
	Roots    *[]string `json:"roots"`
	Wasm     []struct {
		Entrypoint string `json:"entrypoint"`
		Module     string `json:"module"`
	} `json:"wasm"`
	Metadata map[string]json.RawMessage `json:"metadata"`
}

// OpenBundle reads and checks the bundle file at path (a .tar.gz).
func OpenBundle(path string) (*Bundle, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("grantwire: bundle: %w", err)
	}
	defer f.Close()
	b, err := ReadBundle(f)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return b, nil
}

func bundleErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBundle}, args...)...)
}

// ReadBundle reads an OPA bundle (.tar.gz) with the standard library and checks that it is
// a grantwire bundle: roots exactly [catalog grantwire], a revision, wasm entrypoints
// grantwire/decide and grantwire/manifest in one module, that module's sha256 equal to the
// one recorded in the manifest metadata, and a valid catalog under data.catalog. Signed
// bundles (.signatures.json) are refused: grantwire does not verify signatures yet, and
// must not appear to. Whether the engine accepts the module's ABI is checked by [New].
func ReadBundle(r io.Reader) (*Bundle, error) {
	files, err := readTarGz(r)
	if err != nil {
		return nil, err
	}
	if _, ok := files[".signatures.json"]; ok {
		return nil, bundleErr("signed bundles are not supported: grantwire does not verify .signatures.json")
	}
	rawManifest, ok := files[".manifest"]
	if !ok {
		return nil, bundleErr("no .manifest")
	}
	var m bundleManifest
	if err := json.Unmarshal(rawManifest, &m); err != nil {
		return nil, bundleErr(".manifest: %v", err)
	}
	b := &Bundle{Manifest: rawManifest}
	if m.Revision == nil || *m.Revision == "" {
		return nil, bundleErr("the manifest has no revision (decision logs could not name the policy)")
	}
	b.Revision = *m.Revision
	if m.Roots == nil {
		return nil, bundleErr("the manifest declares no roots (a grantwire bundle owns exactly %v)", BundleRoots)
	}
	roots := slices.Clone(*m.Roots)
	sort.Strings(roots)
	if !slices.Equal(roots, BundleRoots) {
		return nil, bundleErr("roots %q: a grantwire bundle owns exactly %q", *m.Roots, BundleRoots)
	}

	modules := map[string]string{} // entrypoint → module path
	for _, w := range m.Wasm {
		modules[w.Entrypoint] = cleanBundlePath(w.Module)
		b.Entrypoints = append(b.Entrypoints, w.Entrypoint)
	}
	sort.Strings(b.Entrypoints)
	for _, ep := range []string{wasmengine.DecideEntrypoint, wasmengine.ManifestEntrypoint} {
		if _, ok := modules[ep]; !ok {
			return nil, bundleErr("the manifest has no wasm entrypoint %s", ep)
		}
	}
	b.WasmPath = modules[wasmengine.DecideEntrypoint]
	if other := modules[wasmengine.ManifestEntrypoint]; other != b.WasmPath {
		return nil, bundleErr("entrypoints %s and %s are in different modules (%s, %s)",
			wasmengine.DecideEntrypoint, wasmengine.ManifestEntrypoint, b.WasmPath, other)
	}
	if b.Wasm, ok = files[b.WasmPath]; !ok {
		return nil, bundleErr("the manifest names module %s, which the bundle does not contain", b.WasmPath)
	}

	var meta map[string]json.RawMessage
	if raw, ok := m.Metadata[BundleMetadataKey]; !ok || json.Unmarshal(raw, &meta) != nil {
		return nil, bundleErr("the manifest has no metadata.%s object recording the sha256 of %s", BundleMetadataKey, b.WasmPath)
	}
	if err := json.Unmarshal(meta[BundleWasmSHA256], &b.WasmSHA256); err != nil || b.WasmSHA256 == "" {
		return nil, bundleErr("the manifest has no metadata.%s.%s", BundleMetadataKey, BundleWasmSHA256)
	}
	sum := sha256.Sum256(b.Wasm)
	if got := hex.EncodeToString(sum[:]); got != strings.ToLower(b.WasmSHA256) {
		return nil, bundleErr("%s has sha256 %s but the manifest records %s", b.WasmPath, got, b.WasmSHA256)
	}

	data, err := bundleData(files)
	if err != nil {
		return nil, err
	}
	for k := range data {
		if k != "catalog" {
			return nil, bundleErr("data.%s is outside data.catalog", k)
		}
	}
	if _, ok := data["catalog"]; !ok {
		return nil, bundleErr("no data.catalog (data.json holds the catalog of connectors)")
	}
	if b.Catalog, err = json.Marshal(data["catalog"]); err != nil {
		return nil, bundleErr("data.catalog: %v", err)
	}
	if _, err := catalog.Load(b.Catalog); err != nil {
		return nil, bundleErr("data.catalog: %v", err)
	}
	for p := range files {
		if path.Ext(p) == ".rego" {
			b.Rego = append(b.Rego, p)
		}
	}
	sort.Strings(b.Rego)
	return b, nil
}

// cleanBundlePath turns "/policy.wasm" or "./policy.wasm" into "policy.wasm".
func cleanBundlePath(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

func readTarGz(r io.Reader) (map[string][]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, bundleErr("not a .tar.gz: %v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bundleErr("tar: %v", err)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, bundleErr("%s is not a regular file", h.Name)
		}
		if slices.Contains(strings.Split(h.Name, "/"), "..") {
			return nil, bundleErr("%s escapes the bundle", h.Name)
		}
		name := cleanBundlePath(h.Name)
		if _, dup := files[name]; dup {
			return nil, bundleErr("%s appears twice", name)
		}
		if len(files) == maxBundleFiles {
			return nil, bundleErr("more than %d files", maxBundleFiles)
		}
		var buf bytes.Buffer
		n, err := io.Copy(&buf, io.LimitReader(tr, maxBundleBytes-total+1))
		if err != nil {
			return nil, bundleErr("%s: %v", name, err)
		}
		if total += n; total > maxBundleBytes {
			return nil, bundleErr("larger than %d MiB uncompressed", maxBundleBytes>>20)
		}
		files[name] = buf.Bytes()
	}
	return files, nil
}

// bundleData merges every data.json of the bundle at its directory's path, as OPA does.
func bundleData(files map[string][]byte) (map[string]any, error) {
	root := map[string]any{}
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		base := path.Base(p)
		if base == "data.yaml" || base == "data.yml" {
			return nil, bundleErr("%s: grantwire reads data.json only", p)
		}
		if base != "data.json" {
			continue
		}
		var v any
		if err := json.Unmarshal(files[p], &v); err != nil {
			return nil, bundleErr("%s: %v", p, err)
		}
		dir := path.Dir(p)
		if dir == "." {
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, bundleErr("%s is not a JSON object", p)
			}
			for k, x := range obj {
				if err := mergeData(root, []string{k}, x, p); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := mergeData(root, strings.Split(dir, "/"), v, p); err != nil {
			return nil, err
		}
	}
	return root, nil
}

func mergeData(into map[string]any, at []string, v any, file string) error {
	for i, k := range at[:len(at)-1] {
		next, ok := into[k].(map[string]any)
		if !ok {
			if _, taken := into[k]; taken {
				return bundleErr("%s: data.%s is set twice", file, strings.Join(at[:i+1], "."))
			}
			next = map[string]any{}
			into[k] = next
		}
		into = next
	}
	last := at[len(at)-1]
	old, exists := into[last]
	if !exists {
		into[last] = v
		return nil
	}
	om, ok1 := old.(map[string]any)
	nm, ok2 := v.(map[string]any)
	if !ok1 || !ok2 {
		return bundleErr("%s: data.%s is set twice", file, strings.Join(at, "."))
	}
	for k, x := range nm {
		if err := mergeData(om, []string{k}, x, file); err != nil {
			return err
		}
	}
	return nil
}

// WithBundle runs the client on a bundle read by [ReadBundle] instead of the embedded
// policy and catalog: its policy.wasm on the wasm engine and its data.catalog. New refuses
// a module the engine does not accept (wrong ABI, missing exports, host builtins) with an
// error wrapping ErrBundle. WithBundle excludes WithEngine and WithCatalog.
func WithBundle(b *Bundle) Option {
	return func(c *config) {
		if b == nil {
			c.errs = append(c.errs, errors.New("grantwire: WithBundle(nil)"))
			return
		}
		c.bundle = b
	}
}

// useBundle takes the catalog from the bundle.
func (c *config) useBundle() error {
	if c.bundle == nil {
		return nil
	}
	if c.engine != nil || c.catalog != nil {
		return errors.New("grantwire: WithBundle carries its own policy and catalog; do not combine it with WithEngine or WithCatalog")
	}
	c.catalog = c.bundle.Catalog
	return nil
}

// newWasmEngine builds the default engine: the bundle's module, or the embedded one.
func (c *config) newWasmEngine(ctx context.Context, cat *catalog.Catalog) (*wasmengine.Engine, string, error) {
	opts := []wasmengine.Option{wasmengine.WithData(cat.Data())}
	if c.bundle == nil {
		e, err := wasmengine.New(ctx, opts...)
		return e, EmbeddedRevision(), err
	}
	e, err := wasmengine.New(ctx, append(opts, wasmengine.WithModule(c.bundle.Wasm))...)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrBundle, c.bundle.WasmPath, err)
	}
	return e, c.bundle.Revision, nil
}

// RevisionOf names a policy.wasm in bundles and decision logs: "sha256:" and the first 16
// hex digits of its sha256. A bundle built from a git checkout appends "@" and
// `git describe` (see package audit).
func RevisionOf(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// EmbeddedRevision is the revision of the embedded policy.wasm.
func EmbeddedRevision() string { return RevisionOf(policy.Wasm) }

// Revision names the policy this client decides with: the bundle's revision (a bundle's,
// or the one an OPA server runs), the embedded policy's ([EmbeddedRevision]), or "" for an
// engine given with WithEngine that does not say (it may evaluate any Rego).
func (c *Client) Revision() string { return c.revision }
