package testenv

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"time"
)

// FreePort is a TCP port of 127.0.0.1 free when FreePort returns, for a child process told
// where to listen.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartServer starts cmd, a server, with its stdout and stderr going to out, and waits
// until a GET of ready answers a status below 500 (polling every 50 ms for up to within).
// stop kills the process and waits for it; it may be called more than once. When the
// process ends first or within passes, StartServer stops it and fails with what it printed.
func StartServer(cmd *exec.Cmd, ready string, within time.Duration) (out *Buffer, stop func(), err error) {
	out = &Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-done
	}
	c := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(within); ; {
		select {
		case <-done:
			return nil, nil, fmt.Errorf("%q ended before it was ready:\n%s", cmd.Args, out.String())
		default:
		}
		if resp, err := c.Get(ready); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode < 500 {
				return out, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("%q not ready at %s within %s:\n%s", cmd.Args, ready, within, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
