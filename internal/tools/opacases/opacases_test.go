package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/test/cases"

	"github.com/grantwire/grantwire/internal/caseproto"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// shareOfCases is the percentage of OPA's cases `make test` runs (TestOPACases), chosen by
// shareSeed; OPACASES=all or GRANTWIRE_SOAK=1 runs them all (`make opa-cases` and
// `make soak` run them all too).
const (
	shareOfCases = 25
	shareSeed    = 24
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("OPACASES_FAKE_RUNNER"); mode != "" {
		fakeRunner(mode)
		return
	}
	os.Exit(m.Run())
}

// TestOPACases runs a fixed, seeded share of OPA's test cases on the native engine, as
// `make opa-cases` runs them all: every case in reach must pass, every exception must
// still be needed.
func TestOPACases(t *testing.T) {
	c := &config{share: shareOfCases, seed: shareSeed, logf: t.Logf}
	if os.Getenv("OPACASES") == "all" || testenv.Soak() { // make soak runs them all too
		c.share = 100
	}
	var out strings.Builder
	s, err := run(c, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range s.outcomes {
		if o.status == failed {
			t.Errorf("%s: %s", o.tc.ID, o.why)
		}
	}
	if s.passed < 100 {
		t.Errorf("only %d cases passed: the share ran too little", s.passed)
	}
	t.Logf("%d passed, %d failed, %d out of reach, %d excepted; %v", s.passed, s.failed, s.outOfReach, s.excepted, s.elapsed)
}

// synthetic makes a case of one module whose rule p the query reads.
func synthetic(note, module string, want any) *testCase {
	w := []map[string]any{{"x": want}}
	return &testCase{
		TestCase: cases.TestCase{Note: note, Query: "data.t.p = x", Modules: []string{"package t\n\n" + module}, WantResult: &w},
		ID:       note, Family: "synthetic", File: "synthetic.yaml",
	}
}

// TestBounds: a case that loops past its deadline, or allocates past the memory bound,
// fails with a message saying so, and the cases after it still run.
func TestBounds(t *testing.T) {
	allocates := synthetic("allocates", "p := count(numbers.range(1, 1000000000))", 0)
	allocates.timeout = 2 * time.Minute // it meets the memory bound first, however slow the machine
	c := &config{
		timeout: time.Second, memoryMB: 64, logf: t.Logf,
		cases: []*testCase{
			// a set of one member, so that it loops without growing: it meets the deadline,
			// not the memory bound, however fast the machine (a list of 10^9 members met the
			// memory bound first on an idle machine)
			synthetic("loops", "p := count({1 | some a in numbers.range(1, 1000); some b in numbers.range(1, 1000); some c in numbers.range(1, 1000)})", 0),
			allocates,
			synthetic("after them", "p := count([1, 2, 3])", 3),
		},
	}
	var out strings.Builder
	s, err := run(c, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"loops": "did not finish within 1s", "allocates": "allocated more than the bound of 64 MiB", "after them": ""}
	for _, o := range s.outcomes {
		w := want[o.tc.ID]
		switch {
		case w == "" && o.status != passed:
			t.Errorf("%s: %v %s, want it passed", o.tc.ID, o.status, o.why)
		case w != "" && (o.status != failed || !strings.Contains(o.why, w)):
			t.Errorf("%s: %v %q, want a failure saying %q", o.tc.ID, o.status, o.why, w)
		}
	}
	if !strings.HasSuffix(out.String(), "1 passed, 2 failed\n") {
		t.Errorf("the report ends %q", lastLines(out.String(), 2))
	}
}

// fakeRunner is the test binary acting as a runner whose cases crash it ("crash": a
// panic on another goroutine, which no recover catches) or hang without checking their
// deadline ("hang").
func fakeRunner(string) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var j caseproto.Job
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			os.Exit(1)
		}
		switch j.Key {
		case "crash":
			done := make(chan bool)
			go func() { panic("the runtime broke") }()
			<-done
		case "hang":
			// Asleep, not deadlocked: a bare select{} with no other goroutine is a fatal
			// "all goroutines are asleep" crash, which the test would see instead of a hang.
			time.Sleep(time.Hour)
		}
		b, _ := json.Marshal(caseproto.Reply{Key: j.Key, Result: json.RawMessage(`[]`)})
		fmt.Println(string(b))
	}
}

// TestRunnerSurvives: a job that crashes the runner, or hangs past its deadline, fails
// with what happened, and the next job runs on a new runner.
func TestRunnerSurvives(t *testing.T) {
	s := &session{bin: os.Args[0], env: []string{"OPACASES_FAKE_RUNNER=1"}, grace: 200 * time.Millisecond}
	defer s.stop()
	for _, c := range []struct{ key, want string }{
		{"ok", ""},
		{"crash", "crashed the runner (exit status 2): panic: the runtime broke"},
		{"ok", ""},
		{"hang", "did not finish within 300ms, and did not check its deadline: the runner was stopped"},
		{"ok", ""},
	} {
		r, err := s.do(&caseproto.Job{Key: c.key, TimeoutMS: 100})
		switch {
		case c.want == "" && (err != nil || r.Key != c.key):
			t.Errorf("%s: %v %v", c.key, r, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.key, err, c.want)
		}
	}
}

// TestExceptions: an exception turns a failure into an excepted case; one on a case that
// passes or is out of reach fails; the file names only existing cases, each with a reason.
func TestExceptions(t *testing.T) {
	exc := exceptions{"a": "known"}
	for _, c := range []struct {
		in, want status
		why      string
	}{
		{failed, excepted, "known (fails with: boom)"},
		{passed, failed, "passes, yet " + exceptionsFile + " excepts it: remove its exception"},
		{outOfReach, failed, "out of reach (needs x.y)"},
	} {
		o := &outcome{tc: &testCase{ID: "a"}, status: c.in, why: "boom", missing: []string{"x.y"}}
		applyException(o, exc)
		if o.status != c.want || !strings.HasPrefix(o.why, c.why) {
			t.Errorf("%v with an exception: %v %q, want %v %q", c.in, o.status, o.why, c.want, c.why)
		}
	}
	all := []*testCase{{ID: "a"}}
	dir := t.TempDir()
	for body, want := range map[string]string{
		`{"a": "known"}`:              "",
		`{"b": "gone"}`:               "names cases OPA's testdata does not have (remove them): b",
		`{"a": "  "}`:                 `the exception of "a" gives no reason`,
		"# comment\n\"a\": \"why\"\n": "",
	} {
		p := filepath.Join(dir, "exceptions.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadExceptions(p, all)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
