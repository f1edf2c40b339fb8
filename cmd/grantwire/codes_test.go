package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/core/nativeengine"
)

// The CLI reports no error code that the policy does not publish: every code it writes
// itself (usage, a cancellation, a refused bundle, a failed check, a server's command that
// cannot start) is in errors.table, whose exit code it exits with (policyExit's tests and
// the end-to-end tests check the exits). A code added here without the table fails this.
func TestEveryCodeIsThePolicys(t *testing.T) {
	ctx := context.Background()
	e, err := nativeengine.New(ctx)
	require.NoError(t, err)
	defer e.Close(ctx)
	table := e.Manifest().Errors
	written := regexp.MustCompile(`(?:a\.report\(|name: |name, code :?= |exitFor\(ctx, |exitOf\()"([A-Z_]+)"`)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range written.FindAllSubmatch(src, -1) {
			seen[string(m[1])] = true
			_, ok := table[string(m[1])]
			require.True(t, ok, "%s writes the code %s, which the policy's error table does not publish", f, m[1])
		}
	}
	for _, c := range []string{"USAGE", "CANCELLED", "BUNDLE_REFUSED", "CHECK_FAILED", "COMMAND_NOT_FOUND", "COMMAND_CANNOT_RUN"} {
		require.True(t, seen[c], "the pattern finds %s where the CLI writes it", c)
	}
	require.Equal(t, 130, table["CANCELLED"].Exit)
}
