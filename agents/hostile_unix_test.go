//go:build unix

package agents_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/agents"
)

// quickly fails the test when f does not return within 10 s, or when it allocates more
// than 64 MiB (a read of /dev/zero never ends and grows without bound).
func quickly(t *testing.T, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocked for 10 s")
	}
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20))
}

// A custom agent whose source is a device or a FIFO is reported as a problem at once: its
// bytes are never read (issue 10, item 14).
func TestSpecialAgentSources(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "agent.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	path := filepath.Join(dir, agents.FileName)
	write(t, path, `{"version": 1, "agents": [
	  {"id": "custom:zero", "source": "/dev/zero"},
	  {"id": "custom:fifo", "source": "agent.fifo"},
	  {"id": "installed:fine"}
	]}`)
	r := agents.New(path)
	quickly(t, func() {
		list, err := r.List()
		require.NoError(t, err)
		var ids []string
		for _, a := range list {
			ids = append(ids, a.ID)
		}
		require.Contains(t, ids, "installed:fine", "the other agents are registered")
		problems := r.Problems()
		require.Len(t, problems, 2)
		require.Equal(t, "custom:zero", problems[0].Agent)
		require.Contains(t, problems[0].Message, "/dev/zero is a character device, not a regular file")
		require.Equal(t, "custom:fifo", problems[1].Agent)
		require.Contains(t, problems[1].Message, fifo+" is a named pipe (FIFO), not a regular file")
	})
	quickly(t, func() {
		_, err := agents.CustomIDFile("/dev/zero", "zero")
		require.ErrorContains(t, err, "/dev/zero is a character device")
	})
}

// The agents file itself as a FIFO, or larger than MaxFileBytes, is an error naming it.
func TestSpecialAgentsFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, agents.FileName)
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	quickly(t, func() {
		_, _, err := agents.New(path).Agent(ctx, "builtin:chat")
		require.ErrorContains(t, err, path+" is a named pipe (FIFO), not a regular file")
	})
	require.NoError(t, os.Remove(path))
	big := `{"agents": [], "pad": "` + strings.Repeat("x", agents.MaxFileBytes) + `"}`
	write(t, path, big)
	quickly(t, func() {
		_, err := agents.New(path).List()
		require.ErrorContains(t, err, path+" is larger than 4 MiB")
	})
}

// A duplicate key in the agents file would silently drop a declaration; it is refused.
func TestAgentsFileStrictJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, agents.FileName)
	write(t, path, `{"agents": [{"id": "installed:a", "required_connectors": [{"connector": "google", "scopes": ["a"], "scopes": ["b"]}]}]}`)
	_, err := agents.New(path).List()
	require.ErrorContains(t, err, `duplicate member name "scopes"`)
}
