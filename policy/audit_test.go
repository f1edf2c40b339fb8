package policy_test

// The policy's audit with OPA's own Go packages: every package and every public rule carries
// a METADATA title and description, every operation's decision rule is an entrypoint, and
// the modules compile in strict mode against capabilities.json (so no clock, randomness,
// network or host call can creep in). `make audit` runs these tests beside `opa fmt`,
// `opa check` and `opa test --coverage`; `grantwire policy audit` runs the same checks
// (package audit) and the rest with OPA's Go packages. Each check is also run against a
// module that must fail it, so a check that cannot fail would be noticed.

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/policy"
)

// The checks are package audit's (the same code `grantwire policy audit` runs); these
// tests apply them to the embedded policy, and to modules that must fail them.

// metadataProblems runs audit.MetadataProblems on the modules of fsys.
func metadataProblems(fsys fs.FS) ([]string, error) {
	mods, err := audit.ParseModules(fsys, ".", false)
	if err != nil {
		return nil, err
	}
	return audit.MetadataProblems(mods)
}

// entrypointProblems runs audit.EntrypointProblems on the modules of fsys.
func entrypointProblems(fsys fs.FS, root string, wanted []string) ([]string, error) {
	mods, err := audit.ParseModules(fsys, ".", false)
	if err != nil {
		return nil, err
	}
	return audit.EntrypointProblems(mods, root, wanted)
}

// compile compiles the modules of fsys, plus extra ones, in strict mode against the
// policy's capabilities, as `opa check --strict --capabilities` does.
func compile(t *testing.T, fsys fs.FS, extra map[string]string) ast.Errors {
	t.Helper()
	mods, err := audit.ParseModules(fsys, ".", false)
	require.NoError(t, err)
	for name, src := range extra {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		require.NoError(t, err)
		mods[name] = m
	}
	errs, err := audit.CompileStrict(mods, policy.Capabilities)
	require.NoError(t, err)
	return errs
}

func TestPolicyMetadata(t *testing.T) {
	problems, err := metadataProblems(policy.Sources)
	require.NoError(t, err)
	require.Empty(t, problems, "every package and public rule needs # METADATA with title and description")
}

func TestPolicyEntrypoints(t *testing.T) {
	problems, err := entrypointProblems(policy.Sources, "grantwire/decide.rego", policy.Entrypoints)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestPolicyCompilesAgainstCapabilities(t *testing.T) {
	require.Empty(t, compile(t, policy.Sources, nil))
}

// The negative tests: each check must fail on a module that breaks its rule.

func TestMetadataCheckReportsWhatIsMissing(t *testing.T) {
	fsys := fstest.MapFS{
		"p/ok.rego": {Data: []byte(`# METADATA
# title: ok
# description: A documented package.
package p.ok

# METADATA
# title: answer
# description: A documented rule.
answer := 42

# METADATA
# title: f
# description: A documented function with two definitions.
f(1) := "one"

f(2) := "two"

_private := 1
`)},
		"p/bare.rego": {Data: []byte(`package p.bare

# A comment is not METADATA.
undocumented := 1

# METADATA
# title: only a title
half := 2

_private := 3
`)},
		"p/bare_test.rego": {Data: []byte(`package p.bare_test

test_x if true
`)},
	}
	problems, err := metadataProblems(fsys)
	require.NoError(t, err)
	require.Equal(t, []string{
		"p/bare.rego: package data.p.bare has no METADATA with title and description",
		"p/bare.rego:4: rule data.p.bare.undocumented has no METADATA with title and description",
		"p/bare.rego:8: rule data.p.bare.half has no METADATA with title and description",
	}, problems)
}

func TestEntrypointCheckReportsWhatIsMissing(t *testing.T) {
	fsys := fstest.MapFS{
		"p/decide.rego": {Data: []byte(`# METADATA
# title: p
# description: Routes.
package p

import data.p.ops

_decision := ops.a if {
	input.op == "a"
} else := ops.b if {
	input.op == "b"
}

# METADATA
# title: decide
# description: The decision.
# entrypoint: true
decide := _decision

# METADATA
# title: manifest
# description: Lists a and c.
manifest := {"ops": {"a": {}, "c": {}}}
`)},
		"p/ops.rego": {Data: []byte(`# METADATA
# title: ops
# description: Two operations.
package p.ops

# METADATA
# title: a
# description: An entrypoint.
# entrypoint: true
a := 1

# METADATA
# title: b
# description: Not an entrypoint.
b := 2
`)},
	}
	problems, err := entrypointProblems(fsys, "p/decide.rego", []string{"p/decide", "p/manifest"})
	require.NoError(t, err)
	require.Equal(t, []string{
		"decide routes [a b] but the manifest lists [a c]",
		"data.p.manifest (an entrypoint of policy.wasm) has no METADATA with entrypoint: true",
		"data.p.ops.b (the decision rule of b) has no METADATA with entrypoint: true",
	}, problems)
}

func TestCapabilitiesRejectImpureBuiltins(t *testing.T) {
	for _, call := range []string{
		"time.now_ns()",
		`http.send({"method": "get", "url": "https://example.com"})`,
		`rand.intn("x", 10)`,
		"opa.runtime()",
		`uuid.rfc4122("x")`,
		`crypto.x509.parse_certificates("")`,
	} {
		t.Run(call, func(t *testing.T) {
			src := fmt.Sprintf("package grantwire.impure\n\nx := %s\n", call)
			errs := compile(t, policy.Sources, map[string]string{"impure.rego": src})
			require.NotEmpty(t, errs, "%s must be refused by capabilities.json", call)
			name := call[:strings.Index(call, "(")]
			require.Contains(t, errs.Error(), "undefined function "+name)
		})
	}
}
