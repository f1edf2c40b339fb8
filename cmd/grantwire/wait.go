package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress is the Prompt the OS shell writes to while an authorization waits (the URL to
// open). The first write is preceded by a line saying what grantwire waits for; on a
// terminal a spinner with a countdown then runs on the last line until Stop, which clears
// it. Off a terminal the text passes through unchanged and nothing is redrawn.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	what    string
	where   string // "in the browser", "on another device"
	timeout time.Duration
	now     func() time.Time

	started  bool
	spinning bool
	stopped  bool
	deadline time.Time
	frame    int
	done     chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const spinnerTick = 120 * time.Millisecond

func newProgress(w io.Writer, tty bool, what string, timeout time.Duration) *progress {
	return &progress{w: w, tty: tty, what: what, where: "in the browser", timeout: timeout, now: time.Now, done: make(chan struct{})}
}

// Countdown implements native.Countdown: the wait ends sooner (a device code that expires
// before the timeout). Called before the first write, it sets what the header says.
func (p *progress) Countdown(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d <= 0 || d >= p.timeout {
		return
	}
	p.timeout = d
	if p.started {
		p.deadline = p.now().Add(d)
	}
}

func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return p.w.Write(b)
	}
	p.clear()
	if !p.started {
		p.started = true
		p.deadline = p.now().Add(p.timeout)
		fmt.Fprintf(p.w, "grantwire: waiting for %s %s (up to %s; Ctrl-C cancels)\n", p.what, p.where, p.timeout.Round(time.Second))
	}
	n, err := p.w.Write(b)
	if p.tty {
		if !p.spinning {
			p.spinning = true
			go p.spin()
		}
		p.draw()
	}
	return n, err
}

func (p *progress) spin() {
	t := time.NewTicker(spinnerTick)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			if !p.stopped {
				p.frame++
				p.clear()
				p.draw()
			}
			p.mu.Unlock()
		}
	}
}

// draw writes the spinner line (no newline); clear erases it. Both hold p.mu.
func (p *progress) draw() {
	left := p.deadline.Sub(p.now()).Round(time.Second)
	if left < 0 {
		left = 0
	}
	fmt.Fprintf(p.w, "%s waiting for %s · %d:%02d left · Ctrl-C cancels",
		spinnerFrames[p.frame%len(spinnerFrames)], p.what, int(left.Minutes()), int(left.Seconds())%60)
}

func (p *progress) clear() {
	if p.spinning {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// Stop ends the spinner and clears its line. Later writes pass through.
func (p *progress) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	if p.spinning {
		close(p.done)
		p.clear()
	}
}
