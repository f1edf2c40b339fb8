// Command testsum reads `go test -json` on its standard input and says, while the tests
// run, what they did: a line per package as it ends (passed, failed and skipped tests and
// its time), the full output of every failing test and of every package that failed
// outside a test (a build error, a panic, a timeout), a line every -heartbeat naming the
// packages still running when none ended, and at the end a summary: the Go tests passed,
// failed and skipped, the conformance corpus's scenarios per shell, the skipped tests and
// why, and the slowest tests. It exits 1 when anything failed. scripts/test.sh (make test)
// pipes every go test stage through it.
//
// Usage: go test -json ./... | go run ./internal/tools/testsum [-stage NAME] [-summary FILE] [-json-out FILE] [-slowest N] [-heartbeat D]
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Module is the import path prefix trimmed from package names in what testsum prints.
const Module = "github.com/grantwire/grantwire"

// Corpus is a run of the conformance corpus: the subtests of Test in Package named
// <family>/<scenario> (conformance.RunCorpus and foreign.Conformance name them so) are
// scenarios run on Shell.
type Corpus struct {
	Shell   string
	Package string // relative to Module
	Test    string // the test, or test/subtest, whose children are the scenarios
}

// Corpora are every corpus run of make test, by shell (TestCorporaNameRealTests keeps the
// list true to the tests).
var Corpora = []Corpus{
	{"memory host", "conformance", "TestNativeMemhost"},
	{"memory host", "conformance", "TestWasmMemhost"},
	{"memory host", "conformance", "TestRegoMemhost"},
	{"memory host", "conformance", "TestWasmResidentFacts"},
	{"memory host", "hostabi", "TestSchemasAgainstTheCorpus/corpus"},
	{"OS", "internal/testworld/nativeshell", "TestNativeNative"},
	{"OS", "internal/testworld/nativeshell", "TestWasmNative"},
	{"OS", "internal/testworld/nativeshell", "TestRegoNative"},
	{"Node", "shells/wasm/node", "TestNodeConformance"},
	{"Python", "shells/python", "TestPythonConformance"},
	{"PostgreSQL", "shells/postgres", "TestCorpusOnPostgres"},
}

// Event is one line of `go test -json` (go doc test2json).
type Event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output and build-fail events
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

// Counts are tests by outcome.
type Counts struct{ Passed, Failed, Skipped int }

func (c *Counts) add(action string) {
	switch action {
	case "pass":
		c.Passed++
	case "fail":
		c.Failed++
	case "skip":
		c.Skipped++
	}
}

func (c Counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
}

type test struct {
	pkg, name string
	elapsed   float64
	reason    string // a skip's message
}

type pkgState struct {
	start   time.Time
	top     Counts
	sub     Counts
	output  []string            // package-level output (not a test's)
	running map[string][]string // test → its output so far
	ended   bool
}

// Summary is what a whole run did.
type Summary struct {
	Top, Sub    Counts
	Packages    int
	FailedPkgs  []string
	Corpus      map[string]*CorpusCount
	Skipped     []test
	Slowest     []test
	BuildFailed []string
}

// CorpusCount is the scenarios run on a shell.
type CorpusCount struct {
	Counts
	Runs      int // corpus runs (engines) that ran at least one scenario
	Scenarios map[string]bool
}

type summarizer struct {
	out     io.Writer
	pkgs    map[string]*pkgState
	order   []string
	builds  map[string][]string // import path → build output
	sum     Summary
	runs    map[string]bool // corpus run key → it ran a scenario
	lastEnd time.Time
}

func newSummarizer(out io.Writer) *summarizer {
	return &summarizer{out: out, pkgs: map[string]*pkgState{}, builds: map[string][]string{}, runs: map[string]bool{},
		sum: Summary{Corpus: map[string]*CorpusCount{}}, lastEnd: time.Now()}
}

func short(pkg string) string {
	if pkg == Module {
		return "."
	}
	return strings.TrimPrefix(pkg, Module+"/")
}

func (s *summarizer) pkg(name string) *pkgState {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgState{start: time.Now(), running: map[string][]string{}}
		s.pkgs[name] = p
		s.order = append(s.order, name)
	}
	return p
}

// scenario says which shell's corpus run the test is a scenario of, if any.
func scenario(pkg, name string) (Corpus, string, bool) {
	for _, c := range Corpora {
		if short(pkg) != c.Package || !strings.HasPrefix(name, c.Test+"/") {
			continue
		}
		id := strings.TrimPrefix(name, c.Test+"/")
		if strings.Count(id, "/") == 1 {
			return c, id, true
		}
	}
	return Corpus{}, "", false
}

