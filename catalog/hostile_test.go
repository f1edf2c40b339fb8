package catalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/catalog"
)

// A catalog file is read as a regular file of at most MaxFileBytes, as strict JSON: a
// duplicated field would silently replace a setting (issue 10, items 14 and 19).
func TestLoadFileRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	entry := `{"type": "mcp_server", "display_name": "X", "tier": "dev", "command": "x"}`
	for _, tc := range []struct{ name, doc, want string }{
		{"duplicate field", `{"connectors": {"x": {"type": "mcp_server", "display_name": "X", "tier": "dev", "command": "x", "command": "evil"}}}`, `duplicate member name "command"`},
		{"invalid utf-8", "{\"connectors\": {\"x\": {\"type\": \"mcp_server\", \"display_name\": \"X\xff\", \"tier\": \"dev\", \"command\": \"x\"}}}", "invalid UTF-8"},
		{"too large", `{"connectors": {"x": ` + entry + `}, "pad": "` + strings.Repeat("x", catalog.MaxFileBytes) + `"}`, "is larger than 8 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			require.NoError(t, os.WriteFile(p, []byte(tc.doc), 0o600))
			_, err := catalog.LoadFile(p)
			require.ErrorContains(t, err, p)
			require.ErrorContains(t, err, tc.want)
		})
	}
	done := make(chan error, 1)
	go func() { _, err := catalog.LoadFile("/dev/zero"); done <- err }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "/dev/zero is a character device, not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("LoadFile(/dev/zero) blocked for 10 s")
	}
}
