// Package nativeengine evaluates grantwire's policy as Go code compiled from it: the Rego
// of policy/grantwire, planned by OPA into its intermediate representation (`opa build -t
// plan`, the form OPA documents for compilers), translated to Go by
// internal/tools/nativegen (policy_gen.go, committed and reproducible: `make native`;
// `make test` fails when it is stale) and run on the runtime of package internal/rt.
//
// It is the default engine of Go programs: a few microseconds a decision, no sandbox to
// cross, no JSON parsed twice. It decides exactly as the wasm and rego engines do, byte
// for byte (internal/testworld/nodiff), but only the policy it was generated from: to run
// another policy (a bundle's policy.wasm, Rego edited live) use core/wasmengine or
// core/regoengine.
//
// # Resident facts
//
// Decide (a typed query, as the driver asks) builds the policy's input from the query's
// parts instead of its JSON. A fact named by a token (core.Query.Tokens: the host names
// the ledger facts it answers from its cache) is parsed once, onto the heap, and kept
// between decisions, keyed by the token: a listing over a large ledger no longer parses
// it again on every call. Facts without a token are parsed into the evaluation's arena,
// as DecideJSON parses a query. Each fact gets the checks core.CheckQuery makes on a
// query (core.CheckFact) when it is first parsed, so a malformed fact is refused as
// before. Resident values are shared by concurrent evaluations; generated code never
// writes to its input (it builds new values), which TestConcurrentResidentFacts runs under
// the race detector.
//
// The resident facts are bounded by bytes: at most WithResidentBytes (default
// DefaultResidentBytes, 64 MiB) of estimated heap — the parsed values' nodes, slices and
// strings plus the fact's bytes. When a new fact would exceed the bound, the least
// recently used facts are evicted until it fits; a fact larger than the whole bound is
// used for its decision and not kept. Tokens of old versions are never asked for again,
// so they age out first. Decisions are byte for byte those of DecideJSON on the query's
// JSON (TestDecideTypedMatchesJSON, with and without tokens, bounds of 0 and 16 KiB).
//
// This package links no package of OPA (TestNoOPA).
package nativeengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
)

// Entrypoints the engine needs from the policy.
const (
	DecideEntrypoint   = "grantwire/decide"
	ManifestEntrypoint = "grantwire/manifest"
)

type config struct {
	data          []byte
	residentBytes int
}

// Option configures an [Engine].
type Option func(*config)

// WithData sets the policy's data document (the catalog), as JSON.
func WithData(data []byte) Option { return func(c *config) { c.data = data } }

// Engine is the native engine. It is safe for concurrent use: every evaluation borrows
// its own state, and the results of rules that read only data are computed once.
type Engine struct {
	prog     *rt.Program
	decide   func(*rt.Eval, *rt.V, *rt.V) *rt.V
	manifest *core.Manifest
	res      *resident
	sizes    sync.Map // sizeKey → the size of its last typed decision (decisionOf's hint)
}

// New parses the data document and evaluates the manifest.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	c := config{data: []byte(`{}`), residentBytes: DefaultResidentBytes}
	for _, o := range opts {
		o(&c)
	}
	data, err := rt.ParseData(c.data)
	if err != nil {
		return nil, fmt.Errorf("nativeengine: data: %w", err)
	}
	e := &Engine{prog: rt.NewProgram(genFuncCount, data), decide: genPlans[DecideEntrypoint], res: newResident(c.residentBytes)}
	if e.decide == nil || genPlans[ManifestEntrypoint] == nil {
		return nil, fmt.Errorf("nativeengine: the generated policy lacks %s or %s", DecideEntrypoint, ManifestEntrypoint)
	}
	out, err := e.Eval(ctx, ManifestEntrypoint, nil, []byte(`{}`))
	if err != nil {
		return nil, fmt.Errorf("nativeengine: manifest: %w", err)
	}
	if e.manifest, err = core.ParseManifest(out); err != nil {
		return nil, fmt.Errorf("nativeengine: manifest %s: %w", out, err)
	}
	return e, nil
}

// DecideJSON evaluates a query given as JSON and appends the canonical decision to dst.
func (e *Engine) DecideJSON(ctx context.Context, dst, query []byte) ([]byte, error) {
	if err := core.CheckQuery(query); err != nil {
		return dst, err
	}
	return e.eval(ctx, e.decide, dst, query)
}

// Eval evaluates any entrypoint of the policy (see Entrypoints) on input given as JSON
// and appends the canonical value of its result to dst; core.ErrUndefined when it has
// none.
func (e *Engine) Eval(ctx context.Context, entrypoint string, dst, input []byte) ([]byte, error) {
	plan := genPlans[entrypoint]
	if plan == nil {
		return dst, fmt.Errorf("nativeengine: no entrypoint %q", entrypoint)
	}
	return e.eval(ctx, plan, dst, input)
}

// Entrypoints lists the policy's entrypoints.
func Entrypoints() []string {
	out := make([]string, 0, len(genPlans))
	for k := range genPlans {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var resultKey = "result"

func (e *Engine) eval(ctx context.Context, plan func(*rt.Eval, *rt.V, *rt.V) *rt.V, dst, input []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	ev := e.prog.Get(ctx)
	defer e.prog.Put(ev)
	in, err := ev.ParseQuery(input)
	if err != nil {
		return dst, fmt.Errorf("nativeengine: malformed input: %w", err)
	}
	res, err := e.run(ev, plan, in)
	if err != nil {
		return dst, err
	}
	return rt.AppendCanonical(dst, res), nil
}

// run evaluates a plan on an input and returns its result (in ev's arena).
func (e *Engine) run(ev *rt.Eval, plan func(*rt.Eval, *rt.V, *rt.V) *rt.V, in *rt.V) (*rt.V, error) {
	var rs *rt.V
	if err := rt.Run(func() { rs = plan(ev, in, e.prog.Data) }); err != nil {
		return nil, fmt.Errorf("nativeengine: %w", err)
	}
	var res *rt.V
	switch rt.Len(rs) {
	case 0:
		return nil, core.ErrUndefined
	case 1:
		_, b := ev.ScanAt(rs, 0)
		res = rt.GetStr(b, resultKey)
	default:
		return nil, errors.New("nativeengine: the policy produced more than one result")
	}
	if res == nil {
		return nil, core.ErrUndefined
	}
	return res, nil
}

// Manifest returns what the policy publishes about its operations.
func (e *Engine) Manifest() *core.Manifest { return e.manifest }

// Name returns "native".
func (e *Engine) Name() string { return "native" }

// Close releases nothing; it exists for the Engine interface.
func (e *Engine) Close(context.Context) error { return nil }

// Builtins lists the built-in functions the generated policy calls.
func Builtins() []string { return slices.Clone(genBuiltins) }
