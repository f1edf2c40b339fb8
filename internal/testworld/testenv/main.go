package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Main runs a package's tests with a cache directory of their own, removed when they end:
// XDG_CACHE_HOME (the user cache directory, where grantwire keeps its provider locks,
// grantwire/locks, and its compiled policy) and GRANTWIRE_LOCK_DIR point into it, for the
// tests and for every process they start with the environment they inherit. A test run
// then leaves no lock directory in ~/.cache/grantwire/locks (make test checks it). The
// caches of builds stay where they were (GOCACHE and PIP_CACHE_DIR are pinned to them), so
// the go builds and pip installs of tests stay warm.
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
func Main(m *testing.M) int {
	if user, err := os.UserCacheDir(); err == nil {
		for env, sub := range map[string]string{"GOCACHE": "go-build", "PIP_CACHE_DIR": "pip"} {
			if os.Getenv(env) == "" {
				os.Setenv(env, filepath.Join(user, sub))
			}
		}
	}
	dir, err := os.MkdirTemp("", "grantwire-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	runDir = dir
	os.Setenv("XDG_CACHE_HOME", dir)
	os.Setenv("GRANTWIRE_LOCK_DIR", filepath.Join(dir, "grantwire", "locks"))
	return m.Run()
}

// runDir is the directory Main made for the run (its tests' user cache directory).
var runDir string

// Dir is the run's directory name (made on first use): shared by the package's tests and
// the processes they start, removed when Main returns. Binary.Path builds into
// Dir(tb, "bin"); the processes a test starts with an environment of its own share a
// cache (the compiled policy) as XDG_CACHE_HOME=Dir(tb, "cache").
func Dir(tb testing.TB, name string) string {
	tb.Helper()
	if runDir == "" {
		tb.Fatal("testenv.Dir: the package's TestMain does not run testenv.Main")
	}
	d := filepath.Join(runDir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		tb.Fatal(err)
	}
	return d
}

// Root is the module's root directory (where grantwire's go.mod, the Makefile and
// scripts/ are), found above the test's working directory.
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/grantwire/grantwire\n") {
			return d
		}
		if filepath.Dir(d) == d {
			tb.Fatalf("testenv: no grantwire go.mod above %s", dir)
		}
	}
}
