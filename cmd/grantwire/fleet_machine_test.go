package main_test

// A machine of a fleet as a process of its own: the test binary started again with
// fleetMachineEnv set runs fleetMachine instead of the tests (TestMain). It opens the Go
// API (grantwire.Open, and grantwire.WithStore when GRANTWIRE_STORE is set) on its own home,
// as a long-running program on that machine would, and hands out google tokens to
// builtin:email. What it did is one JSON line per event on stdout.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/shells/postgres"
)

// fleetMachineEnv selects the helper's mode: calls (FLEET_N calls by FLEET_C callers),
// cached (calls by FLEET_C callers for FLEET_FOR), storm (FLEET_C callers at once at the
// unix time FLEET_AT_NS), loop (back to back until killed, a line per call), revoke.
const fleetMachineEnv = "GRANTWIRE_TEST_FLEET_MACHINE"

// fleetLine is one line a machine prints.
type fleetLine struct {
	Start, End int64          // unix ns of one call (loop, revoke)
	Code       string         // its error code ("" when it succeeded)
	Message    string         `json:",omitempty"`
	Calls      int            // calls made (calls, cached)
	Codes      map[string]int // error codes met (calls, cached, storm)
	Tokens     int            // distinct access tokens handed out
	WaitsNS    []int64        // every call's time (storm)
	Seconds    float64        // how long (cached)
	Ready      bool           // loop, storm: the client is open
}

func fleetMachine() int {
	mode := os.Getenv(fleetMachineEnv)
	ctx := context.Background()
	opts := []grantwire.Option{grantwire.WithCatalogFile(os.Getenv("GRANTWIRE_CATALOG"))}
	if url := os.Getenv("GRANTWIRE_STORE"); url != "" {
		opts = append(opts, grantwire.WithStore(url, postgres.Options{NoWatch: true, MaxConns: 8}))
	}
	c, err := grantwire.Open(ctx, native.Options{Home: os.Getenv("GRANTWIRE_HOME"), Service: os.Getenv("GRANTWIRE_KEYRING_SERVICE"), NoWatch: true}, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet machine:", err)
		return 3
	}
	defer c.Close(ctx)
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	emit := func(l fleetLine) {
		mu.Lock()
		defer mu.Unlock()
		_ = out.Encode(l)
	}
	callers, _ := strconv.Atoi(os.Getenv("FLEET_C"))
	callers = max(callers, 1)
	call := func() (string, string, string) {
		t, err := c.GetAccessToken(ctx, "google", []string{gmailRead}, "builtin:email")
		var ge *grantwire.Error
		switch {
		case err == nil:
			return t.AccessToken, "", ""
		case errors.As(err, &ge):
			return "", ge.Code, ge.Summary
		}
		return "", "GO_ERROR", err.Error()
	}
	// run has every caller call until next says stop, and sums what they met.
	run := func(next func() bool, each func(time.Duration)) fleetLine {
		sum := fleetLine{Codes: map[string]int{}}
		tokens := map[string]bool{}
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next() {
					start := time.Now()
					tok, code, _ := call()
					d := time.Since(start)
					mu.Lock()
					sum.Calls++
					if code != "" {
						sum.Codes[code]++
					} else {
						tokens[tok] = true
					}
					mu.Unlock()
					if each != nil {
						each(d)
					}
				}
			}()
		}
		wg.Wait()
		sum.Tokens = len(tokens)
		return sum
	}
	switch mode {
	case "calls":
		n, _ := strconv.Atoi(os.Getenv("FLEET_N"))
		var left = n
		var lmu sync.Mutex
		emit(run(func() bool {
			lmu.Lock()
			defer lmu.Unlock()
			left--
			return left >= 0
		}, nil))
	case "cached":
		d, _ := time.ParseDuration(os.Getenv("FLEET_FOR"))
		start := time.Now()
		end := start.Add(d)
		sum := run(func() bool { return time.Now().Before(end) }, nil)
		sum.Seconds = time.Since(start).Seconds()
		emit(sum)
	case "storm":
		at, _ := strconv.ParseInt(os.Getenv("FLEET_AT_NS"), 10, 64)
		emit(fleetLine{Ready: true})
		sum := fleetLine{Codes: map[string]int{}}
		tokens := map[string]bool{}
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				start := time.Now()
				tok, code, _ := call()
				d := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				sum.Calls++
				sum.WaitsNS = append(sum.WaitsNS, int64(d))
				if code != "" {
					sum.Codes[code]++
				} else {
					tokens[tok] = true
				}
			}()
		}
		time.Sleep(time.Until(time.Unix(0, at)))
		close(gate)
		wg.Wait()
		sum.Tokens = len(tokens)
		emit(sum)
	case "loop":
		emit(fleetLine{Ready: true})
		for {
			start := time.Now()
			_, code, msg := call()
			emit(fleetLine{Start: start.UnixNano(), End: time.Now().UnixNano(), Code: code, Message: msg})
			time.Sleep(2 * time.Millisecond) // back to back, without flooding the test with failures
		}
	case "revoke":
		start := time.Now()
		_, err := c.Revoke(ctx, "google", "builtin:email")
		l := fleetLine{Start: start.UnixNano(), End: time.Now().UnixNano()}
		if err != nil {
			l.Code, l.Message = "GO_ERROR", err.Error()
		}
		emit(l)
	default:
		fmt.Fprintln(os.Stderr, "fleet machine: unknown mode", mode)
		return 2
	}
	return 0
}

// fleetProc is a running machine process.
type fleetProc struct {
	cmd   *exec.Cmd
	lines chan fleetLine
	done  chan struct{}
	err   error
	errb  *lockedBuffer
}

// lockedBuffer is a buffer safe for a process's writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// startMachine starts the test binary as a machine of mode with env (the machine's HOME,
// GRANTWIRE_HOME, cache, store, …) and extra settings.
func startMachine(t testing.TB, env []string, mode string, extra ...string) *fleetProc {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(append(append([]string(nil), env...), fleetMachineEnv+"="+mode), extra...)
	p := &fleetProc{cmd: cmd, lines: make(chan fleetLine, 1<<16), done: make(chan struct{}), errb: &lockedBuffer{}}
	cmd.Stderr = p.errb
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var l fleetLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				p.lines <- l
			}
		}
		p.err = cmd.Wait()
		close(p.lines)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// next returns the machine's next line (it fails the test when the machine ends first or
// says nothing within d).
// stop kills the machine (SIGKILL) and waits for it.
func (p *fleetProc) stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *fleetProc) next(t testing.TB, d time.Duration) fleetLine {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("the machine ended (%v) without a line: %s", p.err, p.errb.String())
		}
		return l
	case <-time.After(d):
		t.Fatalf("the machine said nothing within %s: %s", d, p.errb.String())
	}
	return fleetLine{}
}

// result waits for the machine's last line and its exit 0.
func (p *fleetProc) result(t testing.TB, d time.Duration) fleetLine {
	t.Helper()
	l := p.next(t, d)
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("the machine did not end within %s", d)
	}
	require.NoError(t, p.err, p.errb.String())
	return l
}
