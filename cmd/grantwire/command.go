package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/safetext"
)

// spec is one row of a command table: the help of a command and what it runs. Commands
// built from specs share their shape; a group (grants, activations) is a spec whose run is
// nil, with its subcommands.
type spec struct {
	use, short, long, example string
	args                      cobra.PositionalArgs
	run                       func(*cobra.Command, []string) error
	flags                     func(*cobra.Command)
}

// command builds the cobra command of s; a spec without run is a group of subs.
func (a *app) command(s spec, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: s.use, Short: s.short, Long: s.long, Example: s.example, Args: s.args, RunE: s.run}
	if s.run == nil {
		cmd.Args, cmd.RunE = cobra.ArbitraryArgs, a.group
	}
	if s.flags != nil {
		s.flags(cmd)
	}
	cmd.AddCommand(subs...)
	return cmd
}

// operation is the parse → call the operation → render shape of a command that asks the
// client: parse reads the arguments and flags (a usage error stops before any client is
// built), call asks the one client, then --json prints json(result) (the result itself when
// json is nil) and otherwise render prints the text.
type operation[R any] struct {
	parse  func(cmd *cobra.Command, args []string) error
	call   func(ctx context.Context, c *grantwire.Client, args []string) (R, error)
	json   func(res R, args []string) any
	render func(res R, args []string) error
}

// runE is the command body of o, for a spec's run.
func (o operation[R]) runE(a *app) func(*cobra.Command, []string) error {
	return a.runE(func(cmd *cobra.Command, args []string) error {
		if o.parse != nil {
			if err := o.parse(cmd, args); err != nil {
				return err
			}
		}
		ctx := cmd.Context()
		c, err := a.Client(ctx)
		if err != nil {
			return err
		}
		res, err := o.call(ctx, c, args)
		if err != nil {
			return err
		}
		if a.jsonOut {
			if o.json == nil {
				return a.printJSON(res)
			}
			return a.printJSON(o.json(res, args))
		}
		return o.render(res, args)
	})
}

// eachPair calls f for every (connector, agent) of m, connectors and then agents sorted.
func eachPair[V any](m map[string]map[string]V, f func(conn, agent string, v V)) {
	for _, conn := range slices.Sorted(maps.Keys(m)) {
		for _, agent := range slices.Sorted(maps.Keys(m[conn])) {
			f(conn, agent, m[conn][agent])
		}
	}
}

// optionalArg is args[0], or "" without it (a command's optional connector).
func optionalArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return ""
}

// warnAll prints each warning of a result on standard error.
func (a *app) warnAll(warnings []string) {
	for _, w := range warnings {
		a.warnf("%s", w)
	}
}

// printTable prints a header and rows as aligned columns on standard output, every cell
// made safe for a terminal.
func (a *app) printTable(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	format := strings.Repeat("%s\t", len(header)-1) + "%s\n"
	for _, row := range rows {
		cells := make([]any, len(row))
		for i, c := range row {
			cells[i] = c
		}
		safetext.Fprintf(tw, format, cells...)
	}
	return tw.Flush()
}

// emit prints v as JSON with --json, else runs text.
func (a *app) emit(v any, text func() error) error {
	if a.jsonOut {
		return a.printJSON(v)
	}
	return text()
}
