package grantwire_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/grantwire/grantwire"

// layers ranks grantwire's folders (DESIGN: surfaces → shells → host ABI → core →
// policy), the map docs/architecture.md draws: a package may import only packages of a
// lower rank, and so may a folder (a top-level folder, or one of its first-level
// sub-folders) import only folders of a lower rank. A key ending in "/" ranks every
// folder and package under it that has no key of its own; the longest key wins. The
// test worlds and the development commands rank above the whole product: the product
// never imports them.
var layers = map[string]int{
	// Leaves: the policy, and the helpers under internal/ that import no grantwire package.
	"policy": 0, "internal/": 0,
	// Data, and the core: queries and decisions, then the engines.
	"catalog": 1, "core": 1, "core/": 2,
	// The native engine's runtime: beneath the engine generated on it.
	"core/nativeengine/internal/rt": 1,
	// The host ABI contract, and what needs only the core's types.
	"hostabi": 3, "decisionlog": 3,
	// The Go host.
	"host": 4,
	// The OS and PostgreSQL shells and the bundle file (they import no host), beneath the
	// plumbing that names them.
	"shells/native": 4, "shells/postgres": 4, "bundle": 4,
	// The plumbing the root registers and package mcp, the surfaces, the command and the
	// test worlds share: running an operation by name, and the one construction path's
	// choice (internal/oprun).
	"internal/oprun": 5,
	// The other shells, the conformance runner.
	"shells/": 5, "conformance": 5,
	// The Go API (the root package: grantwire.Open runs the OS shell), then its MCP
	// surface (package mcp, over the root).
	"": 6, "mcp": 7,
	// Surfaces and tools over the Go API, then the command.
	"surfaces/": 8, "audit": 8, "cmd/": 9,
	// The test worlds (internal/testworld): above the product, in their own order.
	"internal/testworld/": 10, "internal/testworld/engines": 10, "internal/testworld/bundletar": 10, "internal/testworld/memhost": 11, "internal/testworld/nodiff": 11,
	"internal/testworld/opatest": 11, "internal/testworld/pgtest": 11, "internal/testworld/mcptest": 11, "internal/testworld/memshell": 12, "internal/testworld/nativeshell": 13,
	"internal/testworld/audittest": 13, "internal/testworld/foreign": 13,
	// Development commands and generators: above everything they use.
	"internal/cmd/": 21, "internal/tools/": 21,
}

// rank is the rank of a package or a folder (relative to the module; "" is the root).
func rank(t *testing.T, rel string) int {
	t.Helper()
	if r, ok := layers[rel]; ok {
		return r
	}
	best, found := -1, ""
	for k, r := range layers {
		if strings.HasSuffix(k, "/") && strings.HasPrefix(rel+"/", k) && len(k) > len(found) {
			best, found = r, k
		}
	}
	require.NotEqual(t, -1, best, "%q has no layer: add it to layers in layers_test.go", orRoot(rel))
	return best
}

// folder is the node of the folder map a package belongs to: its top-level folder, or
// that folder's first-level sub-folder ("" for the root package).
func folder(rel string) string {
	parts := strings.Split(rel, "/")
	return strings.Join(parts[:min(len(parts), 2)], "/")
}

type pkg struct {
	rel     string
	imports []string // grantwire packages imported by non-test files
	std     []string // everything else
}

var listed = sync.OnceValues(func() ([]pkg, error) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		return nil, err
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		q := pkg{rel: relOf(p.ImportPath)}
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				q.imports = append(q.imports, relOf(imp))
			} else {
				q.std = append(q.std, imp)
			}
		}
		pkgs = append(pkgs, q)
	}
})

func relOf(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

// TestImportsPointDownward checks every non-test import between grantwire's packages
// against the layers, the folder map they draw, and that the test worlds stay above the
// product.
func TestImportsPointDownward(t *testing.T) {
	pkgs, err := listed()
	require.NoError(t, err)

	t.Run("packages", func(t *testing.T) {
		checked := 0
		for _, p := range pkgs {
			from := rank(t, p.rel)
			for _, to := range p.imports {
				require.Less(t, rank(t, to), from, "%s (layer %d) imports %s (layer %d): imports point downward",
					orRoot(p.rel), from, orRoot(to), rank(t, to))
				checked++
			}
		}
		require.Greater(t, checked, 40, "the import graph was read")
	})

	// The folder map: an arrow from a folder to each folder it imports from, none running
	// back up (the measure counts the arrows between different top-level folders).
	t.Run("folders", func(t *testing.T) {
		arrows := map[[2]string]bool{}
		folders := map[string]bool{}
		for _, p := range pkgs {
			from := folder(p.rel)
			folders[from] = true
			for _, imp := range p.imports {
				if to := folder(imp); to != from {
					arrows[[2]string{from, to}] = true
				}
			}
		}
		var up []string
		across := 0
		for a := range arrows {
			if rank(t, a[0]) <= rank(t, a[1]) {
				up = append(up, fmt.Sprintf("%s (layer %d) → %s (layer %d)", orRoot(a[0]), rank(t, a[0]), orRoot(a[1]), rank(t, a[1])))
			}
			if strings.Split(a[0], "/")[0] != strings.Split(a[1], "/")[0] {
				across++
			}
		}
		slices.Sort(up)
		require.Greater(t, len(arrows), 40, "the folder map was drawn")
		require.Empty(t, up, "%d of the folder map's %d arrows run back up: move the package, or rank its folder in layers", len(up), len(arrows))
		t.Logf("folder map: %d folders, %d arrows (%d between top-level folders), none running back up", len(folders), len(arrows), across)
	})

	// A package of test scaffolding (it imports testing or net/http/httptest) is a test
	// world: it lives under internal/testworld, and no product package imports one. The
	// exception is conformance, the corpus runner every shell's test calls.
	t.Run("test worlds", func(t *testing.T) {
		above := func(rel string) bool {
			return strings.HasPrefix(rel, "internal/testworld/") || strings.HasPrefix(rel, "internal/cmd/") || strings.HasPrefix(rel, "internal/tools/")
		}
		worlds := 0
		for _, p := range pkgs {
			scaffold := slices.Contains(p.std, "testing") || slices.Contains(p.std, "net/http/httptest")
			if strings.HasPrefix(p.rel, "internal/testworld/") {
				worlds++
			} else if scaffold && p.rel != "conformance" {
				t.Errorf("%s imports testing or net/http/httptest outside its tests: a test world belongs under internal/testworld", orRoot(p.rel))
			}
			if above(p.rel) {
				continue
			}
			for _, imp := range p.imports {
				if strings.HasPrefix(imp, "internal/testworld/") {
					t.Errorf("product package %s imports the test world %s", orRoot(p.rel), imp)
				}
			}
		}
		require.GreaterOrEqual(t, worlds, 9, "the test worlds were found")
	})
}

func orRoot(rel string) string {
	if rel == "" {
		return "grantwire (root)"
	}
	return rel
}
