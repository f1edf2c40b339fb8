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
	aliases                   []string
	args                      cobra.PositionalArgs
	run                       func(*cobra.Command, []string) error
	flags                     func(*cobra.Command)
}

// command builds the cobra command of s; a spec without run is a group of subs.
func (a *app) command(s spec, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: s.use, Aliases: s.aliases, Short: s.short, Long: s.long, Example: s.example, Args: s.args, RunE: s.run}
	if s.run == nil {
		cmd.Args, cmd.RunE = cobra.ArbitraryArgs, a.group
	}
	if s.flags != nil {
		s.flags(cmd)
	}
	cmd.AddCommand(subs...)
	return cmd
}

// operation is the parse → call the operation → render shape of every command: parse reads
// the arguments, flags and secret input (a usage error stops before any client is built;
// a secret given in a flag of refuseSecret is refused before it),
// call asks the one client (do, instead, is the operation of a command that asks none: the
// catalog, the store's keys), then --json prints json(result) (the result itself when json
// is nil; a verbatim result as it is; nothing when json returns nil) and otherwise render
// prints the text; then, in both, runs last (warnings after the result, a check that fails
// once the report is printed).
type operation[R any] struct {
	parse  func(cmd *cobra.Command, args []string) error
	call   func(ctx context.Context, c *grantwire.Client, args []string) (R, error)
	do     func(ctx context.Context, args []string) (R, error)
	json   func(res R, args []string) any
	render func(res R, args []string) error
	then   func(res R, args []string) error
}

// verbatim is a result printed as it is, with or without --json: a document that is its
// own output (catalog --raw).
type verbatim []byte

// noResult is the json of an operation whose output is its own (mcp proxy and mcp run: the
// MCP stream; serve: its line): no result is printed, with or without --json.
func noResult[R any](R, []string) any { return nil }

// runE is the command body of o, for a spec's run.
func (o operation[R]) runE(a *app) func(*cobra.Command, []string) error {
	return a.runE(func(cmd *cobra.Command, args []string) error {
		if err := refusedFlags(cmd); err != nil {
			return err
		}
		if o.parse != nil {
			if err := o.parse(cmd, args); err != nil {
				return err
			}
		}
		ctx := cmd.Context()
		var res R
		var err error
		if o.do != nil {
			res, err = o.do(ctx, args)
		} else {
			var c *grantwire.Client
			if c, err = a.Client(ctx); err != nil {
				return err
			}
			res, err = o.call(ctx, c, args)
		}
		if err != nil {
			return err
		}
		if err := o.print(a, res, args); err != nil {
			return err
		}
		if o.then != nil {
			return o.then(res, args)
		}
		return nil
	})
}

// print prints res: JSON with --json, else the text.
func (o operation[R]) print(a *app, res R, args []string) error {
	if !a.jsonOut {
		if o.render == nil {
			return nil
		}
		return o.render(res, args)
	}
	var out any = res
	if o.json != nil {
		if out = o.json(res, args); out == nil {
			return nil
		}
	}
	if v, ok := out.(verbatim); ok {
		_, err := a.Stdout.Write(v)
		return err
	}
	return a.printJSON(out)
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
// made safe for a terminal; a nil header prints none.
func (a *app) printTable(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
	if header != nil {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, row := range rows {
		cells := make([]any, len(row))
		for i, c := range row {
			cells[i] = c
		}
		safetext.Fprintf(tw, strings.Repeat("%s\t", len(row)-1)+"%s\n", cells...)
	}
	return tw.Flush()
}
