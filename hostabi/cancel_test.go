package hostabi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/layout"
)

// cancelOnDone is an engine that cancels the operation's context right after the core
// answers with a done decision: the cancellation arrives between the decision and its
// effects.
type cancelOnDone struct {
	core.Engine
	cancel context.CancelFunc
}

func (c cancelOnDone) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	d, err := c.Engine.Decide(ctx, q)
	if err == nil && d.Status == core.StatusDone {
		c.cancel()
	}
	return d, err
}

// A context cancelled after the final decision but before its effects stops the
// operation: the error is the cancellation and nothing is written (issue 10, item 17).
func TestDriverCancelledBeforeEffectsWritesNothing(t *testing.T) {
	d, w, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.Engine = cancelOnDone{Engine: d.Engine, cancel: cancel}
	out, err := d.Run(ctx, "grant", map[string]any{"connector": "mcp-github", "agent": "builtin:chat", "scopes": []string{"use"}}, nil)
	require.True(t, errors.Is(err, context.Canceled), "%v %+v", err, out)
	require.Empty(t, w.File(layout.Grants), "nothing was written")
	require.Empty(t, w.Events())

	// The same operation, not cancelled, writes the grant.
	d2, w2, _ := setup(t)
	out, err = d2.Run(context.Background(), "grant", map[string]any{"connector": "mcp-github", "agent": "builtin:chat", "scopes": []string{"use"}}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error)
	require.NotEmpty(t, w2.File(layout.Grants))
}
