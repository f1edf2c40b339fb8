// Package caseproto is the protocol between internal/tools/opacases, which runs OPA's test
// cases on the native engine, and the runner process it builds from their compiled plans
// (core/nativeengine/internal/caserun): a Job per line of the runner's standard input, a
// Reply per line of its standard output, and how an input holds values JSON cannot write.
package caseproto

import "encoding/json"

// Job is one evaluation the harness asks for.
type Job struct {
	Key    string          `json:"key"`              // the case's name in the runner
	Data   json.RawMessage `json:"data,omitempty"`   // JSON (none: {})
	Input  json.RawMessage `json:"input,omitempty"`  // JSON (none: no input)
	Tagged bool            `json:"tagged,omitempty"` // Input holds tagged sets or objects
	NowNS  int64           `json:"now_ns"`           // the evaluation's time (time.now_ns)
	// TimeoutMS bounds the evaluation (the runtime checks its context while it iterates).
	TimeoutMS int `json:"timeout_ms"`
	// MemoryMB bounds the runner's heap while it evaluates the job (0: DefaultMemoryMB).
	MemoryMB int `json:"memory_mb,omitempty"`
	// BenchMS, when positive, evaluates the case again for about that long and reports the
	// time of one evaluation.
	BenchMS int `json:"bench_ms,omitempty"`
}

// Reply is the outcome of a job.
type Reply struct {
	Key    string          `json:"key"`
	Result json.RawMessage `json:"result,omitempty"` // the result set, canonical JSON (an array of binding objects)
	Error  string          `json:"error,omitempty"`  // the evaluation failed with this message…
	Code   string          `json:"code,omitempty"`   // …and this OPA error code, when it has one
	// Fatal says the case exceeded its deadline, or the memory bound (then it is the last
	// reply of the runner, which exits).
	Fatal   string  `json:"fatal,omitempty"`
	BenchNS float64 `json:"bench_ns,omitempty"` // nanoseconds per evaluation, as an engine evaluates
	// BenchNoCacheNS is the time of one evaluation without the engine-wide cache of the
	// rules that read no input (every rule computed each time, as OPA's evaluator does).
	BenchNoCacheNS float64 `json:"bench_nocache_ns,omitempty"`
}

// An input may hold values JSON cannot write (a case's input_term is Rego): a set is
// written {SetTag: [members…]} and an object with a key that is not a string
// {ObjectTag: [[key, value]…]}, and Job.Tagged set.
const (
	SetTag    = "\x00set"
	ObjectTag = "\x00object"
)

// DefaultMemoryMB is the heap a runner may reach before it gives up on the case it runs.
const DefaultMemoryMB = 1024
