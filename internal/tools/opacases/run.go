package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/open-policy-agent/opa/v1/util"

	"github.com/grantwire/grantwire/internal/caseproto"
	"github.com/grantwire/grantwire/internal/nativegen"
)

const (
	defaultTimeout = 10 * time.Second
	exceptionsFile = "internal/tools/opacases/exceptions.yaml"
	runtimeDir     = "core/nativeengine/internal/rt"
)

type config struct {
	run      string
	share    int
	seed     uint64
	verbose  bool
	keep     string
	timeout  time.Duration
	memoryMB int // the runner's heap bound per case (0: caseproto.DefaultMemoryMB)
	bench    int
	logf     func(string, ...any) // progress (stderr when nil)
	cases    []*testCase          // these cases instead of OPA's (and no exceptions)
}

type status int

const (
	passed status = iota
	failed
	outOfReach
	excepted
)

func (s status) String() string {
	return [...]string{"passed", "failed", "out of reach", "excepted"}[s]
}

// outcome is what became of a case.
type outcome struct {
	tc      *testCase
	status  status
	why     string   // a failure's reason, an exception's reason
	missing []string // out of reach: the built-in functions the runtime lacks
	key     string
	job     *caseproto.Job
	exp     *expectation
}

type summary struct {
	passed, failed, outOfReach, excepted int
	outcomes                             []*outcome
	elapsed                              map[string]time.Duration
}

