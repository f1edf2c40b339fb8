package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// benchTime is how long each side of one case is timed.
const benchTime = 200 * time.Millisecond

// benchmark times c.bench passing cases that give a result, drawn with the seed, on the native engine (the
// runner: parsing the case's JSON input included, as an engine's DecideJSON parses its
// query; as an engine runs, with its cache of the rules that read no input, and without
// it, every rule computed each time) and on OPA's evaluator (rego.PrepareForEval once,
// then Eval on the input parsed beforehand, OPA's fastest path), one after the other,
// and prints them side by side. The ratio compares OPA with the native engine without its
// cache: like with like.
func benchmark(ctx context.Context, w io.Writer, c *config, s *session, picked []*outcome) error {
	var pool []*outcome
	for _, o := range picked {
		if o.status == passed && o.job != nil && !o.exp.wantsErr { // a result to time, not an error
			pool = append(pool, o)
		}
	}
	rng := rand.New(rand.NewPCG(c.seed, 24))
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	pool = pool[:min(c.bench, len(pool))]
	slices.SortFunc(pool, func(a, b *outcome) int { return strings.Compare(a.tc.ID, b.tc.ID) })

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tnative ns/op\tnative, no cache\tOPA ns/op\tOPA / native, no cache\t")
	var logSum float64
	n := 0
	for _, o := range pool {
		j := *o.job
		j.BenchMS = int(benchTime.Milliseconds())
		r, err := s.do(&j)
		if err != nil {
			return fmt.Errorf("%s: %w", o.tc.ID, err)
		}
		if r.Error != "" || r.Fatal != "" {
			return fmt.Errorf("%s: %s%s", o.tc.ID, r.Error, r.Fatal)
		}
		opa, err := benchOPA(ctx, o.tc)
		if err != nil {
			return fmt.Errorf("%s on OPA: %w", o.tc.ID, err)
		}
		ratio := opa / r.BenchNoCacheNS
		logSum += math.Log(ratio)
		n++
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f×\t\n", o.tc.ID, r.BenchNS, r.BenchNoCacheNS, opa, ratio)
	}
	if n > 0 {
		fmt.Fprintf(tw, "geometric mean of %d cases\t\t\t\t%.0f×\t\n", n, math.Exp(logSum/float64(n)))
	}
	return tw.Flush()
}

// benchOPA times a case on OPA's evaluator (built-in errors not strict, as the native
// engine's).
func benchOPA(ctx context.Context, tc *testCase) (float64, error) {
	opts := append(regoOptions(tc), rego.StrictBuiltinErrors(false))
	if tc.Data != nil {
		opts = append(opts, rego.Store(inmem.NewFromObject(*tc.Data)))
	}
	pq, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return 0, err
	}
	var evalOpts []rego.EvalOption
	switch {
	case tc.InputTerm != nil:
		t, err := ast.ParseTerm(*tc.InputTerm)
		if err != nil {
			return 0, err
		}
		evalOpts = append(evalOpts, rego.EvalParsedInput(t.Value))
	case tc.Input != nil:
		v, err := ast.InterfaceToValue(*tc.Input)
		if err != nil {
			return 0, err
		}
		evalOpts = append(evalOpts, rego.EvalParsedInput(v))
	}
	n := 0
	start := time.Now()
	for time.Since(start) < benchTime || n == 0 {
		for range 16 {
			if _, err := pq.Eval(ctx, evalOpts...); err != nil {
				return 0, err
			}
			n++
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n), nil
}
