package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Positional arguments, checked with messages that name what is missing or extra from the
// command's usage line ("grantwire grants grant: missing <agent>"), instead of cobra's
// "accepts 2 arg(s), received 1". Every error is a usage error (exit 2).

// placeholders returns the positional placeholders of a usage line: the words after the
// command's name up to the first flag ("<connector>", "[connector]", "LOG").
func placeholders(cmd *cobra.Command) []string {
	fields := strings.Fields(cmd.Use)
	var out []string
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "-") || strings.HasPrefix(f, "[-") || strings.HasPrefix(f, "(") {
			break
		}
		out = append(out, f)
	}
	return out
}

func argsError(cmd *cobra.Command, args []string, min, max int) error {
	names := placeholders(cmd)
	usage := cmd.CommandPath()
	if len(names) > 0 {
		usage += " " + strings.Join(names, " ")
	}
	if len(args) < min {
		var missing []string
		for i := len(args); i < min; i++ {
			if i < len(names) {
				missing = append(missing, names[i])
			} else {
				missing = append(missing, fmt.Sprintf("argument %d", i+1))
			}
		}
		return usagef("%s: missing %s (%s)", cmd.CommandPath(), joinAnd(missing), usage)
	}
	extra := args[max:]
	quoted := make([]string, len(extra))
	for i, e := range extra {
		quoted[i] = fmt.Sprintf("%q", e)
	}
	if max == 0 {
		return usagef("%s takes no arguments: unexpected %s", cmd.CommandPath(), strings.Join(quoted, " "))
	}
	return usagef("%s: unexpected %s (%s)", cmd.CommandPath(), strings.Join(quoted, " "), usage)
}

func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// rangeArgs accepts between min and max positional arguments.
func rangeArgs(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return argsError(cmd, args, min, max)
		}
		return nil
	}
}

func exactArgs(n int) cobra.PositionalArgs { return rangeArgs(n, n) }
func maxArgs(n int) cobra.PositionalArgs   { return rangeArgs(0, n) }

var noArgs = rangeArgs(0, 0)
