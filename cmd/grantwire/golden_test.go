package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from this run")

// TestGoldenTranscripts runs the listing, grant, activation and disconnect commands on the
// in-memory world, text and --json, successes and refusals, and compares every byte each
// prints and its exit code with testdata/golden/<name>.txt (go test -run TestGoldenTranscripts
// -update-golden rewrites them): the commands' output does not change unnoticed.
func TestGoldenTranscripts(t *testing.T) {
	tw := newWorld(t)
	var b strings.Builder
	step := func(stdin string, args ...string) {
		t.Helper()
		r := tw.gwIn(stdin, args...)
		fmt.Fprintf(&b, "$ grantwire %s\nexit %d\n--- stdout\n%s--- stderr\n%s\n", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	for _, json := range [][]string{nil, {"--json"}} {
		tw = newWorld(t)
		gw := func(args ...string) { t.Helper(); step("", append(args, json...)...) }
		gw("grants", "list")
		gw("activations", "list")
		gw("grants", "grant", "google", "builtin:email")
		gw("grants", "grant", "google", "builtin:email", "--scopes", gmailModify)
		gw("grants", "grant", "google", "builtin:email", "--scopes", gmailModify)
		gw("grants", "grant", "google", "builtin:chat", "--scopes", gmailRead+","+gmailSend)
		step("cs\n", append([]string{"configure", "google", "--client-id", "cid", "--client-secret-stdin"}, json...)...)
		gw("configure", "google", "--client-id", "cid")
		gw("configure", "google")
		gw("configure", "google", "--client-id", "cid", "--set", "A=b")
		gw("configure", "google", "--client-id", "cid", "--tenant", "x")
		gw("configure", "google", "--client-id", "cid", "--client-secret-stdin", "--client-secret-file", "f")
		gw("configure", "google", "--client-secret", "s")
		gw("configure", "mcp-brave-search", "--client-id", "cid")
		gw("configure", "mcp-brave-search", "--from-stdin", "--from-file", "f")
		gw("configure", "mcp-memory", "--set", "MEMORY_FILE_PATH=/tmp/m.jsonl")
		gw("configure", "nosuch")
		gw("grants", "list")
		gw("grants", "list", "google")
		gw("grants", "list", "dropbox")
		gw("activations", "activate", "google", "builtin:chat")
		gw("activations", "activate", "mcp-brave-search", "builtin:chat")
		step("BRAVE_API_KEY=bsa-secret\n", append([]string{"configure", "mcp-brave-search", "--from-stdin"}, json...)...)
		gw("activations", "activate", "mcp-brave-search", "builtin:chat")
		gw("activations", "activate", "mcp-brave-search", "builtin:chat")
		gw("activations", "activate", "mcp-brave-search", "builtin:email", "--tools", "brave_web_search")
		gw("activations", "activate", "mcp-brave-search", "installed:x", "--tools", "")
		gw("activations", "activate", "mcp-brave-search", "builtin:email", "--all-tools")
		gw("activations", "activate", "mcp-brave-search", "builtin:email", "--tools", "a", "--all-tools")
		gw("activations", "activate", "mcp-brave-search", "builtin:email", "--tools", "brave_web_search")
		gw("activations", "list")
		gw("activations", "list", "mcp-brave-search")
		gw("activations", "check", "mcp-brave-search", "builtin:email", "brave_web_search")
		gw("activations", "check", "mcp-brave-search", "builtin:email", "other")
		gw("activations", "check", "mcp-brave-search", "builtin:chat", "other")
		gw("activations", "deactivate", "mcp-brave-search", "builtin:chat")
		gw("activations", "deactivate", "mcp-brave-search", "builtin:chat")
		gw("grants", "list")
		gw("grants", "revoke", "google", "builtin:chat")
		gw("grants", "revoke", "google", "builtin:chat")
		gw("grants", "revoke", "nosuch", "builtin:chat")
		gw("disconnect", "mcp-brave-search")
		gw("disconnect", "mcp-brave-search")
		gw("disconnect", "google")
		gw("grants", "list")
		gw("activations", "list")
		gw("grants")
		gw("activations", "nosuch")
	}
	path := filepath.Join("testdata", "golden", "transcripts.txt")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), b.String())
}
