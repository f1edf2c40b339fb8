package python_test

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPythonPackage builds the package's wheel from this checkout the way `pip install
// ./shells/python` does (hatchling, with the pinned build requirements of the test
// environment rather than an isolated download of them), installs it into a fresh virtual
// environment with its dependencies (the pinned wheels, from pip's cache) and demands that it
// carries the very policy.wasm the Go build embeds (its sha256 and version are what `grantwire
// version --json` prints) and that an example runs. It also builds a wheel for a release
// version and checks the version it carries.
func TestPythonPackage(t *testing.T) {
	e := setup(t)
	start, dist := time.Now(), t.TempDir()
	if out, err := exec.Command(e.python, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "--no-build-isolation", "-w", dist, ".").CombinedOutput(); err != nil {
		t.Fatalf("pip wheel ./shells/python: %v\n%s", err, out)
	}
	built, start := time.Since(start), time.Now()
	// A fresh environment without pip of its own (ensurepip costs more than the install): the
	// test environment's pip installs into it (pip --python).
	venv := t.TempDir()
	sys, _ := exec.LookPath("python3")
	if out, err := exec.Command(sys, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	py := filepath.Join(venv, "bin", "python")
	install := exec.Command(e.python, "-m", "pip", "--python", py, "install", "-q", "--disable-pip-version-check", "--no-compile",
		"--no-index", "--find-links", e.wheelhouse, filepath.Join(dist, "grantwire-0.0.0.dev0-py3-none-any.whl"))
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("pip install the wheel into a fresh venv: %v\n%s", err, out)
	}
	installed, start := time.Since(start), time.Now()
	goVersion, err := exec.Command(e.cli, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	pyVersion, err := exec.Command(py, "-m", "grantwire", "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	g, p := fields(goVersion), fields(pyVersion)
	for _, k := range []string{"version", "policy_sha256", "policy_revision"} {
		if g[k] == "" || g[k] != p[k] {
			t.Errorf("%s: the Go build says %q, the Python package %q", k, g[k], p[k])
		}
	}
	wasm, err := os.ReadFile(filepath.Join(e.repo, "policy", "policy.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	out, err := exec.Command(py, "-c", "import grantwire._engine, hashlib; print(hashlib.sha256(grantwire._engine.policy_wasm()).hexdigest())").Output()
	if err != nil || strings.TrimSpace(string(out)) != hex.EncodeToString(sum[:]) {
		t.Errorf("the installed policy.wasm's sha256 is %q (%v), policy/policy.wasm's %x", out, err, sum)
	}
	// An example that needs no credential store: grants in a home of its own.
	example := exec.Command(py, "-c", `import grantwire
grantwire.grant_agent("google", "builtin:email", ["https://www.googleapis.com/auth/gmail.readonly"])
print(grantwire.list_agent_grants("google"))
`)
	example.Env = append(os.Environ(), "GRANTWIRE_HOME="+t.TempDir(), "GRANTWIRE_CATALOG=")
	if out, err := example.CombinedOutput(); err != nil || !strings.Contains(string(out), "{'builtin:email': ['https://www.googleapis.com/auth/gmail.readonly']}") {
		t.Errorf("the example printed %q (%v)", out, err)
	}
	checked, start := time.Since(start), time.Now()
	// A release build: GRANTWIRE_VERSION is what -ldflags "-X main.version=..." gives the Go build.
	release := t.TempDir()
	wheel := exec.Command(e.python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", release, ".")
	wheel.Env = append(os.Environ(), "GRANTWIRE_VERSION=v9.8.7")
	if out, err := wheel.CombinedOutput(); err != nil {
		t.Fatalf("pip wheel: %v\n%s", err, out)
	}
	z, err := zip.OpenReader(filepath.Join(release, "grantwire-9.8.7-py3-none-any.whl"))
	if err != nil {
		t.Fatalf("the release wheel is not grantwire-9.8.7-py3-none-any.whl: %v", err)
	}
	defer z.Close()
	var build string
	for _, f := range z.File {
		if f.Name == "grantwire/_build.json" {
			r, _ := f.Open()
			b, _ := io.ReadAll(r)
			build = string(b)
		}
	}
	if v := fields([]byte(build)); v["version"] != "v9.8.7" || v["policy_sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("the release wheel's _build.json is %q", build)
	}
	t.Logf("the wheel built in %.1f s, installed into a fresh venv in %.1f s (checks and example %.1f s, release wheel %.1f s); version %s, policy sha256 %s as the Go build",
		built.Seconds(), installed.Seconds(), checked.Seconds(), time.Since(start).Seconds(), p["version"], p["policy_sha256"])
}
