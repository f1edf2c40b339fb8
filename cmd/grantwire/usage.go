package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The usage text: cobra's, with flags listed as users of gh or kubectl expect — a
// boolean flag is "--json", not pflag's "--json[=true|false]". It is written by a function,
// not a template: a cobra template links text/template's reflection, which keeps every
// exported method of every type in the binary (+2.6 MB).

// setUsage installs the usage function on the root (subcommands inherit it).
func setUsage(root *cobra.Command) {
	root.SetUsageFunc(func(c *cobra.Command) error {
		_, err := io.WriteString(c.OutOrStderr(), usageText(c))
		return err
	})
}

// usageText is cobra's default usage (Usage, Aliases, Examples, Available Commands, Flags,
// Global Flags) with flagUsages for the flags.
func usageText(c *cobra.Command) string {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\n\nAliases:\n  %s", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\n\nFlags:\n%s", strings.TrimRight(flagUsages(c.LocalFlags()), " \n"))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(&b, "\n\nGlobal Flags:\n%s", strings.TrimRight(flagUsages(c.InheritedFlags()), " \n"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	return b.String()
}

// flagUsages lists the flags of fs, one a line, usage aligned: "  -h, --help   help for x".
func flagUsages(fs *pflag.FlagSet) string {
	type row struct{ left, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		left := "      --" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if varname != "" && f.Value.Type() != "bool" {
			left += " " + varname
		}
		if d := defaultText(f); d != "" {
			usage += " (default " + d + ")"
		}
		if f.Deprecated != "" {
			usage += fmt.Sprintf(" (DEPRECATED: %s)", f.Deprecated)
		}
		width = max(width, len(left))
		rows = append(rows, row{left, usage})
	})
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s   %s\n", width, r.left, strings.ReplaceAll(r.usage, "\n", "\n"+strings.Repeat(" ", width+3)))
	}
	return b.String()
}

// defaultText is a flag's default as the usage shows it, or "" for a zero value.
func defaultText(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool":
		if f.DefValue == "true" {
			return "true"
		}
	case "string":
		if f.DefValue != "" {
			return fmt.Sprintf("%q", f.DefValue)
		}
	case "duration":
		if f.DefValue != "0s" {
			return f.DefValue
		}
	case "int", "int64", "uint", "float64", "float32", "count":
		if f.DefValue != "0" {
			return f.DefValue
		}
	default:
		if f.DefValue != "" && f.DefValue != "[]" {
			return f.DefValue
		}
	}
	return ""
}
