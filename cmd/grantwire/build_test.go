package main_test

// The two builds of the command: the default one links no OPA package and stays small;
// the OPA build (-tags opa) adds the policy commands and the rego engine.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

const module = "github.com/grantwire/grantwire"

// maxStrippedSize bounds the default binary built with -ldflags='-s -w' (BENCHMARKS.md,
// "Binary size"). It was 20 MiB until the policy compiled to Go grew past it with machine
// grants, DPoP and tool rules (20.32 MiB on 2026-12-03): 22 MiB, so that a new dependency
// that costs megabytes is still caught.
const maxStrippedSize = 22 << 20

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps"}, args...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Greater(t, len(deps), 50, "go list -deps %v listed too little: %s", args, out)
	return deps
}

func opaPackages(deps []string) []string {
	var out []string
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/open-policy-agent/") {
			out = append(out, d)
		}
	}
	return out
}

// TestBinaryLinksNoOPA: `go build ./cmd/grantwire` links no package of OPA (nor package
// audit or the rego engine); the OPA build links them.
func TestBinaryLinksNoOPA(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	deps := goList(t, module+"/cmd/grantwire")
	require.Empty(t, opaPackages(deps), "the default build links OPA")
	require.NotContains(t, deps, module+"/audit")
	require.NotContains(t, deps, module+"/core/regoengine")

	opa := goList(t, "-tags", "opa", module+"/cmd/grantwire")
	require.NotEmpty(t, opaPackages(opa), "the OPA build must link OPA (else this test proves nothing)")
	require.Contains(t, opa, module+"/audit")
	require.Contains(t, opa, module+"/core/regoengine")
}

// TestBinaryStrippedSize: the default binary, stripped, is at most 22 MiB (maxStrippedSize).
func TestBinaryStrippedSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	out := filepath.Join(t.TempDir(), "grantwire")
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	fi, err := os.Stat(out)
	require.NoError(t, err)
	t.Logf("stripped default binary: %d bytes (%.1f MB)", fi.Size(), float64(fi.Size())/(1<<20))
	require.LessOrEqual(t, fi.Size(), int64(maxStrippedSize))
}

// The default build says how to get what only the OPA build has; the OPA build runs it,
// and its rego engine decides as the Wasm engine does.
func TestBinaryOPABuild(t *testing.T) {
	w := newBB(t)
	r := w.run("", "policy", "test")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "grantwire policy needs the OPA build")
	require.Contains(t, r.stderr, "\nfix: go build -tags opa -o grantwire ./cmd/grantwire\n")
	r = w.run("", "policy", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "audit, build, docs, replay, test")
	r = w.run("", "--json", "--engine", "rego", "catalog")
	require.Equal(t, 2, r.code)
	var e cliError
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &e), r.stderr)
	require.Contains(t, e.Error.Message, "--engine rego needs the OPA build")
	require.Equal(t, "go build -tags opa -o grantwire ./cmd/grantwire", e.Error.Fix)

	// The fix it prints, run from the module's root, builds a binary that has both.
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "grantwire")
	cmd := exec.Command("go", "build", "-tags", "opa", "-o", bin, "./cmd/grantwire")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	w.bin = bin
	r = w.run("", "policy", "test")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `PASS: \d+/\d+`, r.stdout)
	for _, args := range [][]string{{"grants", "list"}, {"catalog", "google"}, {"agents", "list"}} {
		wasm := w.run("", append([]string{"--json", "--engine", "wasm"}, args...)...)
		rego := w.run("", append([]string{"--json", "--engine", "rego"}, args...)...)
		require.Equal(t, 0, wasm.code, wasm.stderr)
		require.Equal(t, 0, rego.code, rego.stderr)
		require.JSONEq(t, wasm.stdout, rego.stdout, "%v", args)
	}
}

