package main_test

// Scaffolding the end-to-end tests share: a binary running in the background, a
// cancelled connect's checks.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bgProcess is the binary running in the background with its output captured; exited
// receives what Wait returns.
type bgProcess struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	exited         chan error
}

// command is the binary of w with args, to run in w's home with w's environment and
// extraEnv.
func (w *bbWorld) command(extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.Command(w.bin, args...)
	cmd.Env = append(append([]string(nil), w.env...), extraEnv...)
	cmd.Dir = w.home
	return cmd
}

// startBG starts the binary of w with args in w's environment.
func (w *bbWorld) startBG(t testing.TB, args ...string) *bgProcess {
	t.Helper()
	p := &bgProcess{cmd: exec.Command(w.bin, args...), exited: make(chan error, 1)}
	p.cmd.Env = w.env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	return p
}

// interrupt sends SIGINT and returns what the process's Wait returned; a process still
// running after within is killed and the test fails.
func (p *bgProcess) interrupt(t testing.TB, within time.Duration) error {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-p.exited:
		return err
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		t.Fatalf("the command did not stop within %v of SIGINT", within)
		return nil
	}
}

// requireCancelledNothingStored checks a connect of google cancelled by SIGINT: exit 130,
// "cancelled", no output, no connection stored and no agent granted.
func (w *e2e) requireCancelledNothingStored(t *testing.T, r bbResult) {
	t.Helper()
	w.record(r.stdout, r.stderr)
	require.Equal(t, 130, r.code, r.stderr)
	require.Contains(t, r.stderr, "grantwire: cancelled")
	require.Empty(t, r.stdout)
	require.Empty(t, w.keyring("google:default"), "no connection stored")
	row := w.status("google")
	require.False(t, row.Configured)
	require.Empty(t, row.Grants, "no agent granted")
}

// requireCancelled checks what interrupt returned: exit 130 and "cancelled" on standard
// error (what says which run, before the output, in a failure).
func (p *bgProcess) requireCancelled(t testing.TB, err error, what string) {
	t.Helper()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%sexit 0\nstdout: %s\nstderr: %s", what, p.stdout.String(), p.stderr.String())
	require.Equal(t, 130, ee.ExitCode(), "%sstdout: %s\nstderr: %s", what, p.stdout.String(), p.stderr.String())
	require.Contains(t, p.stderr.String(), "cancelled")
}

// runJSON runs the binary with --json and args, requires exit 0 and decodes standard
// output into v.
func (w *bbWorld) runJSON(v any, args ...string) bbResult {
	w.t.Helper()
	r := w.run("", append([]string{"--json"}, args...)...)
	require.Equal(w.t, 0, r.code, "%v: %s", args, r.stderr)
	require.NoError(w.t, json.Unmarshal([]byte(r.stdout), v), "%v: %s", args, r.stdout)
	return r
}
