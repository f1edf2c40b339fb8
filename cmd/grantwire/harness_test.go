package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/fixes"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

// testWorld is an in-memory world (internal/testworld/memhost) behind the CLI's shell seam: every
// invocation of gw runs the real command tree, policy engine, driver and host on it, with
// the OS shell's keyring, locks, HTTP and loopback replaced by the world's (the files are
// the OS shell's, under the test's home). The loopback follows the native shell's contract
// for Options: it writes the URL to Prompt, opens it with Browser when there is one, and
// is unavailable when there is neither a browser nor an interactive session.
type testWorld struct {
	t    *testing.T
	w    *memhost.World
	home string

	mu      sync.Mutex
	opened  []native.Options // the Options of every shell opened
	browsed []string         // URLs given to the browser
	// authorize, when set, runs after the prompt instead of the world's simulated user; an
	// error it returns ends the wait (the caller's cancellation, say).
	authorize func(ctx context.Context) error
	// env is the process environment the CLI sees.
	env map[string]string
	// onOpen, when set, runs when the CLI opens its shell (while the command runs).
	onOpen func(native.Options)
}

func newWorld(t *testing.T) *testWorld {
	t.Helper()
	w := memhost.New(time.Unix(1_790_000_000, 0), 11)
	memshell.Serve(w, catalog.Default())
	return &testWorld{t: t, w: w, home: t.TempDir(), env: map[string]string{}}
}

type memShell struct {
	caps  hostabi.Capabilities
	close func() error
}

func (m memShell) Capabilities() hostabi.Capabilities { return m.caps }
func (m memShell) Close() error                       { return m.close() }

// promptingLoopback is the world's loopback behind the native shell's contract.
type promptingLoopback struct {
	tw    *testWorld
	opts  native.Options
	inner hostabi.Loopback
}

func (p promptingLoopback) Open(ctx context.Context, connector, mode string) (hostabi.Callback, error) {
	if p.opts.Browser == nil && !p.opts.Interactive {
		return nil, fmt.Errorf("no browser: %w", hostabi.ErrUnavailable)
	}
	cb, err := p.inner.Open(ctx, connector, mode)
	if err != nil {
		return nil, err
	}
	return promptingCallback{cb, p}, nil
}

type promptingCallback struct {
	hostabi.Callback
	p promptingLoopback
}

func (c promptingCallback) Wait(ctx context.Context, a hostabi.Authorization) (map[string]string, error) {
	if c.p.opts.Browser != nil {
		_ = c.p.opts.Browser(a.URL)
	}
	fmt.Fprintf(c.p.opts.Prompt, "Open %s\n", a.URL)
	c.p.tw.mu.Lock()
	f := c.p.tw.authorize
	c.p.tw.mu.Unlock()
	if f != nil {
		if err := f(ctx); err != nil {
			return nil, err
		}
	}
	return c.Callback.Wait(ctx, a)
}

type result struct {
	code           int
	stdout, stderr string
}

// run options of one invocation.
type invocation struct {
	stdin                          string
	stdinTTY, stdoutTTY, stderrTTY bool
	password                       []string // answers to hidden prompts
	noBrowser                      bool     // the session has no browser at all
	lookPath                       func(string) (string, error)
	ctx                            context.Context
}

func (tw *testWorld) gw(args ...string) result {
	return tw.run(invocation{}, args...)
}

func (tw *testWorld) gwIn(stdin string, args ...string) result {
	return tw.run(invocation{stdin: stdin}, args...)
}

func (tw *testWorld) run(inv invocation, args ...string) result {
	tw.t.Helper()
	var stdout bytes.Buffer
	var stderr testenv.Buffer // the spinner writes from its own goroutine
	passwords := append([]string(nil), inv.password...)
	e := env{
		Stdin: strings.NewReader(inv.stdin), Stdout: &stdout, Stderr: &stderr,
		StdinTTY: inv.stdinTTY, StdoutTTY: inv.stdoutTTY, StderrTTY: inv.stderrTTY,
		Getenv: func(k string) string {
			tw.mu.Lock()
			defer tw.mu.Unlock()
			return tw.env[k]
		},
		NewShell: func(o native.Options) (Shell, error) {
			tw.mu.Lock()
			tw.opened = append(tw.opened, o)
			onOpen := tw.onOpen
			tw.mu.Unlock()
			if onOpen != nil {
				onOpen(o)
			}
			caps := tw.w.Capabilities(o.Service)
			real, err := native.New(native.Options{Home: o.Home, NoWatch: true})
			if err != nil {
				return nil, err
			}
			caps.Files = real.Capabilities().Files
			caps.Loopback = promptingLoopback{tw: tw, opts: o, inner: caps.Loopback}
			return memShell{caps, real.Close}, nil
		},
		Browser: func(func(string) string) func(string) error {
			if inv.noBrowser {
				return nil
			}
			return func(u string) error {
				tw.mu.Lock()
				defer tw.mu.Unlock()
				tw.browsed = append(tw.browsed, u)
				return nil
			}
		},
		LookPath: inv.lookPath,
		ReadPassword: func() (string, error) {
			if len(passwords) == 0 {
				return "", io.EOF
			}
			p := passwords[0]
			passwords = passwords[1:]
			return p, nil
		},
		UserHome: func() (string, error) { return tw.home, nil },
	}
	if e.LookPath == nil {
		e.LookPath = func(name string) (string, error) { return "/usr/bin/" + name, nil }
	}
	ctx := inv.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	code := run(ctx, args, e)
	fixes.Record(tw.t.Name(), stdout.String()+"\n"+stderr.String())
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// lastOptions returns the Options of the last shell opened.
func (tw *testWorld) lastOptions() native.Options {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if len(tw.opened) == 0 {
		tw.t.Fatal("no shell was opened")
	}
	return tw.opened[len(tw.opened)-1]
}

func (tw *testWorld) setenv(k, v string) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.env[k] = v
}

// everything returns every byte the world holds outside the keyring (ledgers and events)
// plus an invocation's output, for secret-leak checks.
func (tw *testWorld) everything(r ...result) string {
	var b strings.Builder
	for _, name := range []string{layout.Grants, layout.Activations, layout.State, layout.MCPServers} {
		doc, _ := os.ReadFile(filepath.Join(tw.home, ".grantwire", filepath.FromSlash(name)))
		b.Write(doc)
	}
	for _, ev := range tw.w.Events() {
		b.WriteString(ev.Type)
		b.Write(ev.Payload)
	}
	for _, x := range r {
		b.WriteString(x.stdout)
		b.WriteString(x.stderr)
	}
	return b.String()
}

var errNotFound = errors.New("not found")
