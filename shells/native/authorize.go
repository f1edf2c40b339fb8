package native

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/grantwire/grantwire/hostabi"
)

// loopbackCap is the Loopback capability: the one-shot 127.0.0.1 listener of an
// authorization (loopback.go), the browser (Options.Browser), the pasted redirect
// (Options.Paste, paste.go) and what the user reads while it waits (Options.Prompt). The
// authorization URL, the state, the timeout and what the callback means are the core's:
// this only shows, listens, reads what is pasted and compares the state.
type loopbackCap struct{ s *Shell }

var _ hostabi.Loopback = loopbackCap{}

// Open implements hostabi.Loopback. Without a browser (the shell's, or the operation's own
// given with hostabi.WithBrowser) and without a person at a terminal, nobody can complete
// an authorization: it says so before anything is started. In paste mode it needs
// something to read the pasted redirect from (Options.Paste); it listens as well, so a
// browser on this machine completes the authorization directly.
func (l loopbackCap) Open(ctx context.Context, connector, mode string) (hostabi.Callback, error) {
	paste := mode == hostabi.ModePaste
	switch {
	case paste && l.s.opts.Paste == nil:
		return nil, fmt.Errorf("native: there is no input to paste the redirect address into: %w", hostabi.ErrUnavailable)
	case !paste && l.s.opts.Browser == nil && hostabi.BrowserFrom(ctx) == nil && !l.s.opts.Interactive:
		return nil, fmt.Errorf("native: no browser can be opened and nobody is at a terminal to open the URL: %w", hostabi.ErrUnavailable)
	}
	cb, err := listenCallback()
	if err != nil {
		return nil, &hostabi.HostError{Code: hostabi.HostErrIO, Detail: "could not listen on 127.0.0.1: " + err.Error()}
	}
	return &waiter{cb: cb, s: l.s, paste: paste}, nil
}

// waiter is an open listener of one authorization.
type waiter struct {
	cb    *callback
	s     *Shell
	paste bool
}

func (w *waiter) RedirectURI() string { return w.cb.redirectURI }
func (w *waiter) Close() error        { w.cb.close(); return nil }

// Wait implements hostabi.Callback: it opens the browser (or prints the URL), then waits
// for the callback whose state matches (or, in paste mode, for a pasted redirect address
// that passes the same checks), the timeout or the caller's cancellation.
func (w *waiter) Wait(ctx context.Context, a hostabi.Authorization) (map[string]string, error) {
	if a.State == "" {
		return nil, errors.New("native: an authorization needs a state")
	}
	w.cb.state.Store(&a.State)
	opts := w.s.opts
	prompt := opts.Prompt
	w.cb.setOnRefused(func(reason string) {
		fmt.Fprintf(prompt, "A callback was refused (%s); still waiting for the authorization.\n", reason)
	})
	var ended <-chan struct{}
	stop := make(chan struct{})
	defer close(stop)
	switch {
	case w.paste:
		fmt.Fprintf(prompt, "To authorize %s, open this URL in a browser on any machine (waiting up to %s):\n\n  %s\n\n", a.Connector, a.Timeout, a.URL)
		fmt.Fprintf(prompt, "After you approve, the browser goes to an address on 127.0.0.1 that does not load (unless that browser runs here).\nCopy that address from the address bar, paste it here and press Enter:\n")
		if a.Alternative != "" {
			fmt.Fprintf(prompt, "(Or press Ctrl-C and run: %s)\n", a.Alternative)
		}
		ended = w.s.pastes().feed(ctx, w.cb, prompt, stop)
	default:
		browser := opts.Browser
		if show := hostabi.BrowserFrom(ctx); show != nil {
			browser = show // the caller's own (a server hands the URL to its page)
		}
		opened := browser != nil && browser(a.URL) == nil
		if !opened && !opts.Interactive {
			return nil, fmt.Errorf("native: the browser could not be opened and nobody is at a terminal: %w", hostabi.ErrUnavailable)
		}
		if opened {
			fmt.Fprintf(prompt, "The browser shows the %s authorization (waiting up to %s). If it did not open, open:\n\n  %s\n\n", a.Connector, a.Timeout, a.URL)
		} else {
			fmt.Fprintf(prompt, "To authorize %s, open this URL in a browser on this machine (waiting up to %s):\n\n  %s\n\n", a.Connector, a.Timeout, a.URL)
			if a.Alternative != "" {
				fmt.Fprintf(prompt, "No browser on this machine? Press Ctrl-C and run: %s\n\n", a.Alternative)
			}
		}
	}
	timer := time.NewTimer(a.Timeout)
	defer timer.Stop()
	for {
		select {
		case res := <-w.cb.result:
			return res, nil
		case <-ended:
			// Nothing more can be pasted, but the listener still serves: a browser on this
			// machine (or a forwarded port) can complete the authorization until the timeout.
			fmt.Fprintf(prompt, "The input ended; still waiting for a browser to come back to %s.\n", w.cb.redirectURI)
			ended = nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			fmt.Fprintf(prompt, "No authorization arrived within %s.\n", a.Timeout)
			return nil, context.DeadlineExceeded
		}
	}
}

// promptCap is the Prompter capability: it prints where to authorize on another device
// and the code to enter there (RFC 8628 §3.3) for the person at the terminal. A Prompt
// writer that implements Countdown is told how long the code can be used.
type promptCap struct{ s *Shell }

var _ hostabi.Prompter = promptCap{}

// Countdown is implemented by a Prompt writer that shows how long the user has left (the
// CLI's spinner).
type Countdown interface {
	Countdown(d time.Duration)
}

// Show implements hostabi.Prompter.
func (p promptCap) Show(_ context.Context, d hostabi.DevicePrompt) error {
	if !p.s.opts.Interactive {
		return fmt.Errorf("native: nobody is at a terminal to read the code: %w", hostabi.ErrUnavailable)
	}
	w := p.s.opts.Prompt
	if c, ok := w.(Countdown); ok {
		c.Countdown(d.ExpiresIn)
	}
	fmt.Fprintf(w, "To authorize %s, open %s on any device and enter the code:\n\n  %s\n\n", d.Connector, d.VerificationURI, d.UserCode)
	if d.VerificationURIComplete != "" {
		fmt.Fprintf(w, "(or open %s, which carries the code)\n", d.VerificationURIComplete)
	}
	fmt.Fprintf(w, "The code can be used for %s.\n", d.ExpiresIn.Round(time.Second))
	return nil
}
