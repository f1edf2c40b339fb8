package nativeengine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
)

// DefaultResidentBytes is the default bound of an engine's resident facts (see
// WithResidentBytes): 64 MiB of estimated heap, about ten ledgers of 50 connectors ×
// 1,000 agents.
const DefaultResidentBytes = 64 << 20

// WithResidentBytes bounds the heap the engine keeps for resident facts (facts named by
// a token, core.Query.Tokens), as estimated by their parse; 0 keeps none (every fact is
// parsed with its query). A fact whose parse alone exceeds the bound is used once and
// not kept.
func WithResidentBytes(n int) Option { return func(c *config) { c.residentBytes = n } }

// resident holds the parsed facts of tokens (immutable values on the heap, shared by
// every evaluation), within a bound of estimated bytes; the least recently used go first.
type resident struct {
	limit int
	clock atomic.Uint64

	mu   sync.RWMutex
	m    map[string]*residentFact
	size int
}

type residentFact struct {
	v    *rt.V
	size int
	used atomic.Uint64
}

func newResident(limit int) *resident {
	return &resident{limit: limit, m: map[string]*residentFact{}}
}

// get returns the parsed fact of token, parsing raw onto the heap the first time (after
// the checks core.CheckQuery would make on it). nil, nil: the engine keeps no resident
// facts; the caller parses the fact itself.
func (r *resident) get(token string, raw []byte) (*rt.V, error) {
	if r.limit <= 0 {
		return nil, nil
	}
	r.mu.RLock()
	f := r.m[token]
	r.mu.RUnlock()
	if f != nil {
		f.used.Store(r.clock.Add(1))
		return f.v, nil
	}
	if err := core.CheckFact(raw); err != nil {
		return nil, err
	}
	v := rt.Null
	if len(raw) > 0 {
		var err error
		if v, err = rt.ParseData(raw); err != nil {
			return nil, fmt.Errorf("nativeengine: malformed input: %w", err)
		}
	}
	// The strings of v point into one copy of raw: count it beside the nodes.
	f = &residentFact{v: v, size: rt.Footprint(v) + len(raw)}
	f.used.Store(r.clock.Add(1))
	if f.size > r.limit {
		return v, nil // used once, not kept
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.m[token]; old != nil { // parsed meanwhile by another decision
		return old.v, nil
	}
	r.m[token] = f
	r.size += f.size
	for r.size > r.limit {
		var oldest string
		var at uint64
		for t, x := range r.m {
			if x != f && (oldest == "" || x.used.Load() < at) {
				oldest, at = t, x.used.Load()
			}
		}
		r.size -= r.m[oldest].size
		delete(r.m, oldest)
	}
	return v, nil
}

// stats reports the facts kept and their estimated bytes.
func (r *resident) stats() (n, size int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.m), r.size
}

// ResidentStats reports how many resident facts the engine keeps and their estimated
// heap bytes (at most the bound of WithResidentBytes).
func (e *Engine) ResidentStats() (facts, bytes int) { return e.res.stats() }

// skeleton is a query without its facts, as core.DecideTyped encodes it.
type skeleton struct {
	Op      string          `json:"op"`
	Args    json.RawMessage `json:"args"`
	Attempt int             `json:"attempt"`
	Round   int             `json:"round"`
}

// Decide answers a typed query. It builds the policy's input from the query's parts, not
// from its JSON: the facts named by a token come parsed from the engine's resident facts
// (parsed once per token), the others are parsed into the evaluation's arena. Every part
// gets the checks core.CheckQuery makes, so the decision (or the refusal) is the one
// DecideJSON gives for the query's JSON; a query this path cannot build exactly (a fact
// key in invalid UTF-8, a query near the size limit) goes through core.DecideTyped.
func (e *Engine) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	skel, err := json.Marshal(skeleton{q.Op, q.Args, q.Attempt, q.Round})
	if err != nil {
		return nil, fmt.Errorf("core: encode query: %w", err)
	}
	size := len(skel) + len(`,"facts":{}`)
	keys := make([]string, 0, len(q.Facts))
	for k, raw := range q.Facts {
		if !utf8.ValidString(k) {
			return core.DecideTyped(ctx, e, q)
		}
		keys = append(keys, k)
		size += len(k) + len(`"":,`) + max(len(raw), len("null"))
	}
	if size > core.MaxQueryBytes {
		return core.DecideTyped(ctx, e, q)
	}
	if err := core.CheckQuery(skel); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.Sort(keys)
	ev := e.prog.Get(ctx)
	defer e.prog.Put(ev)
	in, err := ev.ParseQuery(skel)
	if err != nil {
		return nil, fmt.Errorf("nativeengine: malformed input: %w", err)
	}
	facts := rt.Null
	if q.Facts != nil {
		facts = ev.Object(len(keys))
		for _, k := range keys {
			raw := q.Facts[k]
			var v *rt.V
			if tok := q.Tokens[k]; tok != "" {
				if v, err = e.res.get(tok, raw); err != nil {
					return nil, err
				}
			}
			if v == nil {
				if err := core.CheckFact(raw); err != nil {
					return nil, err
				}
				if len(raw) == 0 {
					v = rt.Null
				} else if v, err = ev.ParseMore(raw); err != nil {
					return nil, fmt.Errorf("nativeengine: malformed input: %w", err)
				}
			}
			rt.ObjectInsert(facts, ev.String(k), v)
		}
	}
	rt.ObjectInsert(in, ev.String("facts"), facts)
	res, err := e.run(ev, e.decide, in)
	if err != nil {
		return nil, err
	}
	var hint int
	if h, ok := e.sizes.Load(q.Op); ok {
		hint = h.(int)
	}
	d, size, err := decisionOf(res, hint)
	if size != hint && size > 0 {
		e.sizes.Store(q.Op, size)
	}
	return d, err
}
