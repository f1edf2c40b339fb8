// Command nativegen compiles a policy's plan (OPA's intermediate representation, from
// `opa build -t plan`) to Go source on the runtime of core/nativeengine/internal/rt, with
// package internal/nativegen.
//
//	go run ./internal/tools/nativegen -plan plan.json -pkg nativeengine -o core/nativeengine/policy_gen.go
//
// A plan that needs a statement or a built-in function the runtime does not implement is
// refused with an error naming it. scripts/build-native.sh runs it (`make native`; `make
// test` fails when the committed output is stale).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grantwire/grantwire/internal/nativegen"
)

func main() {
	planPath := flag.String("plan", "", "the plan: plan.json, or a bundle (tar.gz) from opa build -t plan")
	pkg := flag.String("pkg", "", "the Go package name of the output")
	out := flag.String("o", "", "the output file (- for stdout)")
	runtime := flag.String("runtime", "core/nativeengine/internal/rt", "the runtime package's directory (its //rego:builtin functions)")
	source := flag.String("source", "", "what the plan was built from, for the header")
	flag.Parse()
	if *planPath == "" || *pkg == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*planPath, *pkg, *out, *runtime, *source); err != nil {
		fmt.Fprintln(os.Stderr, "nativegen:", err)
		os.Exit(1)
	}
}

func run(planPath, pkg, out, runtimeDir, source string) error {
	pol, sum, err := nativegen.ReadPlan(planPath)
	if err != nil {
		return err
	}
	bis, err := nativegen.ScanBuiltins(runtimeDir)
	if err != nil {
		return err
	}
	src, err := nativegen.Generate(pol, nativegen.Config{Package: pkg, Builtins: bis, Source: source, PlanSHA256: sum})
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(src)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
