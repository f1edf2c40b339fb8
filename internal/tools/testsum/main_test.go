package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// A module in a temporary directory named like grantwire's, so its conformance package's
// subtests count as corpus scenarios: passing, failing, skipped and subtests, a package
// that panics, one that does not build and one without tests.
var fixtureFiles = map[string]string{
	"go.mod": "module github.com/grantwire/grantwire\n\ngo 1.26\n",
	"conformance/c_test.go": `package conformance

import "testing"

func TestNativeMemhost(t *testing.T) {
	for _, id := range []string{"gate/granted", "gate/refused", "grants/one"} {
		t.Run(id, func(t *testing.T) {
			if id == "gate/refused" {
				t.Log("the decision was allow")
				t.Error("want deny")
			}
		})
	}
}

func TestWasmMemhost(t *testing.T) {
	for _, id := range []string{"gate/granted", "gate/refused", "grants/one"} {
		t.Run(id, func(t *testing.T) {})
	}
}

func TestSkipped(t *testing.T) { t.Skip("needs a Secret Service: make test") }

func TestPlain(t *testing.T) {
	t.Run("not-a-scenario", func(t *testing.T) {})
}
`,
	"ok/ok_test.go": `package ok

import "testing"

func TestOne(t *testing.T) {}
func TestTwo(t *testing.T) { t.Log("a line nobody needs to see") }
`,
	"panics/p_test.go": `package panics

import "testing"

func TestBefore(t *testing.T) {}
func TestPanics(t *testing.T) { t.Log("about to panic"); panic("boom: the world fell over") }
`,
	"broken/b_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { undefined() }\n",
	"notests/n.go":     "package notests\n",
}

func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, text := range fixtureFiles {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(text), 0o644))
	}
	return dir
}

func TestSummarizesARealGoTestRun(t *testing.T) {
	dir := fixture(t)
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	stream, err := cmd.Output()
	require.Error(t, err, "the fixture has failures")
	require.NotEmpty(t, stream)

	var out, raw bytes.Buffer
	sum, err := Run(bytes.NewReader(stream), &out, &raw, 3, 0)
	require.NoError(t, err)
	text := out.String()
	require.Equal(t, string(stream), raw.String(), "-json-out gets the stream as it came")

	require.True(t, sum.Failed())
	// TestNativeMemhost, TestWasmMemhost, TestSkipped, TestPlain, TestOne, TestTwo, TestBefore, TestPanics.
	require.Equal(t, Counts{Passed: 5, Failed: 2, Skipped: 1}, sum.Top, text)
	require.Equal(t, Counts{Passed: 6, Failed: 1}, sum.Sub, text)
	require.ElementsMatch(t, []string{Module + "/panics"}, shortless(sum.FailedPkgs, "conformance"))
	require.Equal(t, []string{Module + "/broken"}, sum.BuildFailed)
	require.Equal(t, "corpus scenarios passed: memory host 5/6 (3 scenarios × 2 runs)", sum.CorpusLine())
	require.Equal(t, "Go tests 5 passed, 2 failed, 1 skipped (and subtests 6 passed, 1 failed, 0 skipped) in 5 packages; 3 packages FAILED; 1 builds FAILED", sum.Line())

	// A line per package, with its counts.
	require.Regexp(t, `(?m)^ok   ok\s+2 passed\s+0 failed\s+0 skipped \(\+0 subtests\)\s+[0-9.]+ s$`, text)
	require.Regexp(t, `(?m)^FAIL conformance\s+2 passed\s+1 failed\s+1 skipped \(\+7 subtests\)`, text)
	// A failing test's whole output, and a panic's.
	require.Contains(t, text, "--- FAIL conformance TestNativeMemhost/gate/refused")
	require.Contains(t, text, "the decision was allow")
	require.Contains(t, text, "want deny")
	require.Contains(t, text, "about to panic")
	require.Contains(t, text, "panic: boom: the world fell over")
	// A build error names the file and the error.
	require.Contains(t, text, "BUILD FAIL broken")
	require.Regexp(t, `b_test.go:5:\d+: undefined: undefined`, text)
	// A passing test's log is not printed; a skipped test's reason is.
	require.NotContains(t, text, "a line nobody needs to see")
	require.Contains(t, text, "  conformance TestSkipped: c_test.go:")
	require.Contains(t, text, "needs a Secret Service: make test")
	require.Contains(t, text, "slowest tests:\n")
	require.Len(t, regexp.MustCompile(`(?m)^ +[0-9.]+ s  `).FindAllString(text, -1), 3, "-slowest 3")
}

func shortless(pkgs []string, drop string) []string {
	var out []string
	for _, p := range pkgs {
		if p != Module+"/"+drop && p != Module+"/broken" {
			out = append(out, p)
		}
	}
	return out
}

func TestAStreamCutShortFailsAndShowsWhatRan(t *testing.T) {
	stream := `{"Action":"start","Package":"github.com/grantwire/grantwire/slow"}
{"Action":"run","Package":"github.com/grantwire/grantwire/slow","Test":"TestForever"}
{"Action":"output","Package":"github.com/grantwire/grantwire/slow","Test":"TestForever","Output":"step 1 of many\n"}
`
	var out bytes.Buffer
	sum, err := Run(strings.NewReader(stream), &out, nil, 0, 0)
	require.NoError(t, err)
	require.True(t, sum.Failed())
	require.Contains(t, out.String(), "FAIL slow: never ended")
	require.Contains(t, out.String(), "--- DID NOT END slow TestForever, its output:\nstep 1 of many\n")
}

func TestHeartbeatNamesThePackagesStillRunning(t *testing.T) {
	r, w := io.Pipe()
	var out testenv.Buffer
	done := make(chan *Summary)
	go func() {
		sum, _ := Run(r, &out, nil, 0, 20*time.Millisecond)
		done <- sum
	}()
	w.Write([]byte(`{"Action":"start","Package":"github.com/grantwire/grantwire/engines"}` + "\n"))
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "… still running: engines (") }, 5*time.Second, 10*time.Millisecond)
	w.Write([]byte(`{"Action":"pass","Package":"github.com/grantwire/grantwire/engines","Elapsed":1}` + "\n"))
	w.Close()
	sum := <-done
	require.False(t, sum.Failed())
	require.Equal(t, 1, sum.Packages)
}

// Every corpus run testsum counts is a test that exists, in the package named.
func TestCorporaNameRealTests(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	shells := map[string]bool{}
	for _, c := range Corpora {
		shells[c.Shell] = true
		files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(c.Package), "*_test.go"))
		require.NoError(t, err)
		var src strings.Builder
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			src.Write(b)
		}
		top, sub, _ := strings.Cut(c.Test, "/")
		require.Contains(t, src.String(), "func "+top+"(t *testing.T)", "%s has no %s", c.Package, top)
		if sub != "" {
			require.Contains(t, src.String(), `t.Run("`+sub+`"`, "%s %s has no subtest %s", c.Package, top, sub)
		}
		body := src.String()[strings.Index(src.String(), "func "+top+"(t *testing.T)"):]
		body = body[:strings.Index(body, "\n}\n")]
		require.Regexp(t, `conformance\.Run\(|foreign\.Conformance\(`, body, "%s %s runs the corpus", c.Package, top)
	}
	require.Len(t, shells, 5, "memory host, OS, Node, Python, PostgreSQL")
}
