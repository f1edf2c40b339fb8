package agents_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/agents"
	"github.com/grantwire/grantwire/core"
)

// FuzzAgentsFile reads arbitrary bytes as $GRANTWIRE_HOME/agents.json (issue 10, item
// 19). No input panics; an unusable file is an error naming it (CORRUPT_LEDGER for the
// policy's lookups); every agent registered has a valid id; a custom agent's source is
// never read unless it is a regular file.
// Longer: go test ./agents -run '^$' -fuzz FuzzAgentsFile -fuzztime 5m
func FuzzAgentsFile(f *testing.F) {
	for _, s := range []string{
		`{"version": 1, "agents": [{"id": "installed:triage", "required_connectors": [{"connector": "google", "scopes": ["a"]}]}]}`,
		`{"agents": [{"id": "custom:zero", "source": "/dev/zero"}]}`,
		`{"agents": [{"id": "custom:me", "source": "agent.py"}, {"id": "builtin:chat", "consumes_mcp_servers": false}]}`,
		`{"agents": [{"id": "installed:a", "required_connectors": [{"connector": "g", "scopes": ["a"], "scopes": ["b"]}]}]}`,
		`{"version": 2}`, `{"agents": [{"id": "installed:a b"}]}`, "{\"agents\": [{\"id\": \"installed:\xff\"}]}",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.py"), []byte("print(1)\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, agents.FileName)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		r := agents.New(path, agents.WithUserHome(dir))
		list, err := r.List()
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			_, _, err = r.Agent(context.Background(), "builtin:chat")
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Code != "CORRUPT_LEDGER" {
				t.Fatalf("the policy's lookup got %v, want CORRUPT_LEDGER", err)
			}
			return
		}
		for _, a := range list {
			if err := agents.ValidID(a.ID); err != nil {
				t.Fatalf("registered an invalid id: %v", err)
			}
		}
	})
}