// The policy commands of the OPA build: build, docs, test (their logic is tested in
// package audit).
func TestBinaryPolicyCommands(t *testing.T) {
	w := newBB(t)
	w.bin = opaBinary(t)
	dir := w.home

	// build: a catalog file is validated and shipped; --rego-only leaves policy.wasm out.
	out := filepath.Join(dir, "sub", "b.tar.gz")
	cat := filepath.Join(dir, "catalog.json")
	require.NoError(t, os.WriteFile(cat, []byte(`{"connectors":{"solo":{"type":"mcp_server","command":"solo"}}}`), 0o600))
	r := w.run("", "policy", "build", "-o", out, "--catalog", cat)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "policy.wasm sha256")
	listing, err := exec.Command("tar", "-tzf", out).CombinedOutput()
	require.NoError(t, err, "%s", listing)
	require.Contains(t, string(listing), "policy.wasm")
	r = w.run("", "--json", "policy", "build", "--rego-only", "-o", out)
	require.Equal(t, 0, r.code, r.stderr)
	var built struct {
		File     string `json:"file"`
		Revision string `json:"revision"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &built), r.stdout)
	require.Equal(t, out, built.File)
	listing, err = exec.Command("tar", "-tzf", out).CombinedOutput()
	require.NoError(t, err, "%s", listing)
	require.NotContains(t, string(listing), "policy.wasm")
	require.NoError(t, os.WriteFile(cat, []byte(`{"connectors":{}}`), 0o600))
	r = w.run("", "policy", "build", "-o", out, "--catalog", cat)
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, "no connectors")

	// docs: --check fails (exit 1) on a missing or stale file, passes on a fresh one.
	doc := filepath.Join(dir, "policy.md")
	r = w.run("", "policy", "docs", "-o", doc, "--check")
	require.Equal(t, 1, r.code, "a missing file is stale: %s", r.stderr)
	require.Contains(t, r.stderr, doc+" does not exist: run `grantwire policy docs -o "+doc+"`", "the command that writes it")
	r = w.run("", "policy", "docs", "-o", doc)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "wrote "+doc)
	r = w.run("", "policy", "docs", "-o", doc, "--check")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, doc+" is up to date\n", r.stdout)
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	type docsJSON struct {
		File     string `json:"file"`
		Bytes    *int   `json:"bytes"`
		UpToDate *bool  `json:"up_to_date"`
	}
	var checked, written docsJSON
	r = w.run("", "--json", "policy", "docs", "-o", doc, "--check")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &checked), r.stdout)
	require.Equal(t, docsJSON{File: doc, UpToDate: new(true)}, checked)
	r = w.run("", "--json", "policy", "docs", "-o", doc)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &written), r.stdout)
	require.Equal(t, docsJSON{File: doc, Bytes: new(len(b))}, written)
	r = w.run("", "--json", "policy", "docs", "-o", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, string(b), r.stdout, "-o - prints the reference itself, with or without --json")
	require.NoError(t, os.WriteFile(doc, append(b, 'x'), 0o600))
	r = w.run("", "policy", "docs", "-o", doc, "--check")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "is stale: run `grantwire policy docs -o "+doc+"`", "any file but the checkout's reference: the command that writes it")
	r = w.run("", "--json", "policy", "docs", "-o", doc, "--check")
	require.Equal(t, 1, r.code)
	checked = docsJSON{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &checked), r.stdout)
	require.Equal(t, docsJSON{File: doc, UpToDate: new(false)}, checked)

	// test: no test is a failure; a passing and a failing test; --json lists them.
	p := filepath.Join(dir, "p")
	require.NoError(t, os.MkdirAll(p, 0o755))
	write := func(name, src string) { require.NoError(t, os.WriteFile(filepath.Join(p, name), []byte(src), 0o600)) }
	write("p.rego", "package p\n\nallow if input.x == 1\n")
	r = w.run("", "policy", "test", "--policy", p)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "no Rego tests")
	write("p_test.rego", "package p_test\n\nimport data.p\n\ntest_allow if p.allow with input as {\"x\": 1}\n")
	r = w.run("", "policy", "test", "--policy", p, "-v")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "test_allow")
	require.Contains(t, r.stdout, "PASS: 1/1")
	write("q_test.rego", "package p_test\n\nimport data.p\n\ntest_deny if p.allow with input as {\"x\": 2}\n")
	r = w.run("", "policy", "test", "--policy", p)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stdout, "FAIL")
	require.Contains(t, r.stderr, "1 of 2 Rego tests failed")
	r = w.run("", "policy", "test", "--policy", p, "--json")
	require.Equal(t, 1, r.code)
	var tests struct {
		Passed int `json:"passed"`
		Failed int `json:"failed"`
		Tests  []struct {
			Name string `json:"name"`
			Pass bool   `json:"pass"`
		} `json:"tests"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tests), r.stdout)
	require.Equal(t, 1, tests.Passed)
	require.Equal(t, 1, tests.Failed)
	require.Len(t, tests.Tests, 2)
	var e cliError
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &e), "errors follow --json: %s", r.stderr)
	require.Equal(t, "CHECK_FAILED", e.Error.Code)
}

