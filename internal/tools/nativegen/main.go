// Command nativegen compiles a policy's plan (OPA's intermediate representation, from
// `opa build -t plan`) to Go source on the runtime of core/nativeengine/internal/rt.
//
//	go run ./internal/tools/nativegen -plan plan.json -pkg nativeengine -o core/nativeengine/policy_gen.go
//
// It supports every statement of OPA's IR and the built-in functions the runtime
// implements (functions marked `//rego:builtin NAME` in the runtime's source); a plan
// that needs anything else is refused with an error naming it, never compiled into code
// that would decide differently. scripts/build-native.sh runs it (`make native`; `make
// test` fails when the committed output is stale).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
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
	pol, sum, err := readPlan(planPath)
	if err != nil {
		return err
	}
	bis, err := scanBuiltins(runtimeDir)
	if err != nil {
		return err
	}
	src, err := Generate(pol, Config{Package: pkg, Builtins: bis, Source: source, PlanSHA256: sum})
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
