package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
// wrong with it ("" when it names commands that exist).
func resolve(root *cobra.Command, words []string) string {
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
				return "no command " + c.CommandPath() + " " + w
			}
			return ""
		}
		if c.HasAvailableSubCommands() && !(c.HasParent() && c.Runnable() && strings.ContainsAny(c.Use, "[<")) {
			// (a command with subcommands that also takes arguments, as catalog [id] and
			// catalog set, takes w as its argument)
			return "no command " + c.CommandPath() + " " + w
		}
		return ""
	}
	return ""
}

// Nothing in the README, or in any command's examples, names a grantwire command that
// does not exist.
func TestREADMECommandsExist(t *testing.T) {
	root := (&app{env: env{}}).rootCmd()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	lines := commandLines(string(b))
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
	for _, bad := range []string{"grantwire server", "grantwire grants toggle x", "grantwire --home h mcp authorize", "grantwire policy lint"} {
		m := grantwireCall.FindStringSubmatch(bad)
		require.NotEmpty(t, resolve(root, strings.Fields(m[1])), bad)
	}
}
