package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
