package grantwire_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/layout"
)

// A deadline stops a slow operation through the Go API (issue 10, item 17): a grant of
// 60,000 scopes (the policy is quadratic in them: tens of seconds of Wasm) under a 100 ms
// deadline returns the deadline's error well before the decision could end, and writes
// nothing. The engine before this change ran the decision to its end.
func TestDeadlineStopsASlowOperation(t *testing.T) {
	c, w := newMemClient(t)
	warm, cancel := context.WithCancel(context.Background())
	_, err := c.ListGrants(warm, "") // builds the engine's variant for contexts that can end
	cancel()
	require.NoError(t, err)

	scopes := make([]string, 60000)
	for i := range scopes {
		scopes[i] = "s" + strconv.Itoa(i)
	}
	ctx, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	done := make(chan error, 1)
	go func() { _, err := c.Grant(ctx, "mcp-memory", "builtin:chat", scopes); done <- err }()
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the operation did not stop within 15 s of its 100 ms deadline")
	}
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.Empty(t, w.File(layout.Grants), "nothing was written")
}
