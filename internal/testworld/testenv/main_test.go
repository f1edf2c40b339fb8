package testenv

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// The package's tests (and the processes they start) see a user cache directory of their
// own, with the lock directory in it; the build caches stay outside; it is gone at the end.
func TestMainGivesTheTestsACacheOfTheirOwnAndRemovesIt(t *testing.T) {
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(cache) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(cache), "grantwire-test-cache-") {
		t.Fatalf("the user cache directory is %s, not one of this run", cache)
	}
	if got := os.Getenv("GRANTWIRE_LOCK_DIR"); got != filepath.Join(cache, "grantwire", "locks") {
		t.Fatalf("GRANTWIRE_LOCK_DIR=%s", got)
	}
	for _, env := range []string{"GOCACHE", "PIP_CACHE_DIR"} {
		if v := os.Getenv(env); v == "" || strings.HasPrefix(v, cache) {
			t.Fatalf("%s=%q: builds would start cold in the run's cache", env, v)
		}
	}
	if os.Getenv("TESTENV_CHILD") == "1" {
		// The child: leave a lock directory, as a test that forgets would, and say where.
		if err := os.MkdirAll(filepath.Join(os.Getenv("GRANTWIRE_LOCK_DIR"), "grantwire.forgotten-0123"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("cache=" + cache + "\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainGivesTheTestsACacheOfTheirOwnAndRemovesIt$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTENV_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child run failed: %v\n%s", err, out)
	}
	var child string
	for sc := bufio.NewScanner(strings.NewReader(string(out))); sc.Scan(); {
		if c, ok := strings.CutPrefix(sc.Text(), "cache="); ok {
			child = c
		}
	}
	if child == "" || child == cache {
		t.Fatalf("the child's cache is %q (mine %s):\n%s", child, cache, out)
	}
	if _, err := os.Stat(child); !os.IsNotExist(err) {
		t.Fatalf("the child's cache %s is still there after its run (%v)", child, err)
	}
}

// Root finds the module's root from the package's directory, two levels below it.
func TestRoot(t *testing.T) {
	root := Root(t)
	for _, f := range []string{"go.mod", "Makefile", filepath.Join("scripts", "postgres-lib.sh")} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("no %s in %s: %v", f, root, err)
		}
	}
	if wd, _ := os.Getwd(); filepath.Join(root, "internal", "testworld", "testenv") != wd {
		t.Errorf("root %s is not two folders above %s", root, wd)
	}
}
