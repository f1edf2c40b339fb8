package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
)

// An events-only server: no client (the event routes use none).
func eventServer(t testing.TB, buffer int, heartbeat time.Duration) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := newServer(ln, Config{SubscriberBuffer: buffer, Heartbeat: heartbeat})
	go func() { _ = s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

type stream struct {
	lines chan string
	done  chan struct{}
}

func openStream(t testing.TB, s *Server) *stream {
	t.Helper()
	resp, err := http.Get(s.URL() + "/api/connectors/events")
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	st := &stream{lines: make(chan string, 100000), done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); l != "" {
				st.lines <- l
			}
		}
	}()
	return st
}

func (st *stream) until(t testing.TB, want string) []string {
	t.Helper()
	var seen []string
	deadline := time.After(5 * time.Second)
	for {
		select {
		case l := <-st.lines:
			seen = append(seen, l)
			if strings.Contains(l, want) {
				return seen
			}
		case <-deadline:
			t.Fatalf("no line with %q; saw %q", want, seen)
		}
	}
}

func waitSubscribers(t testing.TB, s *Server, n int) {
	t.Helper()
	for i := 0; s.hub.count() < n; i++ {
		require.Less(t, i, 500, "subscribers never arrived")
		time.Sleep(10 * time.Millisecond)
	}
}

// publishEvent injects an event as the shell would.
func (s *Server) publishEvent(e hostabi.Event) { s.hub.publish(frame(e.Type, e.Payload)) }

func event(i int) hostabi.Event {
	return hostabi.Event{Type: "connector.grant.changed", Payload: json.RawMessage(fmt.Sprintf(`{"connector_id":"c","agent_id":"builtin:chat","scopes":["s%d"]}`, i))}
}

// Frames are `data: {"type", "payload"}` with a blank line; comments are heartbeats.
func TestEventFramesAndHeartbeats(t *testing.T) {
	s := eventServer(t, 8, 50*time.Millisecond)
	st := openStream(t, s)
	st.until(t, ": connected")
	waitSubscribers(t, s, 1)
	s.publishEvent(event(1))
	require.Equal(t, `data: {"type":"connector.grant.changed","payload":{"connector_id":"c","agent_id":"builtin:chat","scopes":["s1"]}}`, st.until(t, "data: ")[0])
	st.until(t, ": ping")
}

// A subscriber that falls behind its bounded queue loses events, is told so
// (events.dropped, so its page reloads), and never slows the others or the publisher.
func TestASlowSubscriberIsToldItDroppedEvents(t *testing.T) {
	s := eventServer(t, 4, time.Hour)
	sub, ok := s.hub.subscribe() // a subscriber nobody reads
	require.True(t, ok)
	fast := openStream(t, s)
	fast.until(t, ": connected")
	waitSubscribers(t, s, 2)
	start := time.Now()
	for i := range 100 {
		s.publishEvent(event(i))
	}
	require.Less(t, time.Since(start), time.Second, "publishing waited for a slow subscriber")
	require.Len(t, sub.ch, 4, "the slow subscriber's queue is bounded")
	require.True(t, sub.lagged.Load())
	// the reading stream also had room for 4 of a burst of 100: it is told, then goes on
	fast.until(t, "events.dropped")
	// once its queue has room again (it may still be draining the burst), the next event reaches it
	var fastSub *subscriber
	s.hub.mu.Lock()
	for x := range s.hub.subs {
		if x != sub {
			fastSub = x
		}
	}
	s.hub.mu.Unlock()
	require.NotNil(t, fastSub)
	for i := 0; len(fastSub.ch) > 0; i++ {
		require.Less(t, i, 500, "the reading stream never drained its queue")
		time.Sleep(10 * time.Millisecond)
	}
	s.publishEvent(event(200))
	fast.until(t, `"s200"`)
	s.hub.unsubscribe(sub)
}

// Shutdown ends every stream.
func TestShutdownEndsStreams(t *testing.T) {
	s := eventServer(t, 8, time.Hour)
	streams := []*stream{openStream(t, s), openStream(t, s)}
	waitSubscribers(t, s, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	for _, st := range streams {
		select {
		case <-st.done:
		case <-time.After(5 * time.Second):
			t.Fatal("a stream stayed open after Shutdown")
		}
	}
}

// BenchmarkSSEFanOut100: one event delivered to 100 subscribers over real loopback HTTP
// connections (each op: publish, then every subscriber has read the frame).
func BenchmarkSSEFanOut100(b *testing.B) {
	const subs = 100
	s := eventServer(b, 1024, time.Hour)
	var counts [subs]chan struct{}
	var wg sync.WaitGroup
	for i := range subs {
		st := openStream(b, s)
		counts[i] = make(chan struct{}, 1<<16)
		wg.Add(1)
		go func(st *stream, c chan struct{}) {
			defer wg.Done()
			for {
				select {
				case l := <-st.lines:
					if strings.HasPrefix(l, "data: ") {
						c <- struct{}{}
					}
				case <-st.done:
					return
				}
			}
		}(st, counts[i])
	}
	waitSubscribers(b, s, subs)
	frame := event(1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.publishEvent(frame)
		for i := range subs {
			<-counts[i]
		}
	}
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Shutdown(ctx)
	wg.Wait()
}
