// Package bundle reads and writes grantwire's OPA bundles with the standard library (no
// OPA import): a .tar.gz (https://www.openpolicyagent.org/docs/management-bundles) holding a
// .manifest with a revision, the roots agents, catalog and grantwire, the wasm entrypoints
// and the sha256 of policy.wasm in its metadata; the Rego sources (which OPA evaluates; the
// wasm engine does not); policy.wasm; and data.json holding the catalog under data.catalog
// and the built-in agents under data.agents.builtin. OPA servers, OPA's bundle service and
// grantwire share the file. Package audit compiles the policy and calls [Write]; the root
// package runs a bundle that [Read] accepted (grantwire.WithBundle).
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/policy"
)

// ErrRefused reports a bundle grantwire refuses to run on (errors.Is); grantwire.New wraps
// it for a bundle it refuses.
var ErrRefused = errors.New("grantwire: bundle refused")

// Conventions of a grantwire bundle.
const (
	// MetadataKey names grantwire's object in the manifest's metadata.
	MetadataKey = "grantwire"
	// WasmSHA256Key is the metadata field holding the hex sha256 of policy.wasm.
	WasmSHA256Key = "wasm_sha256"
	// Name is the bundle's name in decision logs ("bundles": {"grantwire": ...}).
	Name = "grantwire"
)

// Roots are the data roots a grantwire bundle owns, sorted: data.agents (the built-in
// agents), data.catalog and the policy's own package.
var Roots = []string{"agents", "catalog", "grantwire"}

const (
	maxBytes = 64 << 20 // uncompressed, all files together
	maxFiles = 4096
)

// Bundle is an OPA bundle read by [Read]: checked, ready for grantwire.WithBundle.
type Bundle struct {
	Revision   string          // the manifest's revision
	Manifest   json.RawMessage // .manifest as read
	Wasm       []byte          // the module the grantwire entrypoints name
	WasmPath   string          // its path in the bundle ("policy.wasm")
	WasmSHA256 string          // hex sha256 of Wasm, as recorded in the manifest
	// Entrypoints are every wasm entrypoint of the manifest, sorted.
	Entrypoints []string
	Catalog     []byte // data.catalog as JSON ({"connectors": ...}); New has the policy judge it
	// Agents is data.agents.builtin as JSON (a list of agents), nil when the bundle ships no
	// built-in agents.
	Agents json.RawMessage
	Rego   []string // paths of the Rego modules it carries, sorted (OPA evaluates them)
}

type manifest struct {
	Revision *string   `json:"revision"`
	Roots    *[]string `json:"roots"`
	Wasm     []struct {
		Entrypoint string `json:"entrypoint"`
		Module     string `json:"module"`
	} `json:"wasm"`
	Metadata map[string]json.RawMessage `json:"metadata"`
}

