// Package core holds the contract of grantwire's side-effect-free decision core: the
// [Query] a shell sends, the [Decision] the policy returns, and the [Engine] interface that
// both engines (core/wasmengine and core/regoengine) implement.
//
// The core never does I/O. It never reads a clock, a random source, a file, an environment
// variable or the network: everything it needs arrives as facts in the query, and
// everything it wants done leaves as needs or effects in the decision. The same query gives
// the byte-identical decision (in the canonical form of package internal/jsonx) on every engine.
//
// This package imports only the standard library and internal/jsonx; engines import it, never
// the other way round.
package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Query is one question to the core: an operation, its arguments and the facts the shell
// has gathered so far. Attempt counts the restarts caused by failed preconditions; Round
// numbers the question within its operation (0 for the first: the argument rules are
// checked there, since an operation's args never change).
type Query struct {
	Op      string                     `json:"op"`
	Args    json.RawMessage            `json:"args"`
	Facts   map[string]json.RawMessage `json:"facts"`
	Attempt int                        `json:"attempt"`
	Round   int                        `json:"round"`
	// Tokens names facts by version (resident facts): a fact whose key has a token here is
	// byte for byte the fact every other query with the same token carried, so an engine
	// may keep its parsed value between calls, keyed by the token, instead of parsing it
	// again. Tokens are issued by the host, unique within the process for as long as it
	// runs, and never reach the policy (a query as JSON carries none): an engine that
	// ignores them decides the same.
	Tokens map[string]string `json:"-"`
}

// Decision statuses.
const (
	StatusNeed = "need" // Needs lists facts to gather, in order.
	StatusDone = "done" // Result or Error is set; Effects are to be applied.
)

// Decision is the core's answer to a [Query].
type Decision struct {
	Status  string          `json:"status"`
	Needs   []Need          `json:"needs,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	Effects []Effect        `json:"effects,omitempty"`
}

// MarshalJSON writes the decision as the policy does: a need carries needs only; a done
// decision carries its result or error and its effects (an empty list when there are none).
func (d Decision) MarshalJSON() ([]byte, error) {
	if d.Status != StatusDone {
		return json.Marshal(struct {
			Status string `json:"status"`
			Needs  []Need `json:"needs"`
		}{d.Status, d.Needs})
	}
	effects := d.Effects
	if effects == nil {
		effects = []Effect{}
	}
	return json.Marshal(struct {
		Status  string          `json:"status"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
		Effects []Effect        `json:"effects"`
	}{d.Status, d.Result, d.Error, effects})
}

// Need asks the shell for one fact. Key is where the answer goes in Query.Facts; Kind
// names the host capability (see hostabi). Params holds the kind's parameters verbatim.
type Need struct {
	Key    string
	Kind   string
	Params map[string]json.RawMessage
}

// Effect asks the shell to change the world. Kind names the host capability; Params holds
// the kind's parameters, including its precondition under "expect" and the effects that
// undo it under "undo" (see hostabi/README.md).
type Effect struct {
	Kind   string
	Params map[string]json.RawMessage
}

// Error is a decision's error: a stable code, a message carrying the fixing command, and
// code-specific fields (missing_scopes, retry_after_ms, ...).
type Error struct {
	Code    string
	Message string
	Fix     string
	Fields  map[string]json.RawMessage
}

func (e *Error) Error() string { return e.Message }

