// Package decisionlog writes and replays grantwire's decision logs in OPA's decision-log
// format (https://www.openpolicyagent.org/docs/management-decision-logs): one JSON object
// per line with decision_id, labels, revision and bundles, path "grantwire/decide", the
// input the policy saw (op, args, the final facts, attempt), the result it gave, timestamp
// and metrics. Such a line is what an OPA server running the same bundle logs for
// POST /v1/data/grantwire/decide, so the usual collectors can ship it, and `opa eval -b`
// or [Replay] can re-evaluate it.
//
// Secrets never reach a log: the core's inputs carry only descriptions of secrets (a
// reference, a digest and a CRC-32), and [Redact] replaces, by construction, every
// reference, digest, CRC-32, client-id hash and version token before a line is written
// (see [Redact] for the exact rule).
//
// This package imports core and internal/jsonx only: no OPA, no grantwire root package (the
// root package's WithObserver with Decision.Record feeds it).
package decisionlog

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Path is the decision path of every grantwire entry, as OPA names it.
const Path = "grantwire/decide"

// BundleInfo is OPA's per-bundle information in an event.
type BundleInfo struct {
	Revision string `json:"revision"`
}

// Event is one decision in OPA's decision-log format: the fields of OPA's EventV1 that
// grantwire fills, with OPA's names. Custom holds grantwire's additions: the operation
// ("op"), its outcome ("outcome": "ok", "need" or an error code), the engine, and a host
// failure ("host_error": {code, message}) when the shell rather than the policy ended it.
type Event struct {
	Labels     map[string]string     `json:"labels"`
	DecisionID string                `json:"decision_id"`
	Revision   string                `json:"revision,omitempty"`
	Bundles    map[string]BundleInfo `json:"bundles,omitempty"`
	Path       string                `json:"path"`
	Input      json.RawMessage       `json:"input,omitempty"`
	Result     json.RawMessage       `json:"result,omitempty"`
	Erased     []string              `json:"erased,omitempty"`
	Masked     []string              `json:"masked,omitempty"`
	Timestamp  time.Time             `json:"timestamp"`
	Metrics    map[string]any        `json:"metrics,omitempty"` // int64 values when grantwire writes them
	Custom     map[string]any        `json:"custom,omitempty"`
}

// Record is one finished operation as a client reports it.
type Record struct {
	Op       string
	Args     json.RawMessage // used when the core never decided (Input is nil)
	Input    json.RawMessage // the final query the core answered
	Output   json.RawMessage // its decision
	Host     *core.Error     // a host failure that ended the operation, if any
	Revision string          // the policy's revision
	Bundle   string          // the bundle's name when the policy came from a bundle
	Engine   string
	Rounds   int
	At       time.Time
	Duration time.Duration
}

// Logger appends events to a writer as JSON lines. It is safe for concurrent use. A
// failed write is kept (see Err) and reported by Close; the operation it logged is not
// failed by it.
type Logger struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	labels map[string]string
	newID  func() string
	err    error
}

// Option configures a [Logger].
type Option func(*Logger)

// WithLabels adds labels to every event (OPA's labels: "id" names this process's logger,
// "version" the grantwire version; both can be overridden).
func WithLabels(labels map[string]string) Option {
	return func(l *Logger) {
		for k, v := range labels {
			l.labels[k] = v
		}
	}
}

// WithDecisionIDs replaces the random decision ids (UUID v4) with ids from fn.
func WithDecisionIDs(fn func() string) Option { return func(l *Logger) { l.newID = fn } }

// New returns a logger writing to w.
func New(w io.Writer, opts ...Option) *Logger {
	l := &Logger{w: w, newID: uuid4, labels: map[string]string{"id": uuid4(), "app": "grantwire", "version": version()}}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Open appends to the log file at path, creating it with mode 0600.
func Open(path string, opts ...Option) (*Logger, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("decisionlog: %w", err)
	}
	l := New(f, opts...)
	l.closer = f
	return l, nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/grantwire/grantwire" {
				return d.Version
			}
		}
		if bi.Main.Path == "github.com/grantwire/grantwire" && bi.Main.Version != "" {
			return bi.Main.Version
		}
	}
	return "(devel)"
}

