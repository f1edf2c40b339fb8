package native_test

import (
	"bufio"
	"context"
	"fmt"
	"github.com/grantwire/grantwire"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

func newLocks(t *testing.T, home string) (hostabi.Locks, *native.Shell) {
	t.Helper()
	sh, err := native.New(native.Options{Home: home, NoWatch: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	return sh.Capabilities().Locks, sh
}

// Within one process, callers of a lock queue: the second waits for the first, a caller
// whose wait runs out is told busy.
func TestLocksQueueWithinProcess(t *testing.T) {
	ctx := context.Background()
	l, sh := newLocks(t, t.TempDir())
	release, err := l.TryLock(ctx, "local", 0)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), mode(t, sh.LockPath("local")))

	start := time.Now()
	_, err = l.TryLock(ctx, "local", 80*time.Millisecond)
	require.ErrorIs(t, err, hostabi.ErrBusy)
	require.GreaterOrEqual(t, time.Since(start), 80*time.Millisecond)

	other, err := l.TryLock(ctx, "other", 0)
	require.NoError(t, err, "locks are per name")
	other()

	got := make(chan time.Time, 1)
	go func() {
		r, err := l.TryLock(ctx, "local", 5*time.Second)
		if err == nil {
			at := time.Now()
			r() // released before the test goes on to take the lock again
			got <- at
		}
		close(got)
	}()
	time.Sleep(100 * time.Millisecond)
	released := time.Now()
	release()
	release() // releasing twice is harmless
	at, ok := <-got
	require.True(t, ok, "the waiting caller got the lock")
	require.True(t, at.After(released))

	cctx, cancel := context.WithCancel(ctx)
	r, err := l.TryLock(ctx, "local", 0)
	require.NoError(t, err)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err = l.TryLock(cctx, "local", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	r()

	for _, bad := range []string{"", "../x", "a/b", ".hidden"} {
		_, err := l.TryLock(ctx, bad, 0)
		require.Error(t, err, bad)
	}
}

func childLockHolder() error {
	ctx := context.Background()
	sh, err := native.New(native.Options{Home: os.Getenv("GW_HOME"), NoWatch: true})
	if err != nil {
		return err
	}
	release, err := sh.Capabilities().Locks.TryLock(ctx, os.Getenv("GW_LOCK"), 5*time.Second)
	if err != nil {
		return err
	}
	fmt.Println("held")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	release()
	return nil
}

// The lock is shared by every process of the user: another process holding it makes
// TryLock busy until it lets go (or dies).
func TestLocksAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	l, _ := newLocks(t, home)
	for _, how := range []string{"release", "kill"} {
		cmd := child(t, "lock-holder", "GW_HOME="+home, "GW_LOCK=local")
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		require.Equal(t, "held", testenv.FirstLine(t, cmd))

		start := time.Now()
		_, err = l.TryLock(ctx, "local", 150*time.Millisecond)
		require.ErrorIs(t, err, hostabi.ErrBusy, how)
		require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)

		go func() {
			time.Sleep(100 * time.Millisecond)
			if how == "kill" {
				_ = cmd.Process.Kill()
			} else {
				_ = stdin.Close()
			}
		}()
		release, err := l.TryLock(ctx, "local", 10*time.Second)
		require.NoError(t, err, how)
		release()
		_ = cmd.Wait()
	}
}

// Concurrent callers in one process share one refresh: the others wait for the lock, then
// find the fresh token the first one cached.
func TestConcurrentRefreshesShareOneRequest(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	clock := &testClock{now: time.Now()}
	w := newWorld(t, worldOpts{noWatch: true, server: &authserver.Config{ClientID: "c"},
		tweak: func(o *native.Options) { o.Clock = clock }})
	_, err := w.client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "c"})
	require.NoError(t, err)
	_, err = w.client.Connect(ctx, "local", []string{"mail.read"}, []string{"builtin:chat"})
	require.NoError(t, err)
	clock.Advance(2 * time.Hour)
	w.srv.Script(authserver.Failure{Grant: "refresh_token", Delay: 200 * time.Millisecond})

	tokens := make([]string, 8)
	testenv.InParallel(t, len(tokens), 1, func(i, _ int) error {
		tok, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
		if err != nil {
			return err
		}
		tokens[i] = tok.AccessToken
		return nil
	})
	require.Equal(t, 1, w.srv.Stats().Refreshes, "one token request for eight callers")
	for _, tok := range tokens {
		require.Equal(t, tokens[0], tok)
	}
}

// Two shells on one home behave like two processes (each file lock is its own open file):
// a conformance run can stage "another process holds the lock" with a second shell.
func TestLocksBetweenShellsOfOneProcess(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	a, _ := newLocks(t, home)
	b, _ := newLocks(t, home)
	release, err := a.TryLock(ctx, "local", 0)
	require.NoError(t, err)
	_, err = b.TryLock(ctx, "local", 50*time.Millisecond)
	require.ErrorIs(t, err, hostabi.ErrBusy)
	release()
	release, err = b.TryLock(ctx, "local", 0)
	require.NoError(t, err)
	release()
}