// String returns the parameter name as a string ("" when absent or not a string).
func str(m map[string]json.RawMessage, name string) string {
	raw, ok := m[name]
	if !ok {
		return ""
	}
	if s, plain := plainString(raw); plain {
		return s
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// plainString decodes a JSON string made of printable ASCII without escapes (what
// parameters mostly are) without encoding/json; plain is false for anything else.
func plainString(raw []byte) (s string, plain bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(raw[1 : len(raw)-1]), true
}

// Str returns a string parameter of the need ("" when absent).
func (n Need) Str(name string) string { return str(n.Params, name) }

// Str returns a string parameter of the effect ("" when absent).
func (e Effect) Str(name string) string { return str(e.Params, name) }

// Bool returns a boolean parameter of the need (false when absent or not a boolean).
func (n Need) Bool(name string) bool {
	raw, ok := n.Params[name]
	switch {
	case !ok:
		return false
	case string(raw) == "true":
		return true
	case string(raw) == "false":
		return false
	}
	var b bool
	_ = json.Unmarshal(raw, &b)
	return b
}

// Decode unmarshals a parameter of the need into v.
func (n Need) Decode(name string, v any) error { return decodeParam(n.Params, name, v) }

// Decode unmarshals a parameter of the effect into v.
func (e Effect) Decode(name string, v any) error { return decodeParam(e.Params, name, v) }

// Has reports whether the effect carries the parameter.
func (e Effect) Has(name string) bool { _, ok := e.Params[name]; return ok }

func decodeParam(m map[string]json.RawMessage, name string, v any) error {
	raw, ok := m[name]
	if !ok {
		return fmt.Errorf("core: parameter %q missing", name)
	}
	return json.Unmarshal(raw, v)
}

func splitObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// UnmarshalJSON keeps every field of the need; key and kind are lifted out.
func (n *Need) UnmarshalJSON(b []byte) error {
	m, err := splitObject(b)
	if err != nil {
		return err
	}
	n.Key, n.Kind = str(m, "key"), str(m, "kind")
	if n.Key == "" || n.Kind == "" {
		return fmt.Errorf("core: need without key or kind: %s", b)
	}
	delete(m, "key")
	delete(m, "kind")
	n.Params = m
	return nil
}

// MarshalJSON writes the need as one flat object.
func (n Need) MarshalJSON() ([]byte, error) {
	return flat(n.Params, map[string]any{"key": n.Key, "kind": n.Kind})
}

// UnmarshalJSON keeps every field of the effect; kind is lifted out.
func (e *Effect) UnmarshalJSON(b []byte) error {
	m, err := splitObject(b)
	if err != nil {
		return err
	}
	e.Kind = str(m, "kind")
	if e.Kind == "" {
		return fmt.Errorf("core: effect without kind: %s", b)
	}
	delete(m, "kind")
	e.Params = m
	return nil
}

// MarshalJSON writes the effect as one flat object.
func (e Effect) MarshalJSON() ([]byte, error) {
	return flat(e.Params, map[string]any{"kind": e.Kind})
}

// UnmarshalJSON keeps every field of the error; code, message and fix are lifted out.
func (e *Error) UnmarshalJSON(b []byte) error {
	m, err := splitObject(b)
	if err != nil {
		return err
	}
	e.Code, e.Message, e.Fix = str(m, "code"), str(m, "message"), str(m, "fix")
	delete(m, "code")
	delete(m, "message")
	delete(m, "fix")
	e.Fields = m
	return nil
}

// MarshalJSON writes the error as one flat object.
func (e Error) MarshalJSON() ([]byte, error) {
	return flat(e.Fields, map[string]any{"code": e.Code, "message": e.Message, "fix": e.Fix})
}

func flat(params map[string]json.RawMessage, lift map[string]any) ([]byte, error) {
	out := make(map[string]any, len(params)+len(lift))
	for k, v := range params {
		out[k] = v
	}
	for k, v := range lift {
		out[k] = v
	}
	return json.Marshal(out)
}

// ParseDecision decodes a decision as an engine returns it.
func ParseDecision(b []byte) (*Decision, error) {
	var d Decision
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("core: malformed decision: %w", err)
	}
	switch d.Status {
	case StatusNeed:
		if len(d.Needs) == 0 {
			return nil, errors.New("core: need decision without needs")
		}
	case StatusDone:
		if (d.Error == nil) == (d.Result == nil) {
			return nil, errors.New("core: done decision needs exactly one of result and error")
		}
	default:
		return nil, fmt.Errorf("core: unknown decision status %q", d.Status)
	}
	return &d, nil
}

// Op describes one operation the policy decides: the facts worth fetching before the
// first question, as templates whose {"$arg": name} parameters are replaced by arguments.
type Op struct {
	Prefetch json.RawMessage `json:"prefetch"`
}

// Manifest is what the policy publishes about itself (entrypoint grantwire/manifest):
// every operation it decides and every error code it can return.
type Manifest struct {
	Ops    map[string]Op        `json:"ops"`
	Errors map[string]ErrorInfo `json:"errors"`
	// Loopback is the policy's loopback rule (transport.loopback).
	Loopback Loopback `json:"loopback"`
}

// ParseManifest decodes what an engine's manifest entrypoint returned, refusing a value
// that is not a manifest or one that names no operation: every engine checks the policy
// it loaded with it.
func ParseManifest(raw []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("core: malformed manifest: %w", err)
	}
	if len(m.Ops) == 0 {
		return nil, errors.New("core: manifest names no operation")
	}
	return &m, nil
}

// ErrorInfo is how the surfaces render an error code: its REST status and CLI exit code.
type ErrorInfo struct {
	Status int `json:"status"`
	Exit   int `json:"exit"`
}

// Engine evaluates grantwire's policy. Implementations are safe for concurrent use.
type Engine interface {
	// Decide answers a query.
	Decide(ctx context.Context, q *Query) (*Decision, error)
	// DecideJSON answers a query given as JSON and appends the canonical decision to dst.
	DecideJSON(ctx context.Context, dst, query []byte) ([]byte, error)
	// Manifest returns what the policy publishes about its operations.
	Manifest() *Manifest
	// Name is "native", "wasm", "rego" or "opa-server".
	Name() string
	// Close releases the engine's resources.
	Close(ctx context.Context) error
}

// ErrUnknownOp is returned for an operation the policy does not decide.
var ErrUnknownOp = errors.New("core: unknown operation")

// ErrUndefined is returned when the policy produced no decision at all.
var ErrUndefined = errors.New("core: policy produced no decision")

// OpOf extracts the "op" member of a JSON query without decoding the rest.
func OpOf(query []byte) (string, error) {
	var q struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(query, &q); err != nil {
		return "", fmt.Errorf("core: malformed query: %w", err)
	}
	return q.Op, nil
}

// DecideTyped implements Engine.Decide on top of Engine.DecideJSON: the query is encoded
// in canonical JSON, and the decision decoded.
func DecideTyped(ctx context.Context, e Engine, q *Query) (*Decision, error) {
	in, err := json.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("core: encode query: %w", err)
	}
	out, err := e.DecideJSON(ctx, nil, in)
	if err != nil {
		return nil, err
	}
	return ParseDecision(out)
}