// The README's `opa eval` example works with the OPA pinned in go.mod, on the Rego-only
// bundle `make bundle` builds (the bundle with policy.wasm names Wasm entrypoints, which
// an OPA without a WebAssembly engine refuses).
func TestREADMEOPAEvalExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds OPA's command line")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	var line string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "go tool opa eval ") {
			line = l
		}
	}
	require.NotEmpty(t, line, "the README has its opa eval example")
	const bundle = "build/grantwire-rego-bundle.tar.gz"
	require.Contains(t, line, bundle)
	require.Regexp(t, `(?m)^\s+go run -tags opa ./cmd/grantwire policy build .*--rego-only -o `+bundle+`$`, string(mk), "make bundle builds it")

	// Build the bundle as make bundle does, into a temporary build/, and run the line there.
	dir := t.TempDir()
	w := newBB(t)
	w.bin = opaBinary(t)
	r := w.run("", "policy", "build", "--rego-only", "-o", filepath.Join(dir, bundle))
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs", "examples"), 0o755))
	ex, err := os.ReadFile(filepath.Join(root, "docs", "examples", "token-not-granted.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "examples", "token-not-granted.json"), ex, 0o600))
	// `go tool opa` is the OPA of go.mod: run that binary where the bundle is.
	tool := exec.Command("go", "tool", "-n", "opa")
	tool.Dir = root
	opa, err := tool.Output()
	require.NoError(t, err)
	cmd := exec.Command("bash", "-c", strings.Replace(line, "go tool opa", strings.TrimSpace(string(opa)), 1))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got struct {
		Status string `json:"status"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, "done", got.Status)
	require.Equal(t, "AGENT_NOT_GRANTED", got.Error.Code)
}

// The OPA build's policy commands are the ones the default build names.
func TestBinaryPolicyCommandsAreTheNamedOnes(t *testing.T) {
	w := newBB(t)
	w.bin = opaBinary(t)
	r := w.run("", "policy")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "grantwire policy needs a command: audit, build, docs, replay, test")
}

// grantwire --version and grantwire version [--json]: version, commit, build, policy
// sha256 (the embedded policy.wasm's, or --bundle's), engine.
func TestBinaryVersion(t *testing.T) {
	sumFile, err := os.ReadFile("../../policy/policy.wasm.sha256")
	require.NoError(t, err)
	sum := strings.Fields(string(sumFile))[0]
	w := newBB(t)
	r := w.run("", "--version")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^grantwire \S+ \(commit \S+, default build, policy sha256 `+sum+`, engine native, go1\.\d+`, r.stdout)

	type info struct {
		Version, Commit, Build, Go, Engine string
		PolicySHA256                       string   `json:"policy_sha256"`
		PolicyRevision                     string   `json:"policy_revision"`
		Engines                            []string `json:"engines"`
	}
	version := func(w *bbWorld, args ...string) info {
		t.Helper()
		var v info
		w.runJSON(&v, append([]string{"version"}, args...)...)
		return v
	}
	v := version(w)
	require.Equal(t, sum, v.PolicySHA256)
	require.Equal(t, "sha256:"+sum[:16], v.PolicyRevision)
	require.Equal(t, "default", v.Build)
	require.Equal(t, "native", v.Engine)
	require.Equal(t, []string{"native", "wasm"}, v.Engines)
	require.NotEmpty(t, v.Version)
	require.NotEmpty(t, v.Commit)
	r = w.run("", "version")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "policy:  sha256 "+sum)

	// Set at link time.
	bin := filepath.Join(t.TempDir(), "grantwire")
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7 -X main.commit=abc123", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	w.bin = bin
	v = version(w)
	require.Equal(t, "v9.8.7", v.Version)
	require.Equal(t, "abc123", v.Commit)
	r = w.run("", "--version")
	require.True(t, strings.HasPrefix(r.stdout, "grantwire v9.8.7 (commit abc123, "), r.stdout)

	// The OPA build, its rego engine, and a bundle's policy.
	w.bin = opaBinary(t)
	v = version(w, "--engine", "rego")
	require.Equal(t, "opa", v.Build)
	require.Equal(t, "rego", v.Engine)
	require.Equal(t, []string{"native", "rego", "wasm"}, v.Engines)
	bundle := filepath.Join(w.home, "b.tar.gz")
	r = w.run("", "policy", "build", "-o", bundle)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, sum, version(w, "--bundle", bundle).PolicySHA256)
}

// §2.6: --version said "commit unknown" when built with -buildvcs=false, which the Makefile
// exports. The Makefile stamps the commit from git with -ldflags -X: a binary built with the
// GOFLAGS it exports names HEAD.
func TestVersionNamesTheCommitUnderTheMakefilesFlags(t *testing.T) {
	root := testenv.Root(t)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	require.NoError(t, err, "git rev-parse HEAD")
	db, err := exec.Command("make", "-C", root, "--no-print-directory", "-pn", "help").Output()
	require.NoError(t, err)
	var goflags string
	for _, line := range strings.Split(string(db), "\n") {
		if v, ok := strings.CutPrefix(line, "GOFLAGS := "); ok {
			goflags = v
		}
	}
	require.Contains(t, goflags, "-buildvcs=false")
	bin := filepath.Join(t.TempDir(), "grantwire")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS="+goflags)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	v, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Contains(t, string(v), "(commit "+strings.TrimSpace(string(head))+",")
}
