// Command opacases runs OPA's own test cases on the native engine (`make opa-cases`): every
// case of the OPA pinned in go.mod (its module's v1/test/cases/testdata/v1, embedded as
// testdata.V1: read from the module cache, never copied here), planned with that OPA as
// its build/generate-extended-cases plans them for OPA's IR languages, compiled to Go by
// internal/nativegen, all in one build, and run on the native engine's runtime
// (core/nativeengine/internal/caserun, a process of its own). Each case's outcome is
// compared with its expected result or error as OPA's topdown harness compares them.
//
// A case is passed, failed, out of reach (its plan calls a built-in function the runtime
// does not implement, named in the table) or excepted: exceptions.yaml lists the known
// differences with a reason each; an excepted case that passes fails the run until its
// exception is removed, and an exception that names no case in reach fails it too.
//
// The output ends with a table per family and the line "N passed, M failed"; the exit
// status is 1 when a case failed. TestOPACases runs a fixed, seeded share of the cases in
// `make test` (all of them with OPACASES=all).
//
//	go run ./internal/tools/opacases [-run REGEXP] [-share PERCENT -seed N] [-v] [-keep DIR] [-bench N]
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var c config
	flag.StringVar(&c.run, "run", "", "only the cases whose id (note) or file (family/name.yaml) matches this regular expression")
	flag.IntVar(&c.share, "share", 100, "run this percentage of the cases, chosen by -seed")
	flag.Uint64Var(&c.seed, "seed", 1, "the seed that chooses the share of cases")
	flag.BoolVar(&c.verbose, "v", false, "print every case's outcome, and the reasons of the excepted cases")
	flag.StringVar(&c.keep, "keep", "", "write the generated code here (default: a temporary directory, removed)")
	flag.DurationVar(&c.timeout, "timeout", defaultTimeout, "the deadline of one case's evaluation")
	flag.IntVar(&c.bench, "bench", 0, "then time this many passing cases (seeded) on the native engine and OPA's evaluator")
	flag.Parse()
	s, err := run(&c, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "opacases:", err)
		os.Exit(2)
	}
	if s.failed > 0 {
		os.Exit(1)
	}
}