func (s *summarizer) event(e Event) {
	switch e.Action {
	case "build-output":
		s.builds[e.ImportPath] = append(s.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		name, _, _ := strings.Cut(e.ImportPath, " ") // "pkg [pkg.test]": the package's test build
		s.sum.BuildFailed = append(s.sum.BuildFailed, name)
		fmt.Fprintf(s.out, "BUILD FAIL %s\n%s", short(name), strings.Join(s.builds[e.ImportPath], ""))
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.output = append(p.output, e.Output)
		case "pass", "fail", "skip":
			s.endPackage(e, p)
		}
		return
	}
	switch e.Action {
	case "run":
		p.running[e.Test] = nil
	case "output":
		p.running[e.Test] = append(p.running[e.Test], e.Output)
	case "pass", "fail", "skip":
		out := p.running[e.Test]
		delete(p.running, e.Test)
		top := !strings.Contains(e.Test, "/")
		if top {
			p.top.add(e.Action)
			s.sum.Top.add(e.Action)
			s.sum.Slowest = append(s.sum.Slowest, test{pkg: e.Package, name: e.Test, elapsed: e.Elapsed})
		} else {
			p.sub.add(e.Action)
			s.sum.Sub.add(e.Action)
		}
		if c, id, ok := scenario(e.Package, e.Test); ok {
			cc := s.sum.Corpus[c.Shell]
			if cc == nil {
				cc = &CorpusCount{Scenarios: map[string]bool{}}
				s.sum.Corpus[c.Shell] = cc
			}
			cc.add(e.Action)
			cc.Scenarios[id] = true
			if key := c.Package + " " + c.Test; !s.runs[key] {
				s.runs[key] = true
				cc.Runs++
			}
		}
		switch e.Action {
		case "fail":
			fmt.Fprintf(s.out, "--- FAIL %s %s (%.2f s), its output:\n%s", short(e.Package), e.Test, e.Elapsed, strings.Join(out, ""))
		case "skip":
			if top {
				s.sum.Skipped = append(s.sum.Skipped, test{pkg: e.Package, name: e.Test, reason: skipReason(out)})
			}
		}
	}
}

// skipReason is the message a skipped test logged (the lines after "--- SKIP").
func skipReason(out []string) string {
	var lines []string
	for _, l := range out {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		lines = append(lines, t)
	}
	return strings.Join(lines, " ")
}

func (s *summarizer) endPackage(e Event, p *pkgState) {
	if p.ended {
		return
	}
	p.ended = true
	s.sum.Packages++
	s.lastEnd = time.Now()
	status := "ok  "
	if e.Action == "fail" {
		status = "FAIL"
		s.sum.FailedPkgs = append(s.sum.FailedPkgs, e.Package)
	}
	if e.Action == "skip" {
		return // no test files: not worth a line
	}
	fmt.Fprintf(s.out, "%s %-42s %4d passed %3d failed %3d skipped (+%d subtests) %7.1f s\n", status, short(e.Package),
		p.top.Passed, p.top.Failed, p.top.Skipped, p.sub.Passed+p.sub.Failed+p.sub.Skipped, e.Elapsed)
	if e.Action == "fail" {
		// A failure outside a test (a panic, a timeout, a TestMain that exited), and tests
		// that never ended: their output too, in full.
		for name, out := range p.running {
			fmt.Fprintf(s.out, "--- DID NOT END %s %s, its output:\n%s", short(e.Package), name, strings.Join(out, ""))
		}
		if p.top.Failed == 0 || len(p.running) > 0 {
			fmt.Fprintf(s.out, "--- %s output:\n%s", short(e.Package), strings.Join(p.output, ""))
		}
	}
	p.running = nil
	p.output = nil
}

