package main_test

// Black-box tests: they build the grantwire binary and run it as a user would, in a private
// home with a clean environment. The commands here need no OS shell (help, catalog, agents,
// usage errors); the tests that drive the real OS shell, the private Secret Service and the
// local authorization server use the same bbWorld (phase 2 of the CLI issue; e2e_test.go
// holds both worlds).

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/fixes"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

var (
	// The default build and the OPA build (-tags opa: the policy commands, the rego engine).
	binDefault = testenv.Binary{Pkg: ".", Name: "grantwire"}
	binOPA     = testenv.Binary{Pkg: ".", Name: "grantwire-opa", Flags: []string{"-tags", "opa"}}
)

func TestMain(m *testing.M) {
	if os.Getenv(fleetMachineEnv) != "" {
		os.Exit(fleetMachine()) // this process is a machine of a fleet test (fleetMachine, fleet_e2e_test.go)
	}
	code := testenv.Main(m) // locks, caches and built commands of its own, so the run leaves none behind
	if testing.Verbose() {
		fmt.Printf("fixes the tests saw printed, by kind: %v\n", fixes.Recorded())
	}
	// Every fix a test saw printed must be of a kind TestEveryFixRuns runs.
	if unknown := fixes.Unknown(); len(unknown) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the CLI printed %d fix(es) of no kind internal/fixes lists; add the kind and a run to TestEveryFixRuns:\n  %s\n",
			len(unknown), strings.Join(unknown, "\n  "))
		code = 1
	}
	os.Exit(code)
}

// grantwireBinary builds the command (the default build) once per test run.
func grantwireBinary(t testing.TB) string { return binDefault.Path(t) }

// opaBinary builds the OPA build of the command once per test run.
func opaBinary(t testing.TB) string { return binOPA.Path(t) }

func TestBinaryHelp(t *testing.T) {
	w := newBB(t)
	r := w.run("", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	for _, c := range []string{"catalog", "status", "connect", "configure", "test", "disconnect", "import", "grants", "activations", "token", "mcp", "agents", "policy"} {
		require.Regexp(t, `(?m)^  `+c+`\s`, r.stdout)
	}
	require.Contains(t, r.stdout, "Exit codes:")
	r = w.run("", "help", "import")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "Examples:")
	require.Contains(t, r.stdout, "--from-stdin")
}

func TestBinaryUsageErrorsExit2(t *testing.T) {
	w := newBB(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "grantwire needs a command"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"connect"}, "grantwire connect: missing <provider>"},
		{[]string{"grants", "grant", "google"}, "grantwire grants grant: missing <agent>"},
		{[]string{"--engine", "lua", "catalog"}, "--engine must be native, wasm or opa-server=URL"},
		{[]string{"--engine", "rego", "catalog"}, "--engine rego needs the OPA build of grantwire"},
		{[]string{"policy", "audit", "--threshold", "0"}, "grantwire policy needs the OPA build"},
		{[]string{"catalog", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"configure", "google", "--client-id", "x", "--client-secret", "argv-secret-1"}, "secrets are never taken from arguments"},
		{[]string{"configure", "mcp-github", "--set", "GITHUB_PERSONAL_ACCESS_TOKEN=argv-secret-2"}, "is a secret"},
		{[]string{"import", "google", "--from-stdin", "--refresh-token", "argv-secret-3"}, "secrets are never taken from arguments"},
		{[]string{"mcp"}, "grantwire mcp needs a command: add, auth, config, list, logout, proxy, remove, run"},
		{[]string{"mcp", "list", "extra"}, `grantwire mcp list takes no arguments: unexpected "extra"`},
		{[]string{"--bundle", "b.tar.gz", "--catalog", "c.json", "status"}, "--bundle carries its own catalog"},
	} {
		r := w.run("", tc.args...)
		require.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, "%v", tc.args)
		require.NotContains(t, r.stdout+r.stderr, "argv-secret", "%v", tc.args)
	}
	_, err := os.Stat(filepath.Join(w.home, ".grantwire"))
	require.True(t, errors.Is(err, os.ErrNotExist), "usage errors create nothing")

	w.bin = opaBinary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "audit", "--threshold", "0"}, "--threshold must be a percentage"},
		{[]string{"policy", "replay"}, "grantwire policy replay: missing <log>"},
		{[]string{"policy", "nope"}, `unknown command "nope" for "grantwire policy"`},
		{[]string{"policy", "test", "x"}, `grantwire policy test takes no arguments: unexpected "x"`},
		{[]string{"--bundle", "b.tar.gz", "--engine", "rego", "status"}, "--bundle runs the bundle's policy.wasm"},
	} {
		r := w.run("", tc.args...)
		require.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, "%v", tc.args)
	}
}

func TestBinaryCatalog(t *testing.T) {
	w := newBB(t)
	r := w.run("", "catalog", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var list struct {
		Connectors []map[string]any `json:"connectors"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.GreaterOrEqual(t, len(list.Connectors), 23)

	r = w.run("", "catalog", "nope")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "unknown connector nope")

	// The raw document round-trips as an override file.
	r = w.run("", "catalog", "--raw")
	require.Equal(t, 0, r.code)
	file := filepath.Join(w.home, "catalog.json")
	require.NoError(t, os.WriteFile(file, []byte(r.stdout), 0o600))
	r2 := w.run("", "--catalog", file, "catalog", "--json")
	require.Equal(t, 0, r2.code, r2.stderr)
	require.JSONEq(t, w.run("", "catalog", "--json").stdout, r2.stdout)

	// A broken override: configuration error naming the file.
	require.NoError(t, os.WriteFile(file, []byte(`{"connectors": {"x": {"type": "oauth_pkce", "display_name": "X", "tier": "dev"}}}`), 0o600))
	w.env = append(w.env, "GRANTWIRE_CATALOG="+file)
	r = w.run("", "catalog")
	require.Equal(t, 3, r.code)
	require.Contains(t, r.stderr, file)
	require.Contains(t, r.stderr, "needs authorization_url, token_url")
}

func TestBinaryAgents(t *testing.T) {
	w := newBB(t)
	src := filepath.Join(w.home, "triage_bot.py")
	code := []byte("class Triage: pass\n")
	require.NoError(t, os.WriteFile(src, code, 0o600))
	sum := sha256.Sum256(code)
	r := w.run("", "agents", "id", src)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "custom:"+hex.EncodeToString(sum[:])[:16]+":triage_bot\n", r.stdout)

	r = w.run("", "agents", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var out struct {
		Agents []struct {
			ID string `json:"id"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	var ids []string
	for _, a := range out.Agents {
		ids = append(ids, a.ID)
	}
	require.Contains(t, ids, "builtin:chat")
	require.Contains(t, ids, "builtin:email")
}