// selected reports whether a case is in the seeded share.
func selected(id string, seed uint64, share int) bool {
	if share >= 100 {
		return true
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", seed, id)
	return h.Sum64()%100 < uint64(share)
}

func run(c *config, w io.Writer) (*summary, error) {
	logf := c.logf
	if logf == nil {
		logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, "opacases: "+f+"\n", a...) }
	}
	if c.timeout <= 0 {
		c.timeout = defaultTimeout
	}
	if c.share <= 0 {
		c.share = 100
	}
	ctx := context.Background()
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	elapsed := map[string]time.Duration{}
	all, exc := c.cases, exceptions{}
	if all == nil {
		if all, err = loadCases(); err != nil {
			return nil, err
		}
		if exc, err = loadExceptions(filepath.Join(root, exceptionsFile), all); err != nil {
			return nil, err
		}
	}
	var re *regexp.Regexp
	if c.run != "" {
		if re, err = regexp.Compile(c.run); err != nil {
			return nil, err
		}
	}
	var picked []*outcome
	for i, tc := range all {
		if re != nil && !re.MatchString(tc.ID) && !re.MatchString(tc.File) {
			continue
		}
		if !selected(tc.ID, c.seed, c.share) {
			continue
		}
		picked = append(picked, &outcome{tc: tc, key: fmt.Sprintf("c%d", i)})
	}
	if len(picked) == 0 {
		return nil, fmt.Errorf("no case selected")
	}
	elapsed["load"] = time.Since(t0)
	logf("%d of %d cases selected", len(picked), len(all))

	// Plan with OPA, compile with nativegen, read the expectations: on every core.
	t0 = time.Now()
	builtins, err := nativegen.ScanBuiltins(filepath.Join(root, runtimeDir))
	if err != nil {
		return nil, err
	}
	gens := make([]*generated, len(picked))
	exps := make([]*expectation, len(picked))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o := picked[i]
				gens[i], exps[i] = prepare(ctx, o, fmt.Sprintf("s%03d", i/casesPerPkg), builtins, c)
				o.exp = exps[i]
			}
		}()
	}
	for i := range picked {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed["plan and generate"] = time.Since(t0)

	var inReach []*generated
	for _, g := range gens {
		if g != nil {
			inReach = append(inReach, g)
		}
	}
	t0 = time.Now()
	var sess *session
	if len(inReach) > 0 {
		dir := c.keep
		if dir == "" {
			if dir, err = os.MkdirTemp("", "opacases-"); err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
		}
		r, broken, err := buildRunner(root, dir, inReach, logf)
		if err != nil {
			return nil, err
		}
		elapsed["build"] = time.Since(t0)
		t0 = time.Now()
		s := &session{bin: r.bin, grace: 10 * time.Second}
		for i, o := range picked {
			if o.status != passed || o.job == nil {
				continue
			}
			if why, ok := broken[o.tc]; ok {
				o.status, o.why = failed, why
				continue
			}
			reply, err := s.do(o.job)
			if err != nil {
				o.status, o.why = failed, err.Error()
				continue
			}
			if why := exps[i].check(o.tc, reply); why != "" {
				o.status, o.why = failed, why
			}
		}
		elapsed["run"] = time.Since(t0)
		defer s.stop()
		sess = s
	}

	sum := &summary{outcomes: picked, elapsed: elapsed}
	for _, o := range picked {
		applyException(o, exc)
		switch o.status {
		case passed:
			sum.passed++
		case failed:
			sum.failed++
		case outOfReach:
			sum.outOfReach++
		case excepted:
			sum.excepted++
		}
	}
	report(w, sum, c.verbose)
	if c.bench > 0 && sess != nil {
		if err := benchmark(ctx, w, c, sess, picked); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// prepare plans a case, compiles it and reads its expectation; a case out of reach or
// failed already gets its status here.
func prepare(ctx context.Context, o *outcome, pkg string, builtins map[string]nativegen.Builtin, c *config) (*generated, *expectation) {
	raw, err := plan(ctx, o.tc)
	if err != nil {
		o.status, o.why = failed, "OPA could not plan it: "+err.Error()
		return nil, nil
	}
	g, missing, err := compile(o.tc, o.key, pkg, raw, builtins)
	switch {
	case err != nil:
		o.status, o.why = failed, "nativegen refused it: "+err.Error()
		return nil, nil
	case len(missing) > 0:
		o.status, o.missing = outOfReach, missing
		return nil, nil
	}
	e, err := expect(ctx, o.tc)
	if err != nil {
		o.status, o.why = failed, err.Error()
		return nil, nil
	}
	in, tagged, err := inputJSON(o.tc)
	if err != nil {
		o.status, o.why = failed, err.Error()
		return nil, nil
	}
	o.job = &caseproto.Job{
		Key: o.key, Input: in, Tagged: tagged, NowNS: time.Now().UnixNano(),
		TimeoutMS: int(cmp.Or(o.tc.timeout, c.timeout).Milliseconds()), MemoryMB: c.memoryMB,
	}
	if o.tc.Data != nil {
		if o.job.Data, err = jsonOf(*o.tc.Data); err != nil {
			o.status, o.why = failed, "data: "+err.Error()
			return nil, nil
		}
	}
	return g, e
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }

// exceptions are the known differences: case id → reason.
type exceptions map[string]string

func loadExceptions(path string, all []*testCase) (exceptions, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	exc := exceptions{}
	if err := util.Unmarshal(raw, &exc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ids := map[string]bool{}
	for _, tc := range all {
		ids[tc.ID] = true
	}
	var unknown []string
	for id, reason := range exc {
		if !ids[id] {
			unknown = append(unknown, id)
		}
		if strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s: the exception of %q gives no reason", path, id)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s names cases OPA's testdata does not have (remove them): %s", path, strings.Join(unknown, "; "))
	}
	return exc, nil
}

// applyException turns a failed case with an exception into an excepted one; an excepted
// case that passes, or is out of reach, fails.
func applyException(o *outcome, exc exceptions) {
	reason, ok := exc[o.tc.ID]
	if !ok {
		return
	}
	switch o.status {
	case failed:
		o.status, o.why = excepted, reason+" (fails with: "+firstLine(o.why)+")"
	case passed:
		o.status, o.why = failed, "passes, yet "+exceptionsFile+" excepts it: remove its exception"
	case outOfReach:
		o.status, o.why = failed, "out of reach (needs "+strings.Join(o.missing, ", ")+"), yet "+exceptionsFile+" excepts it: remove its exception"
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// report writes the failures, a table per family, and the summary line last.
func report(w io.Writer, s *summary, verbose bool) {
	for _, o := range s.outcomes {
		switch {
		case o.status == failed:
			fmt.Fprintf(w, "FAIL %s (%s): %s\n", o.tc.ID, o.tc.File, o.why)
		case verbose && o.status == excepted:
			fmt.Fprintf(w, "EXCEPTED %s: %s\n", o.tc.ID, o.why)
		case verbose && o.status == passed:
			fmt.Fprintf(w, "ok %s\n", o.tc.ID)
		}
	}
	type row struct {
		passed, failed, outOfReach, excepted int
		missing                              []string
	}
	rows := map[string]*row{}
	var fams []string
	for _, o := range s.outcomes {
		r := rows[o.tc.Family]
		if r == nil {
			r = &row{}
			rows[o.tc.Family] = r
			fams = append(fams, o.tc.Family)
		}
		switch o.status {
		case passed:
			r.passed++
		case failed:
			r.failed++
		case outOfReach:
			r.outOfReach++
			for _, m := range o.missing {
				if !slices.Contains(r.missing, m) {
					r.missing = append(r.missing, m)
				}
			}
		case excepted:
			r.excepted++
		}
	}
	sort.Strings(fams)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tpassed\tfailed\tout of reach\texcepted\tbuilt-in functions out of reach")
	for _, f := range fams {
		r := rows[f]
		sort.Strings(r.missing)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", f, r.passed, r.failed, r.outOfReach, r.excepted, strings.Join(r.missing, ", "))
	}
	fmt.Fprintf(tw, "all %d families\t%d\t%d\t%d\t%d\t\n", len(fams), s.passed, s.failed, s.outOfReach, s.excepted)
	tw.Flush()
	fmt.Fprintf(w, "%d passed, %d failed\n", s.passed, s.failed)
}
