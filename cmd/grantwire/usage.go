package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The usage text: cobra's, with flags listed as users of gh or kubectl expect — a
// boolean flag is "--json", not pflag's "--json[=true|false]".

func init() { cobra.AddTemplateFunc("flagUsages", flagUsages) }

// setUsage installs the usage template on the root (subcommands inherit it).
func setUsage(root *cobra.Command) {
	t := root.UsageTemplate()
	t = strings.ReplaceAll(t, ".LocalFlags.FlagUsages", "flagUsages .LocalFlags")
	t = strings.ReplaceAll(t, ".InheritedFlags.FlagUsages", "flagUsages .InheritedFlags")
	root.SetUsageTemplate(t)
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
