package mcpremote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/oauth2"
)

// The standalone SSE stream (MCP streamable HTTP §2.2.3, "listening for messages from the
// server"): what a server sends outside any call (a log message, a list-changed
// notification, a request such as an elicitation or a ping made from a detached context)
// arrives on a GET the client opens after initialization. The SDK's transport opens it only
// inside its own client session, which a message-level proxy has not, so the proxy opens
// it itself, with the same HTTP client (the negotiated MCP-Protocol-Version on it), the
// session's id and the agent's bearer token from the Handler (the gate runs for it as for
// every request; a 401 or 403 goes to Handler.Authorize as a POST's does).

const (
	// maxEventBytes bounds one server-sent event (the SDK's DefaultMaxEventSize).
	maxEventBytes = 16 << 20
	// standaloneRetries bounds the reconnections in a row that deliver nothing and stay open
	// less than standaloneLived.
	standaloneRetries = 5
	// standaloneLived: a stream open this long was not a failure, even with no message (a
	// server may close an idle stream now and then).
	standaloneLived = 10 * time.Second
	// standaloneDelay is the wait before a reconnection when the server set no retry.
	standaloneDelay = time.Second
	// noStandaloneSince: protocol versions from this one have no standalone GET stream
	// (SEP-2575); the SDK's client opens none either.
	noStandaloneSince = "2026-07-28"
)

// standalone is the proxy's standalone SSE stream of one session.
type standalone struct {
	url       string
	hc        *http.Client
	h         *Handler
	sessionID string
	// deliver writes a message from the server to the MCP client.
	deliver func(context.Context, jsonrpc.Message) error
	// report is told why the stream stopped when the server did not just decline it.
	report func(error)
	// opened is closed once the first GET has its answer (or failed): the proxy forwards
	// the client's next message only then, so that the stream is open before any request
	// after initialization, as the SDK's own client opens it (a server may route there the
	// answer to a call whose stream it closed).
	opened     chan struct{}
	openedOnce sync.Once
}

// standaloneOpenWait bounds the wait for the first GET's answer.
const standaloneOpenWait = 5 * time.Second

func (s *standalone) markOpened() {
	if s.opened != nil {
		s.openedOnce.Do(func() { close(s.opened) })
	}
}

// errNoStream: the server declined a standalone stream (405, or no event stream), which
// the specification allows, or the session or the gate ended it: the proxy stops asking.
var errNoStream = errors.New("mcpremote: the server offers no standalone stream")

// run keeps the stream open until ctx ends, the server declines it, or it fails
// standaloneRetries times in a row (nothing delivered, closed within standaloneLived). It
// reconnects with Last-Event-ID, so that a server with an event store replays what was
// missed.
func (s *standalone) run(ctx context.Context) {
	var lastID string
	delay := standaloneDelay
	for fails := 0; ; {
		began := time.Now()
		got, id, retry, err := s.once(ctx, lastID)
		if id != "" {
			lastID = id
		}
		if retry > 0 {
			delay = retry
		}
		switch {
		case ctx.Err() != nil, errors.Is(err, errNoStream):
			return
		case got > 0, err == nil && time.Since(began) >= standaloneLived:
			fails = 0
		default:
			fails++
		}
		if fails >= standaloneRetries {
			if err == nil {
				err = errors.New("the stream closed without a message")
			}
			s.report(fmt.Errorf("mcpremote: the server's standalone stream (what it sends outside a call) stopped after %d tries: %w", fails, err))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// once opens the stream and delivers its messages until it ends: how many it delivered,
// the last event id and retry hint seen, and why it ended (nil: the server closed it).
func (s *standalone) once(ctx context.Context, lastID string) (int, string, time.Duration, error) {
	resp, err := s.get(ctx, lastID, true)
	s.markOpened()
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	got := 0
	id, retry, err := readEvents(resp.Body, maxEventBytes, func(data []byte) error {
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return fmt.Errorf("the server sent an event that is not a JSON-RPC message: %w", err)
		}
		got++
		return s.deliver(ctx, msg)
	})
	return got, id, retry, err
}

// get sends the GET; on 401 or 403 the Handler authorizes (a refresh, an authorization or a
// step-up, as for a POST) and it is sent once more.
func (s *standalone) get(ctx context.Context, lastID string, mayAuthorize bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if s.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", s.sessionID)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	tok, err := tokenSource{ctx: ctx, h: s.h}.Token()
	var re *oauth2.RetrieveError
	switch {
	case err == nil:
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	case errors.As(err, &re):
		// Not authorized yet: sent without a token, the server's 401 brings Authorize.
	default:
		return nil, fmt.Errorf("%w: %w", errNoStream, err) // the gate refused: the POSTs report it
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	switch {
	case (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && mayAuthorize:
		if err := s.h.Authorize(ctx, req, resp); err != nil {
			return nil, err
		}
		return s.get(ctx, lastID, false)
	case resp.StatusCode == http.StatusMethodNotAllowed:
		resp.Body.Close()
		return nil, errNoStream
	case resp.StatusCode == http.StatusNotFound && s.sessionID != "":
		resp.Body.Close()
		return nil, fmt.Errorf("%w: the server ended the session", errNoStream)
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
		// As the SDK's client (not strict): a server that answers another 4xx offers none.
		resp.Body.Close()
		return nil, fmt.Errorf("%w (it answered %d)", errNoStream, resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		resp.Body.Close()
		return nil, fmt.Errorf("the server answered %d", resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, errNoStream
	}
	return resp, nil
}

// readEvents reads a text/event-stream (the WHATWG HTML "event stream interpretation"):
// lines end with CRLF, LF or CR; a blank line dispatches the event; "data" lines are
// joined with LF; events named other than "message", and events without data, are not
// messages. fn gets each message's data. It returns the last event id, the last retry
// hint and why it stopped (nil at the end of the stream; an event over max bytes is an
// error, as is fn's).
func readEvents(r io.Reader, max int, fn func(data []byte) error) (lastID string, retry time.Duration, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), max)
	sc.Split(sseLines)
	var (
		data    []byte
		hasData bool
		name    string
	)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			// An event with empty data is a priming event (SEP-1699: the server gives the
			// stream an event id, and a retry delay, before it has a message): no message.
			if hasData && len(bytes.TrimSpace(data)) > 0 && (name == "" || name == "message") {
				if err := fn(data); err != nil {
					return lastID, retry, err
				}
			}
			data, hasData, name = data[:0], false, ""
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "": // a comment
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
			if len(data) > max {
				return lastID, retry, fmt.Errorf("an event over %d bytes", max)
			}
		case "event":
			name = string(value)
		case "id":
			if !bytes.ContainsRune(value, 0) {
				lastID = string(value)
			}
		case "retry":
			if n, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				retry = time.Duration(n) * time.Millisecond
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return lastID, retry, fmt.Errorf("an event line over %d bytes", max)
		}
		return lastID, retry, err
	}
	return lastID, retry, nil
}

// sseLines splits at CRLF, LF or CR.
func sseLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if !atEOF {
			return 0, nil, nil // a CR at the end: an LF may follow
		}
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
