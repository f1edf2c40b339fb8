package native

import (
	"bufio"
	"context"
	"crypto/subtle"
	"io"
	"net/url"
	"strings"
	"unicode"
)

// maxPasted bounds one pasted line: a redirect address with a code and a state is a few
// hundred bytes; anything much longer is not one.
const maxPasted = 8 << 10

// pastedLine is one line of Options.Paste (tooLong: it exceeded maxPasted; its text was
// dropped).
type pastedLine struct {
	text    string
	tooLong bool
}

// pasteReader reads Options.Paste line by line for the waits of paste mode. One goroutine
// per shell reads, and hands each line to whichever wait asks for it, so that no line is
// lost between two authorizations; lines is closed when the input ends.
type pasteReader struct {
	lines chan pastedLine
}

func (s *Shell) pastes() *pasteReader {
	s.pasteOnce.Do(func() {
		s.paster = &pasteReader{lines: make(chan pastedLine)}
		go s.paster.read(s.opts.Paste)
	})
	return s.paster
}

func (p *pasteReader) read(r io.Reader) {
	defer close(p.lines)
	br := bufio.NewReaderSize(r, 4096)
	for {
		var b strings.Builder
		tooLong := false
		var err error
		for {
			var chunk []byte
			var more bool
			chunk, more, err = br.ReadLine()
			if !tooLong && b.Len()+len(chunk) <= maxPasted {
				b.Write(chunk)
			} else {
				tooLong, b = true, strings.Builder{}
			}
			if err != nil || !more {
				break
			}
		}
		if b.Len() > 0 || tooLong {
			p.lines <- pastedLine{text: b.String(), tooLong: tooLong}
		}
		if err != nil {
			return
		}
	}
}

// feed checks pasted lines for the callback until one is accepted (it is then the
// callback's result), stop is closed or the caller cancels; a refused line is answered
// (refused) with why, never with what was pasted. The returned channel is closed when the input
// ends: nothing more can be pasted.
func (p *pasteReader) feed(ctx context.Context, cb *callback, refused func(why string), stop <-chan struct{}) <-chan struct{} {
	ended := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case l, ok := <-p.lines:
				if !ok {
					close(ended)
					return
				}
				res, why := cb.pasted(l)
				switch {
				case res != nil:
					cb.result <- res
					return
				case why != "":
					refused(why)
				}
			}
		}
	}()
	return ended
}

// pasted checks a pasted redirect address as the listener checks a callback: the exact
// redirect URI (scheme, host with port, path), no credentials or fragment, exactly one
// state equal to the authorization's (constant time), single use. It returns the
// callback's parameters, or why the line is refused ("" for a blank line). The reasons
// never repeat what was pasted.
func (cb *callback) pasted(l pastedLine) (callbackResult, string) {
	text := strings.TrimSpace(l.text)
	switch {
	case l.tooLong:
		return nil, "it is longer than any redirect address"
	case text == "":
		return nil, ""
	case strings.ContainsFunc(text, unicode.IsControl):
		return nil, "it holds control characters"
	}
	u, err := url.Parse(text)
	if err != nil || !u.IsAbs() {
		return nil, "it is not an address; paste the whole address, starting with " + cb.redirectURI
	}
	if u.Scheme != "http" || u.Host != cb.host || u.Path != "/callback" || u.User != nil || u.Opaque != "" || u.RawPath != "" {
		return nil, "it is not this authorization's redirect address, which starts with " + cb.redirectURI
	}
	if u.Fragment != "" || strings.Contains(text, "#") {
		return nil, "it carries a fragment"
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, "its query is malformed"
	}
	got, want := q.Get("state"), cb.state.Load()
	if want == nil || len(q["state"]) != 1 || subtle.ConstantTimeCompare([]byte(got), []byte(*want)) != 1 {
		if len(q["state"]) == 0 {
			return nil, "it carries no state"
		}
		return nil, "its state is not this authorization's"
	}
	if !cb.accepted.CompareAndSwap(false, true) {
		return nil, "this authorization was already completed"
	}
	return callbackParams(q), ""
}
