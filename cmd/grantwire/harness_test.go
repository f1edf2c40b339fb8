package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/hostabi/memhost"
	"github.com/grantwire/grantwire/shells/native"
)

// testWorld is an in-memory world (hostabi/memhost) behind the CLI's shell seam: every
// invocation of gw runs the real command tree, policy engine, driver and host on it, with
// the OS shell replaced by the world's capabilities. The OAuth capability follows the
// native shell's contract for Options: it writes the URL to Prompt, opens it with Browser
// when there is one, and reports interactive_required when there is neither a browser nor
// an interactive session.
type testWorld struct {
	t    *testing.T
	w    *memhost.World
	home string

	mu      sync.Mutex
	opened  []native.Options // the Options of every shell opened
	browsed []string         // URLs given to the browser
	// authorize, when set, replaces the world's authorization (after the prompt).
	authorize func(ctx context.Context) hostabi.AuthResult
	// env is the process environment the CLI sees.
	env map[string]string
	// onOpen, when set, runs when the CLI opens its shell (while the command runs).
	onOpen func(native.Options)
}

func newWorld(t *testing.T) *testWorld {
	t.Helper()
	return &testWorld{t: t, w: memhost.New(time.Unix(1_790_000_000, 0), 11), home: t.TempDir(), env: map[string]string{}}
}

type memShell struct{ caps hostabi.Capabilities }

func (m memShell) Capabilities() hostabi.Capabilities { return m.caps }
func (m memShell) Close() error                       { return nil }

type promptingOAuth struct {
	tw   *testWorld
	opts native.Options
}

func (p promptingOAuth) Refresh(ctx context.Context, c hostabi.Connector, cl hostabi.Client, rt string) hostabi.TokenResponse {
	return p.tw.w.Server.Refresh(ctx, c, cl, rt)
}

func (p promptingOAuth) Authorize(ctx context.Context, c hostabi.Connector, cl hostabi.Client, scopes []string) hostabi.AuthResult {
	if p.opts.Browser == nil && !p.opts.Interactive {
		return hostabi.AuthResult{Status: hostabi.AuthInteractiveRequired}
	}
	u := c.AuthorizationURL + "?client_id=" + cl.ID + "&scope=" + strings.Join(scopes, "+")
	if p.opts.Browser != nil {
		_ = p.opts.Browser(u)
	}
	fmt.Fprintf(p.opts.Prompt, "Open %s\n", u)
	p.tw.mu.Lock()
	f := p.tw.authorize
	p.tw.mu.Unlock()
	if f != nil {
		return f(ctx)
	}
	return p.tw.w.Server.Authorize(ctx, c, cl, scopes)
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
	var stdout, stderr bytes.Buffer
	passwords := append([]string(nil), inv.password...)
	e := env{
		Stdin: strings.NewReader(inv.stdin), Stdout: &stdout, Stderr: &lockedWriter{w: &stderr},
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
			caps.Agents = o.Agents
			caps.Catalog = o.Catalog
			caps.OAuth = promptingOAuth{tw: tw, opts: o}
			return memShell{caps}, nil
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

// lockedWriter serialises writes (the spinner writes from its own goroutine).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// everything returns every byte the world holds outside the keyring (ledgers and events)
// plus an invocation's output, for secret-leak checks.
func (tw *testWorld) everything(r ...result) string {
	var b strings.Builder
	for _, name := range []string{hostabi.LedgerGrants, hostabi.LedgerActivations, hostabi.LedgerState, hostabi.LedgerMCPServers} {
		b.Write(tw.w.Ledger(name))
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
