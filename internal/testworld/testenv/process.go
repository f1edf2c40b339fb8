package testenv

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
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

// FirstLine starts cmd, a child process, and returns the first line it prints on stdout
// (without its newline): the line a child prints once it is ready ("held", a JSON line of
// its endpoints). The caller waits for or kills the child (FirstLine does when no line
// comes); what it prints after that line is not read.
func FirstLine(tb testing.TB, cmd *exec.Cmd) string {
	tb.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tb.Fatalf("%q printed no line (%v): %q", cmd.Args, err, line)
	}
	return strings.TrimSuffix(line, "\n")
}
