package python_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/foreign"
)

// requirePython is set by `make test` (scripts/test.sh): there a missing Python, a failed
// install or a skipped pytest test fails instead of skipping.
const requirePython = "GRANTWIRE_REQUIRE_PYTHON"

// pyenv is the Python side of the tests: a virtual environment with requirements.lock and
// the package installed from this checkout (kept under build/python, named by the hash of
// requirements.lock and the Python version), the same pinned packages as wheels, and the Go
// binaries the Python tests drive.
type pyenv struct {
	repo, python, wheelhouse      string
	cli, authserver, browser, bin string
}

var (
	envOnce sync.Once
	envVal  *pyenv
	envErr  error
)

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv(requirePython) == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (set "+requirePython+"=1 to make this fail)", args...)
}

// setup returns the environment, creating the virtual environment under build/python when
// its requirements changed and reinstalling the package when its sources did.
func setup(t *testing.T) *pyenv {
	t.Helper()
	envOnce.Do(func() { envVal, envErr = build() })
	if envErr != nil {
		skipOrFail(t, "the Python shell cannot be tested: %v", envErr)
	}
	return envVal
}

func build() (*pyenv, error) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	sys, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("python3 is not on PATH: install Python 3.10 or later with venv and pip (Debian: apt-get install python3-venv)")
	}
	out, err := exec.Command(sys, "-c", "import sys; print('%d.%d' % sys.version_info[:2]); assert sys.version_info >= (3, 10)").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("python3 is older than 3.10 or broken: %s", out)
	}
	lock, err := os.ReadFile("requirements.lock")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append(lock, out...))
	venv := filepath.Join(repo, "build", "python", "venv-"+hex.EncodeToString(sum[:6]))
	py := filepath.Join(venv, "bin", "python")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = "."
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
		return nil
	}
	if _, err := os.Stat(py); err != nil {
		tmp := venv + ".tmp"
		_ = os.RemoveAll(tmp)
		if err := run(sys, "-m", "venv", tmp); err != nil {
			return nil, err
		}
		if err := run(filepath.Join(tmp, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", "requirements.lock"); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, venv); err != nil {
			return nil, err
		}
	}
	// The same pinned packages as wheels, for TestPythonPackage's fresh environment (from pip's cache).
	if _, err := os.Stat(filepath.Join(venv, "wheelhouse")); err != nil {
		tmp := filepath.Join(venv, "wheelhouse.tmp")
		_ = os.RemoveAll(tmp)
		if err := run(py, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "-w", tmp, "-r", "requirements.lock"); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, filepath.Join(venv, "wheelhouse")); err != nil {
			return nil, err
		}
	}
	stamp, err := sourceStamp(repo)
	if err != nil {
		return nil, err
	}
	if old, _ := os.ReadFile(filepath.Join(venv, "grantwire.stamp")); string(old) != stamp {
		if err := run(py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-build-isolation", "--no-compile", "--force-reinstall", "."); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(venv, "grantwire.stamp"), []byte(stamp), 0o600); err != nil {
			return nil, err
		}
	}
	e := &pyenv{repo: repo, python: py, bin: filepath.Join(repo, "build", "python", "bin"), wheelhouse: filepath.Join(venv, "wheelhouse")}
	e.cli, e.authserver, e.browser = filepath.Join(e.bin, "grantwire"), filepath.Join(e.bin, "authserver"), filepath.Join(e.bin, "browser")
	gobuild := exec.CommandContext(ctx, "go", "build", "-o", e.bin+string(os.PathSeparator), "./cmd/grantwire", "./internal/cmd/authserver", "./internal/cmd/browser")
	gobuild.Dir = repo
	if b, err := gobuild.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, b)
	}
	return e, nil
}