func (s *summarizer) heartbeat(now time.Time) {
	var names []string
	for _, n := range s.order {
		if p := s.pkgs[n]; !p.ended {
			names = append(names, fmt.Sprintf("%s (%s)", short(n), now.Sub(p.start).Round(time.Second)))
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(s.out, "… still running: %s\n", strings.Join(names, ", "))
	}
}

// Failed says whether anything failed.
func (s *Summary) Failed() bool {
	return s.Top.Failed+s.Sub.Failed > 0 || len(s.FailedPkgs) > 0 || len(s.BuildFailed) > 0
}

// Line is the one-line result of the stage.
func (s *Summary) Line() string {
	line := fmt.Sprintf("Go tests %s (and subtests %s) in %d packages", s.Top, s.Sub, s.Packages)
	if len(s.FailedPkgs) > 0 {
		line += fmt.Sprintf("; %d packages FAILED", len(s.FailedPkgs))
	}
	if len(s.BuildFailed) > 0 {
		line += fmt.Sprintf("; %d builds FAILED", len(s.BuildFailed))
	}
	return line
}

// CorpusLine is the scenarios run per shell, in the order of Corpora ("" when none ran).
func (s *Summary) CorpusLine() string {
	var parts []string
	seen := map[string]bool{}
	for _, c := range Corpora {
		cc := s.Corpus[c.Shell]
		if seen[c.Shell] || cc == nil {
			continue
		}
		seen[c.Shell] = true
		part := fmt.Sprintf("%s %d/%d", c.Shell, cc.Passed, cc.Passed+cc.Failed+cc.Skipped)
		if cc.Runs > 1 {
			part += fmt.Sprintf(" (%d scenarios × %d runs)", len(cc.Scenarios), cc.Runs)
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "corpus scenarios passed: " + strings.Join(parts, ", ")
}

func (s *summarizer) finish(slowest int) {
	sum := &s.sum
	// Packages that started and never ended (go test was killed, or the stream was cut).
	for _, n := range s.order {
		if p := s.pkgs[n]; !p.ended {
			sum.FailedPkgs = append(sum.FailedPkgs, n)
			fmt.Fprintf(s.out, "FAIL %s: never ended (the go test -json stream stopped)\n", short(n))
			for name, out := range p.running {
				fmt.Fprintf(s.out, "--- DID NOT END %s %s, its output:\n%s", short(n), name, strings.Join(out, ""))
			}
			fmt.Fprintf(s.out, "--- %s output:\n%s", short(n), strings.Join(p.output, ""))
		}
	}
	if len(sum.Skipped) > 0 {
		fmt.Fprintf(s.out, "skipped (%d):\n", len(sum.Skipped))
		for _, t := range sum.Skipped {
			fmt.Fprintf(s.out, "  %s %s: %s\n", short(t.pkg), t.name, t.reason)
		}
	}
	sort.SliceStable(sum.Slowest, func(i, j int) bool { return sum.Slowest[i].elapsed > sum.Slowest[j].elapsed })
	if len(sum.Slowest) > slowest {
		sum.Slowest = sum.Slowest[:slowest]
	}
	if slowest > 0 && len(sum.Slowest) > 0 {
		fmt.Fprintf(s.out, "slowest tests:\n")
		for _, t := range sum.Slowest {
			fmt.Fprintf(s.out, "  %7.1f s  %s %s\n", t.elapsed, short(t.pkg), t.name)
		}
	}
	if len(sum.FailedPkgs) > 0 {
		var names []string
		for _, n := range sum.FailedPkgs {
			names = append(names, short(n))
		}
		fmt.Fprintf(s.out, "failed packages: %s\n", strings.Join(names, " "))
	}
	fmt.Fprintln(s.out, sum.Line())
	if l := sum.CorpusLine(); l != "" {
		fmt.Fprintln(s.out, l)
	}
}

// Run summarizes the stream in, writing to out; raw, when not nil, gets a copy of in.
func Run(in io.Reader, out io.Writer, raw io.Writer, slowest int, heartbeat time.Duration) (*Summary, error) {
	s := newSummarizer(out)
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		errc <- sc.Err()
		close(lines)
	}()
	var tick <-chan time.Time
	if heartbeat > 0 {
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case now := <-tick:
			if now.Sub(s.lastEnd) >= heartbeat {
				s.heartbeat(now)
			}
		case b, ok := <-lines:
			if !ok {
				s.finish(slowest)
				return &s.sum, <-errc
			}
			if raw != nil {
				raw.Write(append(b, '\n'))
			}
			var e Event
			if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
				// Not an event: go test's own words (a build error of a package without
				// tests, "no Go files"), passed through.
				fmt.Fprintf(out, "%s\n", b)
				continue
			}
			s.event(e)
		}
	}
}

func main() {
	stage := flag.String("stage", "go test", "the stage's name in the summary file")
	summary := flag.String("summary", "", "append the stage's summary line to FILE")
	jsonOut := flag.String("json-out", "", "also write the go test -json stream to FILE")
	slowest := flag.Int("slowest", 15, "list the N slowest tests at the end")
	heartbeat := flag.Duration("heartbeat", time.Minute, "when no package ended for this long, name the ones still running")
	flag.Parse()
	var raw io.Writer
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(2)
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		raw = w
	}
	sum, err := Run(os.Stdin, os.Stdout, raw, *slowest, *heartbeat)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum: reading go test -json:", err)
		os.Exit(2)
	}
	if *summary != "" {
		line := sum.Line()
		if l := sum.CorpusLine(); l != "" {
			line += "; " + l
		}
		f, err := os.OpenFile(*summary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "%s\t%s\n", *stage, line)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(2)
		}
	}
	if sum.Failed() {
		os.Exit(1)
	}
}
