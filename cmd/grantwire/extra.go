package main

import "github.com/spf13/cobra"

// extraCommands are command groups added to the root in order: `policy` (policy.go in the
// OPA build, policy_default.go otherwise) and, later, `serve` (the REST and SSE surface).
// Each lives in its own file of this directory and registers itself:
//
//	func init() { extraCommands = append(extraCommands, newServeCmd) }
//
//	func newServeCmd(a *app) *cobra.Command {
//		return &cobra.Command{Use: "serve", Example: "  grantwire serve", RunE: a.runE(
//			func(cmd *cobra.Command, args []string) error {
//				a.LongRunning = true // compile policy.wasm: fast decisions for a long life
//				c, err := a.Client(cmd.Context())
//				...
//			})}
//	}
//
// What a command may use of the app: the global settings (a.Home(), --json as a.jsonOut),
// a.Catalog(), a.Agents(), a.Engine(ctx), a.Client(ctx) (catalog → engine → OS shell →
// client, closed when the command ends), a.printJSON / a.printf for output, a.runE to wrap
// its body (so its errors map to the policy's exit codes), usagef for usage errors (exit 2)
// and a.codeError for an error of the policy's table. Give every command an Example, and
// no PersistentPreRun of its own: the root's resolves --home, --keyring-service, --engine
// and --catalog before any command runs (cobra runs only the nearest one).
var extraCommands []func(a *app) *cobra.Command
