package bundle

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
)

// WasmPath is where [Write] puts policy.wasm in a bundle.
const WasmPath = "policy.wasm"

// Contents is what [Write] puts in a bundle.
type Contents struct {
	// Revision names the policy in decision logs (required).
	Revision string
	// Wasm is the compiled policy, nil for a Rego-only bundle (for OPA builds without
	// WebAssembly; grantwire cannot run on one).
	Wasm []byte
	// Entrypoints are the wasm entrypoints Wasm exports ("grantwire/decide", ...).
	Entrypoints []string
	// Metadata is the manifest's metadata (grantwire's object under [MetadataKey]).
	Metadata map[string]any
	// Data is the bundle's data.json, at the root: {"catalog": ..., "agents": ...}.
	Data map[string]any
	// Modules are the Rego sources, by their path in the bundle.
	Modules []File
}

// File is one file of a bundle.
type File struct {
	Path string // slash-separated, relative ("policy/grantwire/decide.rego")
	Raw  []byte
}

// Write writes c as an OPA bundle (.tar.gz) that OPA (`opa run --bundle`, `opa eval -b`),
// OPA's bundle service and [Read] accept: .manifest, data.json, the modules and
// policy.wasm, in that order, with fixed modes and no timestamps, so the same contents
// give the same bytes.
func Write(w io.Writer, c Contents) error {
	if c.Revision == "" {
		return errors.New("bundle: a revision is required")
	}
	type wasmResolver struct {
		Entrypoint string `json:"entrypoint"`
		Module     string `json:"module"`
	}
	m := struct {
		Revision string         `json:"revision"`
		Roots    []string       `json:"roots"`
		Wasm     []wasmResolver `json:"wasm,omitempty"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}{Revision: c.Revision, Roots: slices.Clone(Roots), Metadata: c.Metadata}
	if c.Wasm != nil {
		eps := slices.Clone(c.Entrypoints)
		sort.Strings(eps)
		for _, ep := range eps {
			m.Wasm = append(m.Wasm, wasmResolver{Entrypoint: ep, Module: "/" + WasmPath})
		}
	} else if len(c.Entrypoints) > 0 {
		return errors.New("bundle: entrypoints without a wasm module")
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("bundle: manifest: %w", err)
	}
	data, err := json.Marshal(c.Data)
	if err != nil {
		return fmt.Errorf("bundle: data.json: %w", err)
	}
	files := []File{{".manifest", manifest}, {"data.json", data}}
	modules := slices.Clone(c.Modules)
	sort.Slice(modules, func(i, j int) bool { return modules[i].Path < modules[j].Path })
	for _, f := range modules {
		if p := cleanPath(f.Path); p != f.Path || path.Ext(p) != ".rego" || strings.HasPrefix(p, "..") {
			return fmt.Errorf("bundle: module path %q: want a clean relative path to a .rego file", f.Path)
		}
		files = append(files, f)
	}
	if c.Wasm != nil {
		files = append(files, File{WasmPath, c.Wasm})
	}

	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: "/" + f.Path, Mode: 0o644, Size: int64(len(f.Raw)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("bundle: %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Raw); err != nil {
			return fmt.Errorf("bundle: %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return zw.Close()
}
