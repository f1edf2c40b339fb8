package catalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/catalog"
)

// FuzzLoad loads arbitrary bytes as a catalog (Load) and as a file that replaces the
// embedded catalog (LoadFile) (issue 10, item 19); the policy judges the entries. No input
// panics; an error names its origin or the file; a catalog accepted from a file loads
// again from its own JSON with the same connectors.
// Longer: go test ./catalog -run '^$' -fuzz FuzzLoad -fuzztime 5m
func FuzzLoad(f *testing.F) {
	f.Add(catalog.Defaults())
	for _, s := range []string{
		`{"connectors": {"x": {"type": "mcp_server", "display_name": "X", "tier": "dev", "command": "x"}}}`,
		`{"connectors": {"x": {"type": "mcp_server", "command": "x", "command": "y"}}}`,
		`{"connectors": {"a": {"type": "oauth_pkce", "token_url": "https://h/{tenant}/t"}}}`,
		`{"connectors": {"Bad Id": {}}}`, `[]`, `{"connectors": null}`, "{\"connectors\": {\"x\xff\": {}}}",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte) {
		if c, err := catalog.Load(raw); err == nil {
			for _, e := range c.Entries() {
				if _, ok := c.Entry(e.ID); !ok || e.ID == "" {
					t.Fatalf("entry %q cannot be looked up", e.ID)
				}
			}
		} else if !strings.HasPrefix(err.Error(), "catalog: ") {
			t.Fatalf("an error without its origin: %v", err)
		}
		p := filepath.Join(dir, "catalog.json")
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := catalog.LoadFile(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		again, err := catalog.Load(c.JSON())
		if err != nil {
			t.Fatalf("an accepted catalog does not load again: %v", err)
		}
		if strings.Join(again.IDs(), ",") != strings.Join(c.IDs(), ",") {
			t.Fatalf("ids changed: %v -> %v", c.IDs(), again.IDs())
		}
	})
}
