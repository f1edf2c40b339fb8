// Command policy runs `grantwire policy` (package audit) on its own, so the Makefile can
// build the bundle and the policy reference before the grantwire CLI exists, and without
// building it: `go run ./internal/tools/policy audit|build|docs|replay|test ...`.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/grantwire/grantwire/audit"
)

func main() {
	if err := audit.PolicyCommand().Execute(); err != nil {
		var exit *audit.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.Code)
		}
		fmt.Fprintln(os.Stderr, "policy:", err)
		os.Exit(1)
	}
}
