package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/grantwire/grantwire/internal/caseproto"
)

// session is a running runner process. Jobs go one at a time: when one does not come
// back (the process crashed, or exceeded its memory bound, or hangs past the deadline and
// is stopped), the job fails with what happened and the next job starts a new process.
type session struct {
	bin     string
	env     []string // added to the environment (nil: ours)
	cmd     *exec.Cmd
	in      io.WriteCloser
	replies chan reply
	stderr  *tail
	grace   time.Duration
}

type reply struct {
	r   *caseproto.Reply
	err error
}

// tail keeps the last bytes a process writes.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

func (s *session) start() error {
	s.cmd = exec.Command(s.bin)
	if s.env != nil {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	s.stderr = &tail{}
	s.cmd.Stderr = s.stderr
	in, err := s.cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.in = in
	replies := make(chan reply, 1)
	s.replies = replies
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
		for sc.Scan() {
			var r caseproto.Reply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				replies <- reply{err: fmt.Errorf("the runner wrote %q", sc.Bytes())}
				continue
			}
			replies <- reply{r: &r}
		}
		close(replies)
	}()
	return nil
}

// stop ends the process (it is ours: we started it).
func (s *session) stop() {
	if s.cmd == nil {
		return
	}
	s.in.Close()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// do runs one job; a job that does not come back is an error saying why.
func (s *session) do(j *caseproto.Job) (*caseproto.Reply, error) {
	if s.cmd == nil {
		if err := s.start(); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.stop()
		return nil, fmt.Errorf("the runner stopped reading (%v): %s", err, s.stderr)
	}
	wait := time.Duration(j.TimeoutMS)*time.Millisecond + time.Duration(j.BenchMS)*time.Millisecond + s.grace
	select {
	case r, ok := <-s.replies:
		if !ok {
			cmd := s.cmd
			s.stop()
			return nil, fmt.Errorf("crashed the runner (%v): %s", cmd.ProcessState, lastLines(s.stderr.String(), 12))
		}
		if r.err != nil {
			s.stop()
			return nil, r.err
		}
		if r.r.Fatal != "" && strings.HasPrefix(r.r.Fatal, "allocated") {
			s.stop()
		}
		if r.r.Key != j.Key {
			s.stop()
			return nil, fmt.Errorf("the runner answered for %s, asked for %s", r.r.Key, j.Key)
		}
		return r.r, nil
	case <-time.After(wait):
		s.stop()
		return nil, fmt.Errorf("did not finish within %v, and did not check its deadline: the runner was stopped", wait)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
