package grantwire_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
)

// agentIDShape is what a registered id looks like (the policy defines the grammar).
var agentIDShape = regexp.MustCompile(`^(builtin|installed|custom):[\x21-\x7e]{1,300}$`)

// FuzzAgentsFile reads arbitrary bytes as the home's agents.json through the policy (issue
// 10, item 19). No input panics; an unusable file is CORRUPT_LEDGER naming it; every agent
// registered has a visible id; a problem's message names its agent.
// Longer: go test . -run '^$' -fuzz FuzzAgentsFile -fuzztime 5m
func FuzzAgentsFile(f *testing.F) {
	for _, s := range []string{
		`{"version": 1, "agents": [{"id": "installed:triage", "required_connectors": [{"connector": "google", "scopes": ["a"]}]}]}`,
		`{"version": 1, "agents": [{"id": "custom:0000000000000000:zero", "source": "/dev/zero"}]}`,
		`{"version": 1, "agents": [{"id": "custom:me", "source": "~/agent.py"}, {"id": "builtin:chat", "consumes_mcp_servers": false}]}`,
		`{"agents": [{"id": "installed:a", "required_connectors": [{"connector": "g", "scopes": ["a"], "scopes": ["b"]}]}]}`,
		`{"version": 2}`, `{"agents": [{"id": "installed:a b"}]}`, "{\"agents\": [{\"id\": \"installed:\xff\"}]}",
		`{"version": 1, "agents": [{"id": "installed:ch` + "\u200b" + `at"}]}`,
	} {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	w.SetSource("~/agent.py", []byte("print(1)\n"))
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close(ctx) })
	f.Fuzz(func(t *testing.T, raw []byte) {
		w.SetFile(layout.Agents, raw)
		list, problems, err := c.Agents(ctx)
		if err != nil {
			var ge *grantwire.Error
			if !errors.As(err, &ge) || ge.Code != "CORRUPT_LEDGER" || !strings.Contains(ge.Message, "agents.json") {
				t.Fatalf("an unusable agents.json gave %v, want CORRUPT_LEDGER naming it", err)
			}
			return
		}
		for _, a := range list {
			if !agentIDShape.MatchString(a.ID) {
				t.Fatalf("registered an invalid id %q", a.ID)
			}
		}
		for _, p := range problems {
			if p.Agent == "" || p.Message == "" {
				t.Fatalf("a problem without its agent or message: %+v", p)
			}
		}
	})
}
