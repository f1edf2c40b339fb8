package audit_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/audit"
)

func runPolicy(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := audit.PolicyCommand()
	var out, stderr bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func exitCode(err error) int {
	var e *audit.ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

func TestBuildCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sub", "b.tar.gz")
	cat := filepath.Join(dir, "catalog.json")
	require.NoError(t, os.WriteFile(cat, []byte(`{"connectors":{"solo":{"type":"mcp_server","command":"solo"}}}`), 0o600))
	stdout, err := runPolicy(t, "build", "-o", out, "--catalog", cat)
	require.NoError(t, err)
	require.Contains(t, stdout, "revision "+grantwire.EmbeddedRevision())
	b, err := grantwire.OpenBundle(out)
	require.NoError(t, err)
	require.JSONEq(t, `{"connectors":{"solo":{"type":"mcp_server","command":"solo"}}}`, string(b.Catalog))

	require.NoError(t, os.WriteFile(cat, []byte(`{"connectors":{}}`), 0o600))
	_, err = runPolicy(t, "build", "-o", out, "--catalog", cat)
	require.ErrorContains(t, err, "no connectors")
}

func TestDocsCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "policy.md")
	_, err := runPolicy(t, "docs", "-o", out, "--check")
	require.Equal(t, 1, exitCode(err), "a missing file is stale: %v", err)
	stdout, err := runPolicy(t, "docs", "-o", out)
	require.NoError(t, err)
	require.Contains(t, stdout, "wrote "+out)
	_, err = runPolicy(t, "docs", "-o", out, "--check")
	require.NoError(t, err)
	doc, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, bytes.Replace(doc, []byte("60000"), []byte("60001"), 1), 0o600))
	_, err = runPolicy(t, "docs", "-o", out, "--check")
	require.Equal(t, 1, exitCode(err))
	require.ErrorContains(t, err, "is stale: run `make docs`")

	stdout, err = runPolicy(t, "docs", "-o", "-")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(stdout, "# grantwire policy reference\n"))
}

func TestTestCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	write := func(name, src string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600)) }
	write("p.rego", "package p\n\nallow if input.x == 1\n")

	_, err := runPolicy(t, "test", "--policy", dir)
	require.Equal(t, 1, exitCode(err), "no test is a failure: %v", err)
	require.ErrorContains(t, err, "no Rego tests")

	write("p_test.rego", "package p_test\n\nimport data.p\n\ntest_allow if p.allow with input as {\"x\": 1}\n")
	out, err := runPolicy(t, "test", "--policy", dir, "-v")
	require.NoError(t, err, out)
	require.Contains(t, out, "test_allow")
	require.Contains(t, out, "PASS: 1/1")

	write("q_test.rego", "package p_test\n\nimport data.p\n\ntest_deny if p.allow with input as {\"x\": 2}\n")
	out, err = runPolicy(t, "test", "--policy", dir)
	require.Equal(t, 1, exitCode(err), out)
	require.Contains(t, out, "FAIL")
	require.ErrorContains(t, err, "1 of 2 Rego tests failed")
}
