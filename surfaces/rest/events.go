package rest

import (
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// hub fans events out to SSE subscribers. Each frame is encoded once; every subscriber has
// a bounded queue, and one that has no room loses the frame and is told so (events.dropped)
// as soon as it has room again, so its page reloads instead of showing a stale state.
type hub struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
	buffer int
}

type subscriber struct {
	ch     chan []byte
	lagged atomic.Bool
	done   chan struct{}
}

func newHub(buffer int) *hub { return &hub{subs: map[*subscriber]struct{}{}, buffer: buffer} }

// subscribe adds a subscriber; ok is false once the hub is closed.
func (h *hub) subscribe() (*subscriber, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	s := &subscriber{ch: make(chan []byte, h.buffer), done: make(chan struct{})}
	h.subs[s] = struct{}{}
	return s, true
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.done)
	}
}

// publish delivers one encoded frame to every subscriber without blocking.
func (h *hub) publish(frame []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.ch <- frame:
		default:
			s.lagged.Store(true)
		}
	}
}

// count is the number of subscribers.
func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// close ends every subscription: their streams end.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.done)
	}
}

// frame encodes an event as one SSE frame: data: {"type", "payload"} and a blank line
// (no event: line, as GAIA frames them).
func frame(typ string, payload any) []byte {
	b, err := json.Marshal(struct {
		Type    string `json:"type"`
		Payload any    `json:"payload"`
	}{typ, payload})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "events.error", "payload": map[string]string{}})
	}
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

// emit publishes an event of this server's own (the outcome of an authorization).
func (s *Server) emit(typ string, payload any) { s.hub.publish(frame(typ, payload)) }

// feed moves the shell's events (the operations', and the activations other processes
// change) to the hub, until the server stops.
func (s *Server) feed() {
	defer close(s.feedDone)
	if s.cfg.Events == nil {
		<-s.base.Done()
		return
	}
	ch, cancel := s.cfg.Events.Subscribe(1024)
	defer cancel()
	for {
		select {
		case <-s.base.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			s.hub.publish(frame(ev.Type, ev.Payload))
			if ev.Type != healthEvent {
				s.wakeHealth()
			}
		}
	}
}

var droppedFrame = frame("events.dropped", map[string]string{"reason": "this stream fell behind; reload the state"})

// events serves GET /api/connectors/events: text/event-stream, a retry hint, then every
// event as it happens, a comment as heartbeat, until the client leaves or the server stops.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.problem(w, "INTERNAL", "streaming is not supported by this connection", "")
		return
	}
	sub, ok := s.hub.subscribe()
	if !ok {
		s.problem(w, "STOPPING", "the server is stopping", "")
		return
	}
	defer s.hub.unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte("retry: 2000\n: connected\n\n")); err != nil {
		return
	}
	flusher.Flush()
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sub.done:
			return
		case <-beat.C:
			if _, err := w.Write([]byte(": ping\n\n")); err != nil {
				return
			}
		case f := <-sub.ch:
			if _, err := w.Write(f); err != nil {
				return
			}
			// Whatever else is queued goes in the same flush.
			for more := true; more; {
				select {
				case f := <-sub.ch:
					if _, err := w.Write(f); err != nil {
						return
					}
				default:
					more = false
				}
			}
		}
		if sub.lagged.Swap(false) {
			if _, err := w.Write(droppedFrame); err != nil {
				return
			}
		}
		flusher.Flush()
	}
}
