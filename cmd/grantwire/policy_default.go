//go:build !opa

package main

import "github.com/spf13/cobra"

func init() { extraCommands = append(extraCommands, newPolicyStub) }

// newPolicyStub stands for the `policy` commands, which link OPA and so are only in the
// OPA build (policy.go): any use says how to get them (exit 2).
func newPolicyStub(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "policy",
		Short: "Audit grantwire's policy with OPA's tools (in the OPA build: go build -tags opa)",
		Long: "The policy commands (audit, build, docs, replay, test) audit grantwire's Rego policy with\n" +
			"OPA's Go packages. This build of grantwire links no OPA package, to stay small and quick;\n" +
			"build the one that has them from a checkout of grantwire:\n" +
			"  " + opaBuildFix,
		Example:            "  go build -tags opa -o grantwire ./cmd/grantwire && ./grantwire policy audit",
		DisableFlagParsing: true,
		ValidArgs:          policyCommands,
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if arg == "-h" || arg == "--help" {
					return cmd.Help()
				}
			}
			return &needsOPABuild{"grantwire policy"}
		}),
	}
}
