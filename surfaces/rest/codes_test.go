package rest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/core/nativeengine"
)

// The server answers no error code that the policy does not publish: every code it writes
// (its own problems and the events of an authorization that ends) is in errors.table, whose
// status it answers. A code added here without the policy's table fails this test.
func TestEveryCodeIsThePolicys(t *testing.T) {
	e, err := nativeengine.New(context.Background())
	require.NoError(t, err)
	defer e.Close(context.Background())
	table := e.Manifest().Errors
	written := regexp.MustCompile(`(?:s\.problem\(w, |"code": )"([A-Z_]+)"`)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	seen := 0
	for _, f := range files {
		if filepath.Ext(f) != ".go" || regexp.MustCompile(`_test\.go$`).MatchString(f) {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range written.FindAllSubmatch(src, -1) {
			seen++
			_, ok := table[string(m[1])]
			require.True(t, ok, "%s writes the code %s, which the policy's error table does not publish", f, m[1])
		}
	}
	require.Greater(t, seen, 15, "the pattern finds the codes the server writes")
}
