package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/audit"
)

func init() { extraCommands = append(extraCommands, newPolicyCmd) }

// newPolicyCmd mounts package audit's `policy` tree (audit, build, docs, replay, test).
// Its commands' errors go through the CLI's exit codes: a failed check exits with the code
// it carries (1; 2 for a misused flag), a refused bundle 5, anything else 5.
func newPolicyCmd(a *app) *cobra.Command {
	cmd := audit.PolicyCommand()
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = a.group
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		if c.RunE != nil && c != cmd {
			run := c.RunE
			c.RunE = a.runE(func(c *cobra.Command, args []string) error {
				// A command's own --json shadows the global one: errors follow it too.
				if f := c.Flags().Lookup("json"); f != nil && f.Value.String() == "true" {
					a.jsonOut = true
				}
				err := run(c, args)
				var xe *audit.ExitError
				if errors.As(err, &xe) {
					return checkFailed{xe}
				}
				return err
			})
		}
		for _, sub := range c.Commands() {
			wrap(sub)
		}
	}
	wrap(cmd)
	return cmd
}

// checkFailed is an *audit.ExitError as the CLI reports it (exitCoder).
type checkFailed struct{ e *audit.ExitError }

func (c checkFailed) Error() string { return c.e.Err.Error() }
func (c checkFailed) Unwrap() error { return c.e }
func (c checkFailed) ExitCode() int { return c.e.Code }
