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

// TestGoldenTranscripts runs the CLI's commands (listing, grant, activation, disconnect,
// configure, catalog, status, connect, import, mcp, store, serve) on the in-memory world, text and --json, successes and refusals, and compares every byte each
// prints and its exit code with testdata/golden/<name>.txt (go test -run TestGoldenTranscripts
// -update-golden rewrites them): the commands' output does not change unnoticed.
func TestGoldenTranscripts(t *testing.T) {
	tw := newWorld(t)
	var b strings.Builder
	step := func(stdin string, args ...string) {
		t.Helper()
		r := tw.gwIn(stdin, args...)
		out := fmt.Sprintf("$ grantwire %s\nexit %d\n--- stdout\n%s--- stderr\n%s\n", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		b.WriteString(strings.ReplaceAll(out, tw.home, "$HOME"))
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
	// The other commands (catalog, status, connect, import, the mcp and store commands,
	// serve): what they print on the in-memory world, paths under the test's home as $HOME.
	for _, json := range [][]string{nil, {"--json"}} {
		tw = newWorld(t)
		home := tw.home
		gw := func(args ...string) { t.Helper(); step("", append(args, json...)...) }
		in := func(stdin string, args ...string) { t.Helper(); step(stdin, append(args, json...)...) }
		gw("catalog")
		gw("catalog", "--tier", "search")
		gw("catalog", "--tier", "nosuch")
		gw("catalog", "google")
		gw("catalog", "microsoft_work")
		gw("catalog", "mcp-memory")
		gw("catalog", "mcp-brave-search")
		gw("catalog", "nosuch")
		gw("catalog", "a", "b")
		gw("catalog", "set", "google", "issuer=https://x.example")
		gw("status")
		gw("status", "google")
		gw("status", "nosuch")
		gw("list")
		gw("connect", "google", "--scopes", gmailRead)
		gw("connect", "google", "--device", "--no-browser")
		gw("connect", "google", "--timeout", "0s")
		gw("connect")
		in("cs\n", "configure", "google", "--client-id", "cid", "--client-secret-stdin")
		gw("connect", "google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
		gw("connect", "google")
		gw("status")
		gw("status", "google")
		in("client_id=host-cid\nclient_secret=host-secret\nrefresh_token=host-refresh\nscopes="+gmailModify+","+gmailSend+"\naccount_email=alice@example.com\n",
			"import", "google", "--from-stdin", "--grant-agent", "builtin:email")
		gw("import", "google")
		gw("import", "google", "--from-stdin", "--client-secret", "s")
		in(`{"client_id": "x", "refresh_token": "tok-SECRET-9`, "import", "google", "--from-stdin")
		in("client_id=x\n", "import", "google", "--from-stdin", "--client-id", "y")
		gw("mcp")
		gw("mcp", "nosuch")
		gw("mcp", "list")
		gw("mcp", "list", "extra")
		in("BRAVE_API_KEY=bsa-secret\n", "configure", "mcp-brave-search", "--from-stdin")
		gw("mcp", "list")
		gw("mcp", "list", "--agent", "builtin:chat")
		gw("activations", "activate", "mcp-brave-search", "builtin:chat")
		gw("mcp", "list", "--agent", "builtin:chat")
		gw("mcp", "add", "notes")
		gw("mcp", "add", "notes", "--url", "https://mcp.example.com/mcp", "--grant", "bogus")
		gw("mcp", "add", "notes", "--url", "https://mcp.example.com/mcp", "--client-secret", "s")
		gw("mcp", "add", "notes", "--url", "https://mcp.example.com/mcp", "--client-secret-stdin")
		gw("mcp", "add", "notes", "--url", "https://mcp.example.com/mcp", "--private-key-file", filepath.Join(home, "none.pem"))
		gw("mcp", "add", "notes", "--url", "https://mcp.example.com/mcp")
		gw("mcp", "add", "notes", "--url", "https://mcp2.example.com/mcp", "--scopes", "read")
		gw("mcp", "add", "google", "--url", "https://mcp.example.com/mcp")
		gw("mcp", "list")
		gw("mcp", "auth", "notes", "--timeout", "0s")
		gw("mcp", "auth", "nosuch")
		gw("mcp", "logout", "notes")
		gw("mcp", "proxy", "notes")
		gw("mcp", "proxy", "notes", "--agent", "builtin:chat")
		gw("mcp", "run")
		gw("mcp", "run", "a", "b", "--agent", "builtin:chat")
		gw("mcp", "run", "mcp-brave-search")
		gw("mcp", "run", "notes", "--agent", "builtin:chat")
		gw("mcp", "run", "mcp-brave-search", "--agent", "builtin:email")
		gw("mcp", "run", "mcp-memory", "--agent", "builtin:chat")
		gw("mcp", "config")
		gw("mcp", "config", "mcp-brave-search", "--agent", "builtin:chat", "--format", "bogus")
		gw("mcp", "config", "mcp-brave-search")
		gw("mcp", "remove", "notes")
		gw("mcp", "remove", "notes")
		gw("store")
		gw("store", "copy")
		gw("store", "copy", "--from", "a", "--to", "b")
		gw("store", "rotate-key")
		gw("store", "move-aside", "connectors/grants.json")
		gw("store", "new-key", home)
		gw("serve", "extra")
		gw("serve", "--token-file", filepath.Join(home, "none.token"))
		gw("disconnect", "google")
		gw("status")
	}
	path := filepath.Join("testdata", "golden", "transcripts.txt")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), b.String())
}
