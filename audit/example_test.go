package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/policy"
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
	// audit
	// build
	// docs
	// help
	// replay
	// test
}

// The policy audit of the embedded policy, as `grantwire policy audit` runs it.
func ExampleAudit() {
	fsys, root := policy.Sources, "grantwire"
	rep, err := audit.Audit(context.Background(), fsys, root, audit.AuditOptions{})
	if err != nil {
		panic(err)
	}
	for _, c := range rep.Checks {
		fmt.Println(c.Name, c.OK)
	}
	fmt.Println(rep.OK(), rep.Coverage >= audit.DefaultThreshold)
	// Output:
	// format true
	// compile true
	// tests true
	// coverage true
	// metadata true
	// entrypoints true
	// true true
}