func uuid4() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Event builds the redacted event of a record (exported for tests and other sinks).
func (l *Logger) Event(r Record) (*Event, error) {
	e := &Event{
		Labels: l.labels, DecisionID: l.newID(), Revision: r.Revision, Path: Path,
		Timestamp: r.At.UTC(),
		Metrics:   map[string]any{"timer_grantwire_operation_ns": r.Duration.Nanoseconds(), "counter_grantwire_rounds": int64(r.Rounds)},
		Custom:    map[string]any{"op": r.Op, "engine": r.Engine},
	}
	if r.Bundle != "" && r.Revision != "" {
		e.Bundles = map[string]BundleInfo{r.Bundle: {Revision: r.Revision}}
	}
	input := r.Input
	if input == nil {
		// The core never decided: log what was asked, so the failure is on record.
		args := r.Args
		if args == nil {
			args = json.RawMessage(`{}`)
		}
		input, _ = json.Marshal(map[string]json.RawMessage{"op": mustJSON(r.Op), "args": args})
	}
	red, err := Redact(input, r.Output)
	if err != nil {
		return nil, err
	}
	e.Input, e.Result, e.Masked, e.Erased = red.Input, red.Result, red.Masked, red.Erased
	e.Custom["outcome"] = Outcome(r.Output)
	if r.Host != nil {
		e.Custom["host_error"] = map[string]string{"code": r.Host.Code, "message": r.Host.Message}
		e.Custom["outcome"] = r.Host.Code
	}
	return e, nil
}

// Log writes the record's event as one line.
func (l *Logger) Log(r Record) error {
	e, err := l.Event(r)
	if err == nil {
		var line []byte
		if line, err = marshalLine(e); err == nil {
			l.mu.Lock()
			_, err = l.w.Write(line)
			if err != nil && l.err == nil {
				l.err = err
			}
			l.mu.Unlock()
		}
	}
	if err != nil {
		err = fmt.Errorf("decisionlog: %w", err)
		l.mu.Lock()
		if l.err == nil {
			l.err = err
		}
		l.mu.Unlock()
	}
	return err
}

func marshalLine(e *Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil // Encode ends the line with '\n'
}

// Err returns the first error a Log call met.
func (l *Logger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close closes the file of a logger from Open and returns the first error met.
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.closer != nil {
		err = l.closer.Close()
		l.closer = nil
	}
	return errors.Join(l.err, err)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Outcome summarises a decision: "ok", "need", the error code, or "" when there is none.
func Outcome(decision json.RawMessage) string {
	if decision == nil {
		return ""
	}
	var d struct {
		Status string `json:"status"`
		Error  *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(decision, &d) != nil {
		return "malformed"
	}
	switch {
	case d.Status == core.StatusNeed:
		return "need"
	case d.Error != nil:
		return d.Error.Code
	default:
		return "ok"
	}
}

// Reader reads events from a decision log: JSON objects, one per line (other whitespace
// between objects is accepted too). Unknown fields, such as those an OPA console logger
// adds, are ignored. An entry larger than MaxEntryBytes is an error, so a hostile log costs
// bounded memory.
type Reader struct {
	dec  *json.Decoder
	line int
}

// MaxEntryBytes is the largest decision-log entry a Reader reads: 16 MiB, hundreds of
// times a real entry (a few KiB: the redacted input and result of one decision).
const MaxEntryBytes = 16 << 20

// errEntryTooLarge is reported, with the entry's number, for an entry over MaxEntryBytes.
var errEntryTooLarge = fmt.Errorf("a decision-log entry is larger than %d MiB", MaxEntryBytes>>20)

// cappedReader fails once the decoder has buffered more than MaxEntryBytes of the entry
// it is reading (what it has read minus where that entry started).
type cappedReader struct {
	r    io.Reader
	dec  *json.Decoder
	read int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.read-c.dec.InputOffset() > MaxEntryBytes {
		return 0, errEntryTooLarge
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	c := &cappedReader{r: bufio.NewReader(r)}
	dec := json.NewDecoder(c)
	c.dec = dec
	dec.UseNumber()
	return &Reader{dec: dec}
}

// Next returns the next event and its ordinal (1-based), or io.EOF.
func (r *Reader) Next() (*Event, int, error) {
	var e Event
	if err := r.dec.Decode(&e); err != nil {
		if err == io.EOF {
			return nil, 0, io.EOF
		}
		return nil, 0, fmt.Errorf("decisionlog: entry %d: %w", r.line+1, err)
	}
	r.line++
	return &e, r.line, nil
}

// ReadAll reads every event of a log.
func ReadAll(r io.Reader) ([]*Event, error) {
	var out []*Event
	err := NewReader(r).Each(func(e *Event, _ int) { out = append(out, e) })
	return out, err
}

// Each calls fn with every further event and its ordinal until the log ends (nil) or an
// event cannot be read (that error).
func (r *Reader) Each(fn func(e *Event, n int)) error {
	for {
		e, n, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		fn(e, n)
	}
}

// Canonical returns the canonical JSON (package canon) of a raw JSON value.
func Canonical(raw json.RawMessage) ([]byte, error) {
	return jsonx.Append(nil, raw)
}

func sortedUnique(xs []string) []string {
	sort.Strings(xs)
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
