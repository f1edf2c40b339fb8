package mcpremote

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadEvents: the event stream interpretation the standalone stream reads — every
// line ending, comments, data joined across lines, named events that are not messages,
// events without data or with empty data (priming events), the last id and retry hint, an incomplete event at the end
// dropped, and an event over the bound refused.
func TestReadEvents(t *testing.T) {
	in := ": a comment\r\n" +
		"id: 1\r\ndata: {\"a\":1}\r\n\r\n" +
		"event: message\ndata:{\"b\"\ndata: :2}\n\n" +
		"event: ping\ndata: not a message\n\n" +
		"id: 5\nretry: 500\ndata: \n\n" + // a priming event (SEP-1699): empty data, no message
		"data:\ndata:\n\n" +
		"id: 7\rretry: 2500\r\r" + // an event without data: only its id and retry count
		"data: {\"c\":3}\n\n" +
		"data: {\"incomplete\":true}\n"
	var got []string
	id, retry, err := readEvents(strings.NewReader(in), 1<<10, func(d []byte) error { got = append(got, string(d)); return nil })
	require.NoError(t, err)
	require.Equal(t, []string{`{"a":1}`, "{\"b\"\n:2}", `{"c":3}`}, got)
	require.Equal(t, "7", id)
	require.Equal(t, 2500*time.Millisecond, retry)

	_, _, err = readEvents(strings.NewReader("data: "+strings.Repeat("x", 2000)+"\n\n"), 1<<10, func([]byte) error { return nil })
	require.ErrorContains(t, err, "over 1024 bytes")
	_, _, err = readEvents(strings.NewReader("data: "+strings.Repeat("x", 600)+"\ndata: "+strings.Repeat("x", 600)+"\n\n"), 1<<10, func([]byte) error { return nil })
	require.ErrorContains(t, err, "over 1024 bytes")

	stop := errors.New("stop")
	_, _, err = readEvents(strings.NewReader("data: 1\n\ndata: 2\n\n"), 1<<10, func([]byte) error { return stop })
	require.ErrorIs(t, err, stop)
}

// FuzzReadEvents: no input makes the event reader panic, deliver more than it read, or
// deliver an event over its bound.
//
//	go test ./surfaces/mcpremote -run '^$' -fuzz FuzzReadEvents -fuzztime 1m
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("id: 1\r\ndata: {\"a\":1}\r\n\r\n"))
	f.Add([]byte("event: x\rdata\r\rretry: 9\n\n"))
	f.Add([]byte(":\n\ndata: a\ndata: b\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		total := 0
		_, _, _ = readEvents(strings.NewReader(string(in)), 256, func(d []byte) error {
			if len(d) > 256 {
				t.Fatalf("an event of %d bytes over the bound", len(d))
			}
			total += len(d)
			return nil
		})
		if total > len(in) {
			t.Fatalf("delivered %d bytes of %d read", total, len(in))
		}
	})
}
