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
	"github.com/grantwire/grantwire/internal/jsonx"
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
	size int // estimated heap bytes
	json int // the fact's size in the query's JSON (jsonx.GoLen)
	used atomic.Uint64
}

func newResident(limit int) *resident {
	return &resident{limit: limit, m: map[string]*residentFact{}}
}

// get returns the parsed fact of token and its size in the query's JSON, parsing raw
// onto the heap the first time (after the checks core.CheckQuery would make on it). nil:
// the engine keeps no resident facts; the caller parses the fact itself.
func (r *resident) get(token string, raw []byte) (*rt.V, int, error) {
	if r.limit <= 0 {
		return nil, 0, nil
	}
	r.mu.RLock()
	f := r.m[token]
	r.mu.RUnlock()
	if f != nil {
		f.used.Store(r.clock.Add(1))
		return f.v, f.json, nil
	}
	if err := core.CheckFact(raw); err != nil {
		return nil, 0, err
	}
	v := rt.Null
	if len(raw) > 0 {
		var err error
		if v, err = rt.ParseData(raw); err != nil {
			return nil, 0, fmt.Errorf("nativeengine: malformed input: %w", err)
		}
	}
	// The strings of v point into one copy of raw: count it beside the nodes.
	f = &residentFact{v: v, size: rt.Footprint(v) + len(raw), json: jsonx.GoLen(raw)}
	f.used.Store(r.clock.Add(1))
	if f.size > r.limit {
		return v, f.json, nil // used once, not kept
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.m[token]; old != nil { // parsed meanwhile by another decision
		return old.v, old.json, nil
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
	return v, f.json, nil
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

// sizeKey names a question of an operation (its decisions' sizes are alike: the need of
// a listing's first round is small, its final answer large).
type sizeKey struct {
	op    string
	round int
}

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
// key in invalid UTF-8) or one over the size limit goes through core.DecideTyped.
func (e *Engine) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	skel, err := json.Marshal(skeleton{q.Op, q.Args, q.Attempt, q.Round})
	if err != nil {
		return nil, fmt.Errorf("core: encode query: %w", err)
	}
	keys := make([]string, 0, len(q.Facts))
	for k := range q.Facts {
		if !utf8.ValidString(k) {
			return core.DecideTyped(ctx, e, q)
		}
		keys = append(keys, k)
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
	// size is the query's size as core.DecideTyped would write it (CheckQuery's limit),
	// counted exactly only when it might matter: encoding/json writes a fact in at most six
	// times its bytes (every byte escaped).
	upper := len(skel) + len(`,"facts":{}`)
	for k, raw := range q.Facts {
		upper += 6*len(k) + len(`"":,`) + 6*max(len(raw), len("null"))
	}
	exact := upper > core.MaxQueryBytes
	size := len(skel) + len(`,"facts":null`)
	facts := rt.Null
	if q.Facts != nil {
		size += len(`{}`) - len(`null`) + max(len(keys)-1, 0)
		facts = ev.Object(len(keys))
		for _, k := range keys {
			raw := q.Facts[k]
			var v *rt.V
			var n int
			if tok := q.Tokens[k]; tok != "" {
				if v, n, err = e.res.get(tok, raw); err != nil {
					return nil, err
				}
			}
			if v == nil {
				if err := core.CheckFact(raw); err != nil {
					return nil, err
				}
				if exact {
					n = jsonx.GoLen(raw)
				}
				if len(raw) == 0 {
					v = rt.Null
				} else if v, err = ev.ParseMore(raw); err != nil {
					return nil, fmt.Errorf("nativeengine: malformed input: %w", err)
				}
			}
			size += jsonx.GoStringLen(k) + len(`:`) + n
			rt.ObjectInsert(facts, ev.String(k), v)
		}
	}
	if exact && size > core.MaxQueryBytes {
		return core.DecideTyped(ctx, e, q) // refused there, as any query over the limit
	}
	rt.ObjectInsert(in, ev.String("facts"), facts)
	res, err := e.run(ev, e.decide, in)
	if err != nil {
		return nil, err
	}
	var hint int
	at := sizeKey{q.Op, q.Round}
	if h, ok := e.sizes.Load(at); ok {
		hint = h.(int)
	}
	d, size, err := decisionOf(res, hint)
	if size != hint && size > 0 {
		e.sizes.Store(at, size)
	}
	return d, err
}
