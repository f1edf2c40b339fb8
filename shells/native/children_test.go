package native_test

import (
	"fmt"
	"os"
)

// runChild runs the role of a re-executed test binary and returns its exit code.
func runChild(role string) int {
	switch role {
	}
	fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
	return 2
}
