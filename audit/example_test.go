package audit_test

import (
	"context"
	"fmt"

	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/policy"
)

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
