package native

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	say := w.s.say
	w.cb.setOnRefused(func(reason string) {
		say(PromptEvent{Kind: PromptNotice, Connector: a.Connector},
			fmt.Sprintf("A callback was refused (%s); still waiting for the authorization.\n", reason))
	})
	var ended <-chan struct{}
	stop := make(chan struct{})
	defer close(stop)
	switch {
	case w.paste:
		text := fmt.Sprintf("To authorize %s, open this URL in a browser on any machine (waiting up to %s):\n\n  %s\n\n", a.Connector, a.Timeout, a.URL) +
			"After you approve, the browser goes to an address on 127.0.0.1 that does not load (unless that browser runs here).\nCopy that address from the address bar, paste it here and press Enter:\n"
		if a.Alternative != "" {
			text += fmt.Sprintf("(Or press Ctrl-C and run: %s)\n", a.Alternative)
		}
		say(PromptEvent{Kind: PromptPaste, Connector: a.Connector, URL: a.URL, TimeoutSeconds: int(a.Timeout.Seconds()), Alternative: a.Alternative}, text)
		ended = w.s.pastes().feed(ctx, w.cb, func(why string) {
			say(PromptEvent{Kind: PromptNotice, Connector: a.Connector},
				fmt.Sprintf("The pasted address was refused (%s); paste the address the browser shows after you approve.\n", why))
		}, stop)
	default:
		browser := opts.Browser
		if show := hostabi.BrowserFrom(ctx); show != nil {
			browser = show // the caller's own (a server hands the URL to its page)
		}
		opened := browser != nil && browser(a.URL) == nil
		if !opened && !opts.Interactive {
			return nil, fmt.Errorf("native: the browser could not be opened and nobody is at a terminal: %w", hostabi.ErrUnavailable)
		}
		ev := PromptEvent{Kind: PromptBrowser, Connector: a.Connector, URL: a.URL, TimeoutSeconds: int(a.Timeout.Seconds()), Opened: opened}
		if opened {
			say(ev, fmt.Sprintf("The browser shows the %s authorization (waiting up to %s). If it did not open, open:\n\n  %s\n\n", a.Connector, a.Timeout, a.URL))
		} else {
			text := fmt.Sprintf("To authorize %s, open this URL in a browser on this machine (waiting up to %s):\n\n  %s\n\n", a.Connector, a.Timeout, a.URL)
			if a.Alternative != "" {
				ev.Alternative = a.Alternative
				text += fmt.Sprintf("No browser on this machine? Press Ctrl-C and run: %s\n\n", a.Alternative)
			}
			say(ev, text)
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
			say(PromptEvent{Kind: PromptNotice, Connector: a.Connector},
				fmt.Sprintf("The input ended; still waiting for a browser to come back to %s.\n", w.cb.redirectURI))
			ended = nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			say(PromptEvent{Kind: PromptNotice, Connector: a.Connector}, fmt.Sprintf("No authorization arrived within %s.\n", a.Timeout))
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
	if c, ok := p.s.opts.Prompt.(Countdown); ok {
		c.Countdown(d.ExpiresIn)
	}
	text := fmt.Sprintf("To authorize %s, open %s on any device and enter the code:\n\n  %s\n\n", d.Connector, d.VerificationURI, d.UserCode)
	if d.VerificationURIComplete != "" {
		text += fmt.Sprintf("(or open %s, which carries the code)\n", d.VerificationURIComplete)
	}
	text += fmt.Sprintf("The code can be used for %s.\n", d.ExpiresIn.Round(time.Second))
	p.s.say(PromptEvent{Kind: PromptDevice, Connector: d.Connector, URL: d.VerificationURI, URLComplete: d.VerificationURIComplete,
		UserCode: d.UserCode, TimeoutSeconds: int(d.ExpiresIn.Seconds())}, text)
	return nil
}

// Kinds of PromptEvent.
const (
	PromptBrowser = "browser" // open URL (Opened: the shell opened it)
	PromptPaste   = "paste"   // open URL anywhere, then paste the redirect address on Options.Paste
	PromptDevice  = "device"  // open URL on any device and enter UserCode
	PromptNotice  = "notice"  // something that happened while waiting (Message says what)
)

// PromptEvent is one thing the user must read while an authorization waits (Options.Prompts).
type PromptEvent struct {
	Kind           string `json:"kind"`
	Connector      string `json:"connector,omitempty"`
	URL            string `json:"url,omitempty"`
	URLComplete    string `json:"url_complete,omitempty"`
	UserCode       string `json:"user_code,omitempty"`
	Opened         bool   `json:"opened,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
	// Alternative is a command that authorizes without this wait (connect --device).
	Alternative string `json:"alternative,omitempty"`
	// Message is the text the shell prints on Options.Prompt without Prompts.
	Message string `json:"message"`
}

// say tells the user ev: to Options.Prompts when set, else text on Options.Prompt.
func (s *Shell) say(ev PromptEvent, text string) {
	if s.opts.Prompts != nil {
		ev.Message = strings.TrimSpace(text)
		s.opts.Prompts(ev)
		return
	}
	fmt.Fprint(s.opts.Prompt, text)
}
