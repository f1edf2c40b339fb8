package grantwire_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/grantwire/grantwire"

// layers ranks grantwire's packages (DESIGN: surfaces → shells → host ABI → core →
// policy): a package may import only packages of a lower rank. A key ending in "/" ranks
// every package under it that has no entry of its own; the longest key wins.
var layers = map[string]int{
	// Leaves: the policy, data and helpers that import no grantwire package.
	"policy": 0, "catalog": 1, "internal/canon": 0, "internal/layout": 0,
	"internal/storedjson": 0, "internal/": 0,
	// The core: queries and decisions, then the engines.
	"core": 1, "core/": 2,
	// The native engine's runtime: beneath the engine generated on it.
	"core/nativeengine/internal/rt": 1,
	// The host ABI contract, and what needs only the core's types.
	"hostabi": 3, "decisionlog": 3,
	// Hosts: the Go host.
	"host": 4,
	// Shells, the bundle file, the conformance runner.
	"shells/": 5, "bundle": 5, "conformance": 5,
	// The Go API (the root package: grantwire.Open runs the OS shell).
	"": 6,
	// Surfaces and tools over the Go API.
	"surfaces/": 7, "audit": 7,
	"cmd/": 9,
	// The test worlds, above the product.
	"internal/testworld/authserver": 10, "internal/testworld/testenv": 10, "internal/testworld/mcptest": 10,
	"internal/testworld/memhost": 11, "internal/testworld/nodiff": 11, "internal/testworld/memshell": 12,
	"internal/testworld/nativeshell": 13, "internal/testworld/audittest": 13, "internal/testworld/opatest": 10,
	"internal/cmd/": 14, "internal/tools/": 14,
}

func rank(t *testing.T, rel string) int {
	t.Helper()
	if r, ok := layers[rel]; ok {
		return r
	}
	best, found := -1, ""
	for k, r := range layers {
		if strings.HasSuffix(k, "/") && strings.HasPrefix(rel, k) && len(k) > len(found) {
			best, found = r, k
		}
	}
	require.NotEqual(t, -1, best, "package %q has no layer: add it to layers in layers_test.go", rel)
	return best
}

// TestImportsPointDownward checks every non-test import between grantwire's packages
// against the layers.
func TestImportsPointDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		from := rank(t, rel)
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			require.Less(t, rank(t, to), from, "%s (layer %d) imports %s (layer %d): imports point downward", orRoot(rel), from, orRoot(to), rank(t, to))
			checked++
		}
	}
	require.Greater(t, checked, 40, "the import graph was read")
}

func orRoot(rel string) string {
	if rel == "" {
		return "grantwire (root)"
	}
	return rel
}
