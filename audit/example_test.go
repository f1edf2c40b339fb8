package audit_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/grantwire/grantwire/audit"
)

// The policy command tree, as the grantwire CLI mounts it.
func ExamplePolicyCommand() {
	cmd := audit.PolicyCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"docs", "-o", "-"})
	if err := cmd.Execute(); err != nil {
		panic(err)
	}
	fmt.Println(strings.SplitN(out.String(), "\n", 2)[0])
	for _, c := range cmd.Commands() {
		fmt.Println(c.Name())
	}
	// Output:
	// # grantwire policy reference
	// build
	// docs
	// help
	// replay
	// test
}
