//go:build linux

package main_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cpuTime is the CPU time a process has used so far (utime + stime of /proc/PID/stat).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// SIGINT in the middle of a slow decision (a grant of 10,000 scopes: the policy is
// quadratic in them, seconds of CPU) stops it: exit 130 at once, "cancelled", and nothing
// written (issue 10, item 17). Without cancellation the decision runs to its end and the
// grant is written with exit 0. The Wasm engine runs it: the native engine decides the same
// grant in a fraction of a second, too fast to be interrupted.
func TestBinarySIGINTDuringASlowDecision(t *testing.T) {
	w := newBB(t)
	scopes := make([]string, 10000)
	for i := range scopes {
		scopes[i] = "s" + strconv.Itoa(i)
	}
	p := w.startBG(t, "--engine", "wasm", "grants", "grant", "mcp-memory", "builtin:chat", "--scopes", strings.Join(scopes, ","))

	// Wait until the process has spent a second of CPU: start-up takes a fraction of that,
	// so it is deciding.
	deadline := time.Now().Add(60 * time.Second)
	for cpuTime(t, p.cmd.Process.Pid) < time.Second {
		select {
		case err := <-p.exited:
			t.Fatalf("the command ended before the signal (%v): %s%s", err, p.stdout.String(), p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the command used no CPU")
	}
	p.requireCancelled(t, p.interrupt(t, 10*time.Second), "")
	require.Empty(t, p.stdout.String())
	require.NoFileExists(t, filepath.Join(w.home, ".grantwire", "connectors", "grants.json"), "nothing was written")
	r := w.run("", "grants", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "No grants.")
}