// Open reads and checks the bundle file at path (a .tar.gz).
func Open(path string) (*Bundle, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("grantwire: bundle: %w", err)
	}
	defer f.Close()
	b, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return b, nil
}

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// Read reads an OPA bundle (.tar.gz) with the standard library and checks that it is
// a grantwire bundle: roots exactly [agents catalog grantwire], a revision, wasm entrypoints
// grantwire/decide and grantwire/manifest in one module, that module's sha256 equal to the
// one recorded in the manifest metadata, a catalog document under data.catalog and, if
// any, a list of built-in agents under data.agents.builtin (the policy judges both when
// grantwire.New runs the bundle). Signed
// bundles (.signatures.json) are refused: grantwire does not verify signatures yet, and
// must not appear to. Whether the engine accepts the module's ABI is checked by grantwire.New.
func Read(r io.Reader) (*Bundle, error) {
	files, err := readTarGz(r)
	if err != nil {
		return nil, err
	}
	if _, ok := files[".signatures.json"]; ok {
		return nil, refused("signed bundles are not supported: grantwire does not verify .signatures.json")
	}
	rawManifest, ok := files[".manifest"]
	if !ok {
		return nil, refused("no .manifest")
	}
	var m manifest
	if err := json.Unmarshal(rawManifest, &m); err != nil {
		return nil, refused(".manifest: %v", err)
	}
	b := &Bundle{Manifest: rawManifest}
	if m.Revision == nil || *m.Revision == "" {
		return nil, refused("the manifest has no revision (decision logs could not name the policy)")
	}
	b.Revision = *m.Revision
	if m.Roots == nil {
		return nil, refused("the manifest declares no roots (a grantwire bundle owns exactly %v)", Roots)
	}
	roots := slices.Clone(*m.Roots)
	sort.Strings(roots)
	if !slices.Equal(roots, Roots) {
		return nil, refused("roots %q: a grantwire bundle owns exactly %q", *m.Roots, Roots)
	}

	modules := map[string]string{} // entrypoint → module path
	for _, w := range m.Wasm {
		modules[w.Entrypoint] = cleanPath(w.Module)
		b.Entrypoints = append(b.Entrypoints, w.Entrypoint)
	}
	sort.Strings(b.Entrypoints)
	for _, ep := range []string{wasmengine.DecideEntrypoint, wasmengine.ManifestEntrypoint} {
		if _, ok := modules[ep]; !ok {
			return nil, refused("the manifest has no wasm entrypoint %s", ep)
		}
	}
	b.WasmPath = modules[wasmengine.DecideEntrypoint]
	if other := modules[wasmengine.ManifestEntrypoint]; other != b.WasmPath {
		return nil, refused("entrypoints %s and %s are in different modules (%s, %s)",
			wasmengine.DecideEntrypoint, wasmengine.ManifestEntrypoint, b.WasmPath, other)
	}
	if b.Wasm, ok = files[b.WasmPath]; !ok {
		return nil, refused("the manifest names module %s, which the bundle does not contain", b.WasmPath)
	}

	var meta map[string]json.RawMessage
	if raw, ok := m.Metadata[MetadataKey]; !ok || json.Unmarshal(raw, &meta) != nil {
		return nil, refused("the manifest has no metadata.%s object recording the sha256 of %s", MetadataKey, b.WasmPath)
	}
	if err := json.Unmarshal(meta[WasmSHA256Key], &b.WasmSHA256); err != nil || b.WasmSHA256 == "" {
		return nil, refused("the manifest has no metadata.%s.%s", MetadataKey, WasmSHA256Key)
	}
	if got := WasmSHA256(b.Wasm); got != strings.ToLower(b.WasmSHA256) {
		return nil, refused("%s has sha256 %s but the manifest records %s", b.WasmPath, got, b.WasmSHA256)
	}

	data, err := mergedData(files)
	if err != nil {
		return nil, err
	}
	for k := range data {
		if k != "catalog" && k != "agents" {
			return nil, refused("data.%s is outside data.catalog and data.agents", k)
		}
	}
	if agents, ok := data["agents"]; ok {
		obj, ok := agents.(map[string]any)
		list, isList := obj["builtin"].([]any)
		if !ok || len(obj) != 1 || !isList {
			return nil, refused(`data.agents must be {"builtin": [agents]}`)
		}
		if b.Agents, err = json.Marshal(list); err != nil {
			return nil, refused("data.agents.builtin: %v", err)
		}
	}
	if _, ok := data["catalog"]; !ok {
		return nil, refused("no data.catalog (data.json holds the catalog of connectors)")
	}
	if b.Catalog, err = json.Marshal(data["catalog"]); err != nil {
		return nil, refused("data.catalog: %v", err)
	}
	if _, err := catalog.Load(b.Catalog); err != nil {
		return nil, refused("data.catalog: %v", err)
	}
	for p := range files {
		if path.Ext(p) == ".rego" {
			b.Rego = append(b.Rego, p)
		}
	}
	sort.Strings(b.Rego)
	return b, nil
}

// cleanPath turns "/policy.wasm" or "./policy.wasm" into "policy.wasm".
func cleanPath(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

func readTarGz(r io.Reader) (map[string][]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, refused("not a .tar.gz: %v", err)
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
			return nil, refused("tar: %v", err)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, refused("%s is not a regular file", h.Name)
		}
		if slices.Contains(strings.Split(h.Name, "/"), "..") {
			return nil, refused("%s escapes the bundle", h.Name)
		}
		name := cleanPath(h.Name)
		if _, dup := files[name]; dup {
			return nil, refused("%s appears twice", name)
		}
		if len(files) == maxFiles {
			return nil, refused("more than %d files", maxFiles)
		}
		var buf bytes.Buffer
		n, err := io.Copy(&buf, io.LimitReader(tr, maxBytes-total+1))
		if err != nil {
			return nil, refused("%s: %v", name, err)
		}
		if total += n; total > maxBytes {
			return nil, refused("larger than %d MiB uncompressed", maxBytes>>20)
		}
		files[name] = buf.Bytes()
	}
	return files, nil
}

// mergedData merges every data.json of the bundle at its directory's path, as OPA does.
func mergedData(files map[string][]byte) (map[string]any, error) {
	root := map[string]any{}
	names := slices.Sorted(maps.Keys(files))
	for _, p := range names {
		base := path.Base(p)
		if base == "data.yaml" || base == "data.yml" {
			return nil, refused("%s: grantwire reads data.json only", p)
		}
		if base != "data.json" {
			continue
		}
		var v any
		if err := json.Unmarshal(files[p], &v); err != nil {
			return nil, refused("%s: %v", p, err)
		}
		dir := path.Dir(p)
		if dir == "." {
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, refused("%s is not a JSON object", p)
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
				return refused("%s: data.%s is set twice", file, strings.Join(at[:i+1], "."))
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
		return refused("%s: data.%s is set twice", file, strings.Join(at, "."))
	}
	for k, x := range nm {
		if err := mergeData(om, []string{k}, x, file); err != nil {
			return err
		}
	}
	return nil
}

// RevisionOf names a policy.wasm in bundles and decision logs: "sha256:" and the first 16
// hex digits of its sha256. A bundle built from a git checkout appends "@" and
// `git describe` (see package audit).
func RevisionOf(wasm []byte) string { return "sha256:" + WasmSHA256(wasm)[:16] }

// WasmSHA256 is the hex sha256 of a policy.wasm, as a bundle's manifest records it
// (metadata.grantwire.wasm_sha256).
func WasmSHA256(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// EmbeddedRevision is the revision of the embedded policy.wasm.
func EmbeddedRevision() string { return RevisionOf(policy.Wasm) }
