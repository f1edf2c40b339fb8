// Package caserun is the runner of OPA's test cases on the native engine's runtime: the
// process internal/tools/opacases builds from the cases' plans (compiled to Go by
// internal/nativegen, one package holding many cases) and talks to through its standard
// input and output. It owns what one evaluation of a case needs beside the generated
// code: the case's data and input as the runtime's values (sets too), its evaluation
// under a deadline, a memory bound and a recovered panic, its result set as canonical
// JSON, and timing for the benchmarks.
//
// A case that runs past its deadline fails with a message saying so; one that allocates
// past the bound ends the process with a message naming the case (the harness starts a
// new runner for the next cases, as it does when a case crashes the process); a panic of
// the runtime is a failed case, not a crash. Like the runtime, it links no OPA package.
package caserun

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
	"github.com/grantwire/grantwire/internal/caseproto"
)

// Plan is a generated entrypoint: it returns the result set.
type Plan = func(*rt.Eval, *rt.V, *rt.V) *rt.V

type compiled struct {
	plans map[string]Plan
	funcs int
}

var registry = map[string]compiled{}

// Register records the generated code of a case under key (generated init functions call it).
func Register(key string, plans map[string]Plan, funcs int) {
	if _, dup := registry[key]; dup {
		panic("caserun: case " + key + " registered twice")
	}
	registry[key] = compiled{plans: plans, funcs: funcs}
}

// Job and Reply are the protocol's.
type (
	Job   = caseproto.Job
	Reply = caseproto.Reply
)

// outMu orders the replies: serve's, and the memory watchdog's last one.
var outMu sync.Mutex

// Main serves jobs, one JSON line each on standard input, one reply line each on standard
// output, until its input ends.
func Main() {
	debug.SetMaxStack(256 << 20) // a runaway recursion fails fast (a fatal error the harness reports)
	out := bufio.NewWriter(os.Stdout)
	var current atomic.Pointer[Job]
	go watchMemory(&current, os.Stdout)
	if err := serve(os.Stdin, out, &current); err != nil {
		fmt.Fprintln(os.Stderr, "caserun:", err)
		os.Exit(1)
	}
}

func serve(in io.Reader, out *bufio.Writer, current *atomic.Pointer[Job]) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for sc.Scan() {
		var j Job
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return fmt.Errorf("a job that is not JSON: %w", err)
		}
		current.Store(&j)
		r := Run(&j)
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		outMu.Lock()
		current.Store(nil)
		out.Write(b)
		out.WriteByte('\n')
		err = out.Flush()
		outMu.Unlock()
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// watchMemory ends the runner when the heap exceeds the bound of the job it runs, naming
// the job (its last reply).
func watchMemory(current *atomic.Pointer[Job], w io.Writer) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for range time.Tick(5 * time.Millisecond) {
		j := current.Load()
		if j == nil {
			continue
		}
		limit := uint64(cmp.Or(j.MemoryMB, caseproto.DefaultMemoryMB)) << 20
		if metrics.Read(sample); sample[0].Value.Uint64() < limit {
			continue
		}
		runtime.GC() // what is live, not what is garbage
		if metrics.Read(sample); sample[0].Value.Uint64() < limit {
			continue
		}
		outMu.Lock() // no reply is being written: j still runs, or the next job does
		if current.Load() == j {
			b, _ := json.Marshal(Reply{Key: j.Key, Fatal: fmt.Sprintf("allocated more than the bound of %d MiB", limit>>20)})
			w.Write(append(b, '\n'))
			os.Exit(3)
		}
		outMu.Unlock()
	}
}

// Run evaluates a job.
func Run(j *Job) *Reply {
	r := &Reply{Key: j.Key}
	c, ok := registry[j.Key]
	if !ok {
		r.Error = "caserun: no case " + j.Key + " was compiled into this runner"
		return r
	}
	if len(c.plans) != 1 {
		r.Error = fmt.Sprintf("caserun: case %s has %d entrypoints, not 1", j.Key, len(c.plans))
		return r
	}
	var plan Plan
	for _, p := range c.plans {
		plan = p
	}
	data, err := rt.ParseData(orEmpty(j.Data))
	if err != nil {
		r.Error = "caserun: data: " + err.Error()
		return r
	}
	prog := rt.NewProgram(c.funcs, data)
	timeout := time.Duration(max(j.TimeoutMS, 1)) * time.Millisecond
	res, err := evalOnce(prog, plan, j, timeout)
	if errors.Is(err, context.DeadlineExceeded) {
		r.Fatal = fmt.Sprintf("did not finish within %v", timeout)
		return r
	}
	if err != nil {
		r.Error, r.Code = err.Error(), rt.ErrorCode(err)
		return r
	}
	r.Result = res
	if j.BenchMS > 0 {
		d := time.Duration(j.BenchMS) * time.Millisecond / 2
		r.BenchNS = bench(prog, plan, j, d)
		r.BenchNoCacheNS = bench(rt.NewProgramNoCache(c.funcs, data), plan, j, d)
	}
	return r
}

func orEmpty(b []byte) []byte {
	if len(b) == 0 {
		return []byte(`{}`)
	}
	return b
}

// input parses the job's input into ev's arena (nil when it has none).
func input(ev *rt.Eval, j *Job) (*rt.V, error) {
	if len(j.Input) == 0 {
		return nil, nil
	}
	v, err := ev.ParseQuery(j.Input)
	if err != nil {
		return nil, fmt.Errorf("caserun: input: %w", err)
	}
	if j.Tagged {
		v = Untag(ev, v)
	}
	return v, nil
}

// evalOnce evaluates the plan on the job's input and returns the result set's canonical
// JSON.
func evalOnce(prog *rt.Program, plan Plan, j *Job, timeout time.Duration) (out []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ev := prog.Get(ctx)
	defer prog.Put(ev)
	ev.SetTime(j.NowNS)
	in, err := input(ev, j)
	if err != nil {
		return nil, err
	}
	if err := rt.Run(func() { out = rt.AppendCanonical(nil, plan(ev, in, prog.Data)) }); err != nil {
		return nil, err
	}
	return out, nil
}

// bench evaluates the plan repeatedly for about d and returns the time of one evaluation
// (parsing the input included, as an engine's DecideJSON parses its query).
func bench(prog *rt.Program, plan Plan, j *Job, d time.Duration) float64 {
	ctx := context.Background()
	n := 0
	start := time.Now()
	for time.Since(start) < d || n == 0 {
		for range 16 {
			ev := prog.Get(ctx)
			ev.SetTime(j.NowNS)
			in, _ := input(ev, j)
			_ = rt.Run(func() { plan(ev, in, prog.Data) })
			prog.Put(ev)
			n++
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}
