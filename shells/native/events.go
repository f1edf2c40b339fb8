package native

import (
	"sync"
	"sync/atomic"

	"github.com/grantwire/grantwire/hostabi"
)

// Bus is the Events capability: an in-process publish/subscribe bus. Emit never blocks:
// each subscriber has a buffer, and an event that does not fit is dropped for that
// subscriber (and counted in Dropped). A REST/SSE surface subscribes once per client.
type Bus struct {
	mu      sync.Mutex
	subs    map[*subscription]struct{}
	dropped atomic.Int64
}

type subscription struct {
	ch     chan hostabi.Event
	closed bool
}

var _ hostabi.Events = (*Bus)(nil)

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[*subscription]struct{}{}} }

// Emit implements hostabi.Events: delivers e to every subscriber without blocking.
func (b *Bus) Emit(e hostabi.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.ch <- e:
		default:
			b.dropped.Add(1)
		}
	}
}

// Subscribe returns a channel receiving every event emitted from now on, buffered for
// buffer events (64 when buffer <= 0), and a function that ends the subscription and
// closes the channel. Events a slow subscriber has no room for are dropped.
func (b *Bus) Subscribe(buffer int) (<-chan hostabi.Event, func()) {
	if buffer <= 0 {
		buffer = 64
	}
	s := &subscription{ch: make(chan hostabi.Event, buffer)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if !s.closed {
			s.closed = true
			delete(b.subs, s)
			close(s.ch)
		}
	}
}

// Dropped is how many deliveries were dropped because a subscriber's buffer was full.
func (b *Bus) Dropped() int64 { return b.dropped.Load() }
