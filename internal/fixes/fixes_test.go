package fixes_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/fixes"
)

func TestMatch(t *testing.T) {
	for fix, want := range map[string]string{
		"grantwire grants grant google builtin:chat --scopes gmail.readonly,openid":            "grants-grant",
		"grantwire grants grant google 'custom:a b' --scopes ''":                               "grants-grant",
		"grantwire connect google --scopes gmail.readonly":                                     "connect",
		"grantwire connect google":                                                             "connect",
		"grantwire connect google --scopes gmail.readonly --no-browser":                        "connect-no-browser",
		"grantwire connect microsoft --scopes openid --grant-agent builtin:mail --device":      "connect-device",
		"grantwire connect google --scopes <scopes> --grant-agent builtin:a --grant-agent b:c": "connect-with-scopes-for-agents",
		"grantwire configure google --client-id <id> --client-secret-stdin":                    "configure-client-with-secret",
		"grantwire configure microsoft --client-id <id>":                                       "configure-client",
		"grantwire configure mcp-memory":                                                       "configure-mcp",
		"grantwire configure mcp-github --from-stdin":                                          "configure-mcp-from-stdin",
		"mv /h/.grantwire/connectors/grants.json /h/.grantwire/connectors/grants.json.corrupt": "move-aside",
		"mv '/h/a b/grants.json' '/h/a b/grants.json.corrupt'":                                 "move-aside",
		"grantwire grants grant --help":                                                        "help",
		"grantwire --help":                                                                     "help",
		"install and start a Secret Service such as gnome-keyring (Debian/Ubuntu: …)":          "credential-store",
	} {
		k, ok := fixes.Match(fix)
		require.True(t, ok, fix)
		require.Equal(t, want, k.Name, fix)
	}
	for _, fix := range []string{
		"mv /a/grants.json /b/grants.json.corrupt", // not the same file
		"grantwire mcp credential mcp-github",
		"rm -rf ~",
		"grantwire configure google --client-id 123 --client-secret 'oops'",
	} {
		_, ok := fixes.Match(fix)
		require.False(t, ok, fix)
	}
}

func TestWordsAndCommands(t *testing.T) {
	require.Equal(t, []string{"mv", "/a b/x", "it's", ""}, fixes.Words(`mv '/a b/x' 'it'\''s' ''`))
	require.Equal(t, []string{"grantwire catalog google"},
		fixes.Commands("the catalog does not list x for google; a scope is an exact, case-sensitive string (grantwire catalog google)"))
	require.Equal(t, []string{"mv /h/s.json /h/s.json.corrupt"},
		fixes.Commands("/h/s.json is unreadable, so it was not updated (it only mirrors connections for listings): mv /h/s.json /h/s.json.corrupt"))
	require.Equal(t, []string{"grantwire configure mcp-github --from-stdin"},
		fixes.Commands("mcp-github still needs GITHUB_TOKEN before it can start; configure it: grantwire configure mcp-github --from-stdin"))
	require.Empty(t, fixes.Commands("another grantwire operation holds the google lock; nothing was changed, retry shortly"))
}

func TestPrinted(t *testing.T) {
	out := "grantwire: the grants ledger is unreadable\nfix: mv /a /a.corrupt\n" +
		"see: grantwire connect --help\n" +
		`{"error": {"code": "X", "fix": "grantwire catalog"}}` + "\n" +
		"grantwire: warning: no agent registry knows x:y; check the id (grantwire agents list)\n" +
		`{"warning":{"message":"could not clean /s (bad); move it aside: mv /s /s.corrupt"}}` + "\n"
	require.Equal(t, []string{"mv /a /a.corrupt", "grantwire connect --help", "grantwire catalog", "grantwire agents list", "mv /s /s.corrupt"}, fixes.Printed(out))
}
