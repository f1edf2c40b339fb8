package audit

import (
	"fmt"
	"io"
	"strings"
)

// WriteAudit writes a report as text: one line per check, its problems indented below.
func WriteAudit(w io.Writer, rep *AuditReport, embedded bool) {
	what := rep.Policy
	if embedded {
		what = "the embedded policy (" + rep.Policy + ")"
	}
	fmt.Fprintf(w, "policy audit of %s: %d modules, %d test files\n", what, rep.Modules, rep.TestFiles)
	for _, c := range rep.Checks {
		verdict := "ok  "
		if !c.OK {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %-12s %s\n", verdict, c.Name, c.Summary)
		for _, p := range c.Problems {
			fmt.Fprintf(w, "          %s\n", p)
		}
	}
	if failed := rep.FailedChecks(); len(failed) > 0 {
		fmt.Fprintf(w, "audit: FAIL (%s)\n", strings.Join(failed, ", "))
	} else {
		fmt.Fprintf(w, "audit: ok\n")
	}
}
