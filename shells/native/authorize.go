package native

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/grantwire/grantwire/hostabi"
)

// loopbackCap is the Loopback capability: the one-shot 127.0.0.1 listener of an
// authorization (loopback.go), the browser (Options.Browser) and what the user reads while
// it waits (Options.Prompt). The authorization URL, the state, the timeout and what the
// callback means are the core's: this only shows, listens and compares the state.
type loopbackCap struct{ s *Shell }

var _ hostabi.Loopback = loopbackCap{}

// Open implements hostabi.Loopback. Without a browser (the shell's, or the operation's own
// given with hostabi.WithBrowser) and without a person at a terminal, nobody can complete
// an authorization: it says so before anything is started.
func (l loopbackCap) Open(ctx context.Context, connector string) (hostabi.Callback, error) {
	if l.s.opts.Browser == nil && hostabi.BrowserFrom(ctx) == nil && !l.s.opts.Interactive {
		return nil, fmt.Errorf("native: no browser can be opened and nobody is at a terminal to open the URL: %w", hostabi.ErrUnavailable)
	}
	cb, err := listenCallback()
	if err != nil {
		return nil, &hostabi.HostError{Code: hostabi.HostErrIO, Detail: "could not listen on 127.0.0.1: " + err.Error()}
	}
	return &waiter{cb: cb, s: l.s}, nil
}

// waiter is an open listener of one authorization.
type waiter struct {
	cb *callback
	s  *Shell
}

func (w *waiter) RedirectURI() string { return w.cb.redirectURI }
func (w *waiter) Close() error        { w.cb.close(); return nil }

// Wait implements hostabi.Callback: it opens the browser (or prints the URL), then waits
// for the callback whose state matches, the timeout or the caller's cancellation.
func (w *waiter) Wait(ctx context.Context, authURL, state, connector string, timeout time.Duration) (map[string]string, error) {
	if state == "" {
		return nil, errors.New("native: an authorization needs a state")
	}
	w.cb.state.Store(&state)
	opts := w.s.opts
	prompt := opts.Prompt
	w.cb.setOnRefused(func(reason string) {
		fmt.Fprintf(prompt, "A callback was refused (%s); still waiting for the authorization.\n", reason)
	})
	browser := opts.Browser
	if show := hostabi.BrowserFrom(ctx); show != nil {
		browser = show // the caller's own (a server hands the URL to its page)
	}
	opened := browser != nil && browser(authURL) == nil
	if !opened && !opts.Interactive {
		return nil, fmt.Errorf("native: the browser could not be opened and nobody is at a terminal: %w", hostabi.ErrUnavailable)
	}
	if opened {
		fmt.Fprintf(prompt, "The browser shows the %s authorization (waiting up to %s). If it did not open, open:\n\n  %s\n\n", connector, timeout, authURL)
	} else {
		fmt.Fprintf(prompt, "To authorize %s, open this URL in a browser on this machine (waiting up to %s):\n\n  %s\n\n", connector, timeout, authURL)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case res := <-w.cb.result:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		fmt.Fprintf(prompt, "No authorization arrived within %s.\n", timeout)
		return nil, context.DeadlineExceeded
	}
}
