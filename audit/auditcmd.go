package audit

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func auditCommand() *cobra.Command {
	var dir string
	var threshold float64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Audit the policy: opa fmt, strict compile against the capabilities, Rego tests, coverage ≥ 95 %, METADATA, entrypoints",
		Long: "Audit grantwire's policy with OPA's Go packages, as `make audit` does with OPA's command line:\n" +
			"  format       every module (tests included) is formatted as `opa fmt` formats it\n" +
			"  compile      strict compile against policy/capabilities.json: only builtins that run inside\n" +
			"               policy.wasm (no clock, randomness, network or host calls)\n" +
			"  tests        the Rego tests (*_test.rego) pass, and there is at least one\n" +
			"  coverage     their line coverage of the policy, test files excluded, reaches --threshold\n" +
			"  metadata     every package and public rule has a METADATA title and description\n" +
			"  entrypoints  decide, manifest and every operation's decision rule are `entrypoint: true`,\n" +
			"               and decide routes exactly the operations the manifest lists\n" +
			"Without --policy the embedded policy is audited. A failed check exits 1 and lists what to fix.\n" +
			"The default threshold is 95, or $COVERAGE_THRESHOLD.",
		Example: "  grantwire policy audit\n" +
			"  grantwire policy audit --policy ./policy/grantwire --threshold 100\n" +
			"  grantwire policy audit --json | jq '.checks[] | select(.ok | not)'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("threshold") {
				if env := os.Getenv("COVERAGE_THRESHOLD"); env != "" {
					v, err := strconv.ParseFloat(env, 64)
					if err != nil {
						return &ExitError{Code: 2, Err: fmt.Errorf("COVERAGE_THRESHOLD=%q is not a number", env)}
					}
					threshold = v
				}
			}
			if threshold <= 0 || threshold > 100 {
				return &ExitError{Code: 2, Err: fmt.Errorf("--threshold must be a percentage in (0, 100], not %g", threshold)}
			}
			fsys, root, err := policyFS(dir)
			if err != nil {
				return err
			}
			rep, err := Audit(cmd.Context(), fsys, root, AuditOptions{Threshold: threshold})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, rep); err != nil {
					return err
				}
			} else {
				WriteAudit(w, rep, dir == "")
			}
			if failed := rep.FailedChecks(); len(failed) > 0 {
				return &ExitError{Code: 1, Err: fmt.Errorf("policy audit failed: %s (see above)", strings.Join(failed, ", "))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "policy", "", "audit the Rego of this directory instead of the embedded policy")
	f.Float64Var(&threshold, "threshold", DefaultThreshold, "the minimum line coverage of the policy, in percent")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

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
