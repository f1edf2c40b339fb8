package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// commandLines returns the text of the README's code blocks and inline code spans.
func commandLines(doc string) []string {
	var out []string
	parts := strings.Split(doc, "```")
	for i, p := range parts {
		if i%2 == 1 {
			out = append(out, strings.Split(p, "\n")...)
			continue
		}
		for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(p, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// globalWithValue are the root's flags that take a value.
var globalWithValue = []string{"--home", "--keyring-service", "--engine", "--catalog", "--bundle", "--decision-log", "--store", "--store-home"}

var grantwireCall = regexp.MustCompile(`(?:^|[\s($;&|])grantwire((?:[ \t]+[^\s|;&)<>]+)*)`)

// resolve follows a grantwire command line through the command tree and returns what is
// wrong with it ("" when it names commands that exist, and flags those commands take).
func resolve(root *cobra.Command, words []string) string {
	c, problem := command(root, words)
	if problem != "" || len(c.ValidArgs) > 0 {
		return problem
	}
	for _, w := range words {
		if w == "--" {
			break // mcp run's arguments for the server
		}
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--help" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimRight(w, "]…."), "=")
		var f *pflag.Flag
		if long, ok := strings.CutPrefix(name, "--"); ok {
			f = c.Flags().Lookup(long)
			if f == nil {
				f = c.PersistentFlags().Lookup(long)
			}
			if f == nil {
				f = c.InheritedFlags().Lookup(long)
			}
		} else if len(name) == 2 {
			f = c.Flags().ShorthandLookup(name[1:])
		}
		if f == nil {
			return "no flag " + name + " for " + c.CommandPath()
		}
	}
	return ""
}

// command follows a grantwire command line's words through the command tree to the command
// they name, or says which word names no command.
func command(root *cobra.Command, words []string) (*cobra.Command, string) {
	c := root
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case slices.Contains(globalWithValue, w):
			i++
			continue
		case strings.HasPrefix(w, "-"), w == "…", w == "...", strings.HasPrefix(w, "["), strings.HasPrefix(w, "<"):
			continue
		}
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == w || slices.Contains(sub.Aliases, w) {
				next = sub
			}
		}
		if next != nil {
			c = next
			continue
		}
		if len(c.ValidArgs) > 0 { // the default build's policy stub: the OPA build's subcommands
			if !slices.Contains(c.ValidArgs, w) {
				return c, "no command " + c.CommandPath() + " " + w
			}
			return c, ""
		}
		if c.HasAvailableSubCommands() && !(c.HasParent() && c.Runnable() && strings.ContainsAny(c.Use, "[<")) {
			// (a command with subcommands that also takes arguments, as catalog [id] and
			// catalog set, takes w as its argument)
			return c, "no command " + c.CommandPath() + " " + w
		}
		return c, ""
	}
	return c, ""
}

// Nothing in the README, the docs a user reads, or any command's examples names a grantwire
// command that does not exist, or a flag that command does not take.
func TestREADMECommandsExist(t *testing.T) {
	root := (&app{env: env{}}).rootCmd()
	var lines []string
	for _, doc := range []string{"README.md", "docs/behaviour.md", "hostabi/README.md"} {
		b, err := os.ReadFile("../../" + doc)
		require.NoError(t, err)
		lines = append(lines, commandLines(string(b))...)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		lines = append(lines, strings.Split(c.Example, "\n")...)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	checked := 0
	for _, line := range lines {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i] // a shell comment
		}
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "  "); i >= 0 {
			line = line[:i] // the README's list of commands: what the command does
		}
		for _, ix := range grantwireCall.FindAllStringSubmatchIndex(line, -1) {
			if strings.HasSuffix(strings.TrimSpace(line[:ix[0]+1]), "-o") {
				continue // go build -o grantwire: a file name
			}
			m := []string{line[ix[0]:ix[1]], line[ix[2]:ix[3]]}
			checked++
			if problem := resolve(root, strings.Fields(m[1])); problem != "" {
				t.Errorf("%s: %q", problem, strings.TrimSpace(line))
			}
		}
	}
	require.Greater(t, checked, 50, "the README and the examples name grantwire commands")

	// The checker finds a command that does not exist.
	for _, bad := range []string{"grantwire server", "grantwire grants toggle x", "grantwire --home h mcp authorize", "grantwire policy lint", "grantwire token google --scope x", "grantwire mcp add n --url u --issuer-url i"} {
		m := grantwireCall.FindStringSubmatch(bad)
		require.NotEmpty(t, resolve(root, strings.Fields(m[1])), bad)
	}
}
