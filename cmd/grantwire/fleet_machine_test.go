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
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/shells/postgres"
)

// fleetMachineEnv selects the helper's mode: calls (FLEET_N calls by FLEET_C callers),
// loop (calls back to back until killed, a line per call), rounds (commands on stdin:
// "calls N", "storm" (FLEET_C callers at once), "revoke", "grant").
const fleetMachineEnv = "GRANTWIRE_TEST_FLEET_MACHINE"

// fleetLine is one line a machine prints.
type fleetLine struct {
	Start, End int64          // unix ns of one call (loop, revoke)
	Code       string         // its error code ("" when it succeeded)
	Message    string         `json:",omitempty"`
	Calls      int            // calls made (calls, storm)
	Codes      map[string]int // error codes met (calls, storm)
	Tokens     int            // distinct access tokens handed out
	WaitsNS    []int64        // every call's time (calls, storm)
	Seconds    float64        // how long the calls took (calls)
	Ready      bool           // loop, rounds: the client is open
}

func fleetMachine() int {
	mode := os.Getenv(fleetMachineEnv)
	ctx := context.Background()
	opts := []grantwire.Option{grantwire.WithCatalog(catalog.File(os.Getenv("GRANTWIRE_CATALOG")))}
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
	// one makes one call and adds what it met to sum (its token to tokens).
	one := func(sum *fleetLine, tokens map[string]bool) {
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
	}
	// run has every caller call until next says stop, and sums what they met.
	run := func(next func() bool) fleetLine {
		sum := fleetLine{Codes: map[string]int{}}
		tokens := map[string]bool{}
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next() {
					one(&sum, tokens)
				}
			}()
		}
		wg.Wait()
		sum.Tokens = len(tokens)
		return sum
	}
	calls := func(n int) fleetLine {
		left := n
		var lmu sync.Mutex
		began := time.Now()
		sum := run(func() bool {
			lmu.Lock()
			defer lmu.Unlock()
			left--
			return left >= 0
		})
		sum.Seconds = time.Since(began).Seconds()
		return sum
	}
	// storm: every caller calls once, all at the same moment.
	storm := func() fleetLine {
		sum := fleetLine{Codes: map[string]int{}}
		tokens := map[string]bool{}
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				one(&sum, tokens)
			}()
		}
		time.Sleep(20 * time.Millisecond) // every caller waits at the gate
		close(gate)
		wg.Wait()
		sum.Tokens = len(tokens)
		return sum
	}
	timed := func(f func() error) fleetLine {
		start := time.Now()
		err := f()
		l := fleetLine{Start: start.UnixNano(), End: time.Now().UnixNano()}
		if err != nil {
			l.Code, l.Message = "GO_ERROR", err.Error()
		}
		return l
	}
	switch mode {
	case "calls":
		n, _ := strconv.Atoi(os.Getenv("FLEET_N"))
		emit(calls(n))
	case "loop":
		emit(fleetLine{Ready: true})
		for {
			start := time.Now()
			_, code, msg := call()
			emit(fleetLine{Start: start.UnixNano(), End: time.Now().UnixNano(), Code: code, Message: msg})
			time.Sleep(2 * time.Millisecond) // back to back, without flooding the test with failures
		}
	case "rounds":
		// One command a line on stdin: "calls N", "storm", "revoke", "grant".
		emit(fleetLine{Ready: true})
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "calls":
				n, _ := strconv.Atoi(f[1])
				emit(calls(n))
			case len(f) == 1 && f[0] == "storm":
				emit(storm())
			case len(f) == 1 && f[0] == "revoke":
				emit(timed(func() error { _, err := c.Revoke(ctx, "google", "builtin:email"); return err }))
			case len(f) == 1 && f[0] == "grant":
				emit(timed(func() error { _, err := c.Grant(ctx, "google", "builtin:email", []string{gmailRead}); return err }))
			default:
				fmt.Fprintln(os.Stderr, "fleet machine: unknown command", sc.Text())
				return 2
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "fleet machine: unknown mode", mode)
		return 2
	}
	return 0
}

// fleetProc is a running machine process.
type fleetProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser // rounds: the commands
	lines chan fleetLine
	done  chan struct{}
	err   error
	errb  *testenv.Buffer
}

// startMachine starts the test binary as a machine of mode with env (the machine's HOME,
// GRANTWIRE_HOME, cache, store, …) and extra settings.
func startMachine(t testing.TB, env []string, mode string, extra ...string) *fleetProc {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(append(append([]string(nil), env...), fleetMachineEnv+"="+mode), extra...)
	p := &fleetProc{cmd: cmd, lines: make(chan fleetLine, 1<<16), done: make(chan struct{}), errb: &testenv.Buffer{}}
	cmd.Stderr = p.errb
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	if p.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
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
// do sends a rounds machine a command and returns its answer.
func (p *fleetProc) do(t testing.TB, command string) fleetLine {
	t.Helper()
	_, err := io.WriteString(p.in, command+"\n")
	require.NoError(t, err)
	l := p.next(t, 2*time.Minute)
	require.Empty(t, l.Message, command)
	return l
}

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
