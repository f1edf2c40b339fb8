package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/audit"
)

func TestAuditOfTheEmbeddedPolicyPasses(t *testing.T) {
	fsys, root, err := audit.PolicyFS("")
	require.NoError(t, err)
	rep, err := audit.Audit(context.Background(), fsys, root, audit.AuditOptions{})
	require.NoError(t, err)
	var names []string
	for _, c := range rep.Checks {
		names = append(names, c.Name)
		require.True(t, c.OK, "%s: %v", c.Name, c.Problems)
	}
	require.Equal(t, []string{"format", "compile", "tests", "coverage", "metadata", "entrypoints"}, names)
	require.Equal(t, audit.EmbeddedPolicyPath, rep.Policy)
	require.Greater(t, rep.Tests, 100)
	require.Zero(t, rep.Failed)
	require.Greater(t, rep.Lines, 1000)
	require.GreaterOrEqual(t, rep.Coverage, audit.DefaultThreshold)
	require.Equal(t, audit.DefaultThreshold, rep.Threshold)
}

// miniPolicy is a complete policy that passes every check at a threshold of 100 %.
func miniPolicy() map[string]string {
	return map[string]string{
		"decide.rego": `# METADATA
# title: p
# description: Routes one operation.
package p

import data.p.ops

_decision := ops.a if {
	input.op == "a"
}

# METADATA
# title: decide
# description: The decision.
# entrypoint: true
decide := _decision

# METADATA
# title: manifest
# description: Lists the operations.
# entrypoint: true
manifest := {"ops": {"a": {}}}
`,
		"ops/ops.rego": `# METADATA
# title: ops
# description: One operation.
package p.ops

# METADATA
# title: a
# description: The decision of a.
# entrypoint: true
a := 1
`,
		"decide_test.rego": `package p_test

import data.p

test_decide if p.decide with input as {"op": "a"}

test_manifest if p.manifest.ops.a == {}
`,
	}
}

func writePolicy(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p")
	for name, src := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	return dir
}

func auditDir(t *testing.T, dir string) *audit.AuditReport {
	t.Helper()
	rep, err := audit.Audit(context.Background(), os.DirFS(filepath.Dir(dir)), filepath.Base(dir),
		audit.AuditOptions{Threshold: 100, Entrypoints: []string{"p/decide", "p/manifest"}})
	require.NoError(t, err)
	return rep
}

func problems(rep *audit.AuditReport) string {
	var b strings.Builder
	for _, c := range rep.Checks {
		for _, p := range c.Problems {
			b.WriteString(c.Name + ": " + p + "\n")
		}
	}
	return b.String()
}

// Each check fails on a policy that breaks it, and only that check: a check that cannot
// fail, or that fails for the wrong reason, is noticed.
func TestAuditFailsEachCheckOnAPolicyThatBreaksIt(t *testing.T) {
	base := auditDir(t, writePolicy(t, miniPolicy()))
	require.True(t, base.OK(), problems(base))
	require.Equal(t, 2, base.Tests)
	require.Equal(t, 100.0, base.Coverage)

	// replace changes the first from in file to to.
	replace := func(file, from, to string) func(map[string]string) {
		return func(f map[string]string) { f[file] = strings.Replace(f[file], from, to, 1) }
	}
	// add appends src to file.
	add := func(file, src string) func(map[string]string) {
		return func(f map[string]string) { f[file] += src }
	}
	cases := []struct {
		name   string
		change func(files map[string]string)
		failed []string
		want   []string
	}{
		{"unformatted", replace("ops/ops.rego", "a := 1", "a:=1"),
			[]string{"format"}, []string{"p/ops/ops.rego: not formatted"}},
		{"impure builtin", replace("ops/ops.rego", "a := 1", "a := time.now_ns()"),
			[]string{"compile"}, []string{"undefined function time.now_ns"}},
		{"failing test", add("decide_test.rego", "\ntest_wrong if p.decide == 2 with input as {\"op\": \"a\"}\n"),
			[]string{"tests"}, []string{"p_test.test_wrong failed"}},
		{"untested rule", add("ops/ops.rego", "\n# METADATA\n# title: b\n# description: Never tested.\nb := 2 if input.x\n"),
			[]string{"coverage"}, []string{"below the 100% threshold", "not covered in p/ops/ops.rego: lines 15"}},
		{"undocumented package", replace("ops/ops.rego", "# METADATA\n# title: ops\n# description: One operation.\n", ""),
			[]string{"metadata"}, []string{"p/ops/ops.rego: package data.p.ops has no METADATA"}},
		{"decision rule not an entrypoint", replace("ops/ops.rego", "# entrypoint: true\n", ""),
			[]string{"entrypoints"}, []string{"data.p.ops.a (the decision rule of a) has no METADATA with entrypoint: true"}},
		{"manifest disagrees with the routing", replace("decide.rego", `{"ops": {"a": {}}}`, `{"ops": {"a": {}, "b": {}}}`),
			[]string{"entrypoints"}, []string{"decide routes [a] but the manifest lists [a b]"}},
		{"no tests", func(f map[string]string) { delete(f, "decide_test.rego") },
			[]string{"tests", "coverage"}, []string{"no Rego tests", "0.00% is below the 100% threshold"}},
		{"syntax error", add("ops/ops.rego", "\nb := \n"),
			[]string{"format", "parse"}, []string{"p/ops/ops.rego: cannot be formatted", "p/ops/ops.rego:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := miniPolicy()
			tc.change(files)
			rep := auditDir(t, writePolicy(t, files))
			require.Equal(t, tc.failed, rep.FailedChecks(), problems(rep))
			for _, w := range tc.want {
				require.Contains(t, problems(rep), w)
			}
		})
	}
}

// The report `grantwire policy audit` prints (its exit codes are tested in cmd/grantwire).
func TestAuditReportNamesTheFailedCheck(t *testing.T) {
	files := miniPolicy()
	files["ops/ops.rego"] = strings.Replace(files["ops/ops.rego"], "# entrypoint: true\n", "", 1)
	dir := writePolicy(t, files)

	fsys, root, err := audit.PolicyFS(dir)
	require.NoError(t, err)
	rep, err := audit.Audit(context.Background(), fsys, root, audit.AuditOptions{Threshold: 100})
	require.NoError(t, err)
	require.Equal(t, []string{"entrypoints"}, rep.FailedChecks())
	var out bytes.Buffer
	audit.WriteAudit(&out, rep, false)
	require.Contains(t, out.String(), "  FAIL  entrypoints")
	require.Contains(t, out.String(), "  ok    coverage     100.00% of")
	require.Contains(t, out.String(), "audit: FAIL (entrypoints)")
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var back audit.AuditReport
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, []string{"entrypoints"}, back.FailedChecks())

	_, _, err = audit.PolicyFS(filepath.Join(dir, "nope"))
	require.ErrorContains(t, err, "not a directory")
}