// sourceStamp hashes what the installed package is built from.
func sourceStamp(repo string) (string, error) {
	h := sha256.New()
	files := []string{"pyproject.toml", "hatch_build.py", filepath.Join(repo, "policy", "policy.wasm"),
		filepath.Join(repo, "catalog", "catalog.json"), filepath.Join(repo, "catalog", "agents.json")}
	err := filepath.WalkDir("src", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".py") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pytestRun is the one pytest run of this package's tests: the junit report, what the
// corpus run wrote (report.json, queries.jsonl) and what the schemas validated, and the Go
// memory host's questions on the same corpus, recorded meanwhile.
type pytestRun struct {
	cases           []junitCase
	corpus          corpusReport
	run             *foreign.Run        // every query the Python driver asked in the corpus run, in order
	goAsked         map[string][]string // per scenario, the Go memory host's questions (canonical JSON)
	goElapsed       time.Duration
	seen            map[string]int
	summary, stdout string
	elapsed         time.Duration
}

type junitCase struct {
	Class   string `xml:"classname,attr"`
	Name    string `xml:"name,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// scenarioCase is a pytest case of one corpus scenario, reported by TestPythonConformance.
func (c junitCase) scenarioCase() bool {
	return c.Class == "tests.test_corpus" && strings.HasPrefix(c.Name, "test_scenario[")
}

var (
	pytestOnce  sync.Once
	pytestVal   *pytestRun
	pytestFatal string
)

func runPytest(t *testing.T) *pytestRun {
	t.Helper()
	e := setup(t)
	pytestOnce.Do(func() { pytestVal, pytestFatal = pytest(t, e) })
	if pytestVal == nil {
		t.Fatal(pytestFatal)
	}
	return pytestVal
}

func pytest(t *testing.T, e *pyenv) (*pytestRun, string) {
	r := &pytestRun{}
	// The Go memory host runs the same corpus meanwhile, recording its questions.
	var goErr error
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		start := time.Now()
		r.goAsked, goErr = goQuestions(t)
		r.goElapsed = time.Since(start)
	}()
	dir := t.TempDir()
	report, seen := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "seen.json")
	hub, stop, err := authserver.ServeWorlds() // the test worlds' control API: a world per scenario
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cmd := exec.Command(e.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=5", "--junitxml", report, "tests")
	cmd.Env = append(os.Environ(), "GRANTWIRE_REPO="+e.repo, "GRANTWIRE_AUTHSERVER="+e.authserver, "GRANTWIRE_CLI="+e.cli,
		"GRANTWIRE_STANDIN_BROWSER="+e.browser, "GRANTWIRE_AUTHSERVER_WORLDS="+hub, "GRANTWIRE_PY_CORPUS_OUT="+dir,
		"GRANTWIRE_PY_SEEN="+seen, "PYTHONDONTWRITEBYTECODE=1")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	t0 := time.Now()
	err = cmd.Run()
	r.elapsed = time.Since(t0)
	<-recorded
	if goErr != nil {
		return nil, goErr.Error()
	}
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
		return nil, fmt.Sprintf("pytest: %v\n%s", err, stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	r.summary, r.stdout = lines[len(lines)-1], stdout.String()
	var suites struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		return nil, fmt.Sprintf("pytest wrote no report: %v\n%s", err, stdout.String())
	}
	if err := xml.Unmarshal(raw, &suites); err != nil {
		return nil, err.Error()
	}
	for _, s := range suites.Suites {
		r.cases = append(r.cases, s.Cases...)
	}
	if b, err := os.ReadFile(seen); err == nil {
		_ = json.Unmarshal(b, &r.seen)
	}
	if msg := r.readCorpus(dir); msg != "" {
		return nil, msg + "\n" + stdout.String()
	}
	return r, ""
}

// TestPytest runs the Python shell's pytest suite (shells/python/tests) and reports each test
// as a subtest (the corpus's scenarios are TestPythonConformance's): the stored-JSON cases,
// operations on the private Secret Service, a temporary home and the local authorization
// server with every exchange validated against hostabi/schema, the Go CLI's errors and fixes
// for the same bad input, the GAIA-shaped API and every example of docs/python.md.
func TestPytest(t *testing.T) {
	r := runPytest(t)
	if len(r.cases) == 0 {
		t.Fatal("pytest ran no test")
	}
	for _, c := range r.cases {
		if c.scenarioCase() {
			continue
		}
		t.Run(strings.TrimPrefix(c.Class, "tests.")+"/"+c.Name, func(t *testing.T) {
			switch {
			case c.Failure != nil:
				t.Errorf("%s\n%s", c.Failure.Message, c.Failure.Text)
			case c.Error != nil:
				t.Errorf("%s\n%s", c.Error.Message, c.Error.Text)
			case c.Skipped != nil && strings.Contains(c.Skipped.Message, "GRANTWIRE_REAL_KEYRING=0"):
				t.Skip(c.Skipped.Message) // skipped on purpose
			case c.Skipped != nil:
				skipOrFail(t, "%s", c.Skipped.Message)
			}
		})
	}
	kinds := make([]string, 0, len(r.seen))
	for k, n := range r.seen {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("pytest: %s in %.1f s; validated against hostabi/schema on the real world: %s", r.summary, r.elapsed.Seconds(), strings.Join(kinds, ", "))
	if i := strings.Index(r.stdout, "slowest"); i >= 0 {
		t.Log(r.stdout[i:strings.LastIndex(r.stdout, "\n")])
	}
}

// pyRun runs Python code in the test environment, returning its standard output.
func pyRun(t *testing.T, e *pyenv, env []string, stdin string, code string) string {
	t.Helper()
	cmd := exec.Command(e.python, "-c", code)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return string(out)
}

var versionLine = regexp.MustCompile(`"(version|policy_sha256|policy_revision)":\s*"([^"]*)"`)

// fields picks version, policy_sha256 and policy_revision out of JSON.
func fields(b []byte) map[string]string {
	out := map[string]string{}
	for _, m := range versionLine.FindAllSubmatch(b, -1) {
		out[string(m[1])] = string(m[2])
	}
	return out
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
