package hostabi_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
)

// stampedFiles stamps files by their version (a read, enough for a test).
type stampedFiles struct{ hostabi.Files }

func (s stampedFiles) Stamp(name string) (string, bool) {
	_, v, err := s.Read(context.Background(), name)
	return v, err == nil
}

// tokenChecker is an engine that holds the driver to the contract of core.Query.Tokens:
// a token names one fact's bytes for ever, and only facts the query carries.
type tokenChecker struct {
	core.Engine
	seen     map[string]string // token → the bytes it named
	named    int               // facts that came with a token
	attempts map[int]bool      // attempts whose queries carried tokens
	applying bool              // the last decision has effects to apply
}

func (c *tokenChecker) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	for key, tok := range q.Tokens {
		raw, ok := q.Facts[key]
		if !ok {
			return nil, fmt.Errorf("token %s for %s, a fact the query does not carry", tok, key)
		}
		if was, ok := c.seen[tok]; ok && was != string(raw) {
			return nil, fmt.Errorf("token %s named %s, now %s", tok, was, raw)
		}
		c.seen[tok] = string(raw)
		c.named++
		c.attempts[q.Attempt] = true
	}
	d, err := c.Engine.Decide(ctx, q)
	c.applying = err == nil && len(d.Effects) > 0
	return d, err
}

// The driver passes the host's tokens on with their facts, and a restart after a
// conflict keeps none of the facts' tokens it drops: the facts read again (the ledger
// changed) come with new ones.
func TestDriverPassesTokens(t *testing.T) {
	d, w, _ := setup(t)
	caps := w.Capabilities("")
	caps.Files = stampedFiles{caps.Files}
	h := host.New(caps)
	checker := &tokenChecker{Engine: d.Engine, seen: map[string]string{}, attempts: map[int]bool{}}
	d = &hostabi.Driver{Engine: checker, Host: h}
	ctx := context.Background()
	grant := func(agent string) {
		t.Helper()
		out, err := d.Run(ctx, "grant", map[string]any{"connector": "google", "agent": agent, "scopes": []string{"gmail"}}, nil)
		require.NoError(t, err)
		require.Nil(t, out.Error, "%v", out.Error)
	}
	grant("builtin:chat")
	grant("builtin:chat") // the same ledger version: the same tokens again
	require.Positive(t, checker.named, "ledger facts came with tokens")

	// Another writer changes the grants ledger once, after the driver read it: the write's
	// version precondition fails, the driver restarts and reads again.
	changed := false
	h.Yield = func(context.Context) {
		if !changed && checker.applying {
			changed = true
			w.SetFile(layout.Grants, []byte(`{"google":{"builtin:chat":["gmail"],"builtin:claude-code":["gmail"],"builtin:codex":["openid"]}}`))
		}
	}
	checker.attempts = map[int]bool{}
	grant("builtin:codex")
	require.True(t, changed)
	require.True(t, checker.attempts[1], "the restart's queries carried the new version's tokens")
	require.Contains(t, string(w.File(layout.Grants)), "builtin:claude-code", "the other writer's grant was kept")
	require.Contains(t, string(w.File(layout.Grants)), "builtin:codex")
}
