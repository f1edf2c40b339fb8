package decisionlog_test

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/decisionlog"
)

// endless is an entry that never ends: an opening brace, a key and a string that goes on.
type endless struct{ started bool }

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	if !e.started {
		n = copy(p, `{"decision_id": "`)
		e.started = true
	}
	for i := n; i < len(p); i++ {
		p[i] = 'x'
	}
	return len(p), nil
}

// A decision-log entry larger than MaxEntryBytes is refused by its number once that much
// has been read: reading a hostile log costs bounded memory (issue 10, item 19).
func TestReaderCapsAnEntry(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := decisionlog.NewReader(&endless{}).Next()
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "entry 1") || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("got %v", err)
	}
	// Cumulative: encoding/json doubles its buffer up to the cap, copying each time.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16*decisionlog.MaxEntryBytes {
		t.Fatalf("reading allocated %d bytes", grew)
	}

	// Entries up to the cap, one after the other, are read.
	small := `{"decision_id": "a", "path": "grantwire/decide"}` + "\n"
	big := `{"decision_id": "` + strings.Repeat("y", decisionlog.MaxEntryBytes-64) + `", "path": "grantwire/decide"}` + "\n"
	rd := decisionlog.NewReader(strings.NewReader(small + big + small))
	for i := range 3 {
		if _, n, err := rd.Next(); err != nil || n != i+1 {
			t.Fatalf("entry %d: %d, %v", i+1, n, err)
		}
	}
	if _, _, err := rd.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last entry: %v", err)
	}
}

// FuzzReader reads arbitrary bytes as a decision log (the input of `policy replay`). No
// input panics or reads past an entry's cap; an error names the entry; every event read
// re-encodes to JSON.
// Longer: go test ./decisionlog -run '^$' -fuzz FuzzReader -fuzztime 5m
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{"decision_id":"1","path":"grantwire/decide","input":{"op":"x"},"result":{"status":"done"},"timestamp":"2026-01-01T00:00:00Z"}` + "\n",
		`{"decision_id":"1"}{"decision_id":"2"}`, `{"timestamp": "not a time"}`, `[1,2]`, `{"metrics": {"a": 1e400}}`,
		"{\"decision_id\": \"\x1b[31m\"}\n", `{"labels": {"a": 1}}`, `  `, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rd := decisionlog.NewReader(bytes.NewReader(raw))
		for i := 1; ; i++ {
			e, n, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !strings.Contains(err.Error(), "entry ") {
					t.Fatalf("an error that does not name the entry: %v", err)
				}
				return
			}
			if n != i {
				t.Fatalf("entry %d numbered %d", i, n)
			}
			if _, err := decisionlog.Canonical(e.Input); len(e.Input) > 0 && err != nil {
				t.Fatalf("an input read as JSON is not canonicalizable: %v", err)
			}
		}
	})
}
