package main

import "github.com/spf13/cobra"

// extraCommands are command groups added to the root in order: `policy` (policy.go in the
// OPA build, policy_default.go otherwise) and, later, `serve` (the REST and SSE surface).
// Each lives in its own file of this directory and registers itself:
//
//	func init() { extraCommands = append(extraCommands, newServeCmd) }
//
//	func newServeCmd(a *app) *cobra.Command {
//		return a.command(spec{use: "serve", example: "  grantwire serve", args: exactArgs(0),
//			run: operation[struct{}]{
//				parse: func(*cobra.Command, []string) error { a.LongRunning = true; return nil },
//				call:  func(ctx context.Context, c *grantwire.Client, _ []string) (struct{}, error) { ... },
//			}.runE(a)})
//	}
//
// A command is a spec row (command.go) whose body is an operation: parse the arguments and
// flags (usagef for usage errors, exit 2), call the app's one client (or do, for a command
// that asks none), render the text or let --json print the result; errors map to the
// policy's exit codes in app.exit. What a command may use of the app: the global settings
// (a.Home(), --json as a.jsonOut), a.Catalog(), a.Engine(ctx), a.printf and printTable for
// text. Give every command an Example, and no PersistentPreRun of its own: the root's
// resolves --home, --keyring-service, --engine and --catalog before any command runs
// (cobra runs only the nearest one).
var extraCommands []func(a *app) *cobra.Command
