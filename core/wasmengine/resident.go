package wasmengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// DefaultResidentLimit is the default bound on the heap bytes one instance spends on
// resident facts (see Resident facts in the package doc).
const DefaultResidentLimit = 64 << 20

// expansion estimates the heap bytes a fact takes once parsed, per byte of its JSON (OPA's
// values take 10 to 16 times their JSON: BENCHMARKS.md). Used to reset before parsing, so
// that the bound holds unless a single query's facts exceed it.
const expansion = 16

// resident is what one instance keeps between evaluations: the parsed values of facts
// named by a token, in the heap between the data mark and top, and the path value
// ["facts", key] of every key they were carried under.
type resident struct {
	top    uint32                   // heap mark above the resident values
	values map[string]residentValue // by token
	paths  map[string]residentPath  // by fact key
	resets int                      // times the resident values were dropped
	sizes  []int                    // scratch: sizes of the query's facts not resident yet
}

type residentValue struct {
	addr uint32 // the parsed value
	size int    // bytes of the fact as json.Marshal writes it in a query
}

type residentPath struct {
	addr uint32 // the parsed ["facts", key]
	size int    // bytes of the key as json.Marshal writes it
}

// clear drops every resident value: the heap is reset to mark by the next evaluation.
func (r *resident) clear(mark uint32) {
	r.top = mark
	r.values = map[string]residentValue{}
	r.paths = map[string]residentPath{}
}

// errViaJSON makes Decide answer through DecideTyped: for a query the resident path cannot
// answer byte for byte the same way (a fact or an argument the boundary refuses, invalid
// UTF-8 in a key, a query at the size limit), so that its error is exactly DecideJSON's.
var errViaJSON = errors.New("wasmengine: decide through JSON")

// Decide answers a typed query. Facts named by q.Tokens are parsed into the instance's
// heap once per token and kept there (see Resident facts); the rest of the query is
// encoded as JSON and parsed each time. Without tokens it decides as DecideJSON does on
// the query encoded with encoding/json.
func (e *Engine) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	if e.cfg.resident > 0 && hasTokened(q) {
		out, err := e.decideResident(ctx, nil, q)
		if !errors.Is(err, errViaJSON) {
			if err != nil {
				return nil, err
			}
			return core.ParseDecision(out)
		}
	}
	return core.DecideTyped(ctx, e, q)
}

func hasTokened(q *core.Query) bool {
	for k, t := range q.Tokens {
		if _, ok := q.Facts[k]; ok && t != "" {
			return true
		}
	}
	return false
}

// decideResident evaluates q with its tokened facts taken from (or added to) the
// instance's resident values, and appends the canonical decision to dst.
func (e *Engine) decideResident(ctx context.Context, dst []byte, q *core.Query) ([]byte, error) {
	rest := make(map[string]json.RawMessage, len(q.Facts))
	var keys []string
	for k, v := range q.Facts {
		if !utf8.ValidString(k) {
			return dst, errViaJSON // json.Marshal rewrites the key: let it
		}
		if q.Tokens[k] != "" {
			keys = append(keys, k)
		} else {
			rest[k] = v
		}
	}
	sort.Strings(keys)
	base, err := json.Marshal(&core.Query{Op: q.Op, Args: q.Args, Facts: rest, Attempt: q.Attempt, Round: q.Round})
	if err != nil || core.CheckQuery(base) != nil {
		return dst, errViaJSON
	}
	v, in, err := e.acquire(ctx)
	if err != nil {
		return dst, err
	}
	if in.ctxEval == nil || in.addPath == nil {
		v.pool <- in
		return dst, errViaJSON
	}
	out, err := e.evalResident(ctx, in, q, keys, base, len(rest) == 0, dst)
	if err != nil && !errors.Is(err, errViaJSON) {
		in.res.clear(e.dataHeap) // what was parsed last may be half made
	}
	return out, e.release(ctx, v, in, err)
}

// evalResident makes every tokened fact of q resident in in (resetting the resident
// values first when they would pass the bound), then parses base (q without them),
// inserts them under input.facts and evaluates the decide entrypoint.
func (e *Engine) evalResident(ctx context.Context, in *instance, q *core.Query, keys []string, base []byte, noRest bool, dst []byte) ([]byte, error) {
	r := &in.res
	grow := 0
	for _, k := range keys {
		if _, ok := r.values[q.Tokens[k]]; !ok {
			grow += expansion * len(q.Facts[k])
		}
	}
	if grow > 0 && len(r.values) > 0 && int(r.top-e.dataHeap)+grow > e.cfg.resident {
		r.clear(e.dataHeap)
		r.resets++
	}
	// The size the whole query has as json.Marshal writes it, for CheckQuery's limit; the
	// facts not resident yet are checked as CheckQuery would check them in the query.
	size := len(base)
	if noRest {
		size-- // no comma before the first tokened fact
	}
	r.sizes = r.sizes[:0]
	for _, k := range keys {
		p, ok := r.paths[k]
		if !ok {
			p.size = jsonx.GoStringLen(k)
		}
		n := 0
		if rv, ok := r.values[q.Tokens[k]]; ok {
			size += rv.size
		} else {
			var err error
			if n, err = checkFact(q.Facts[k]); err != nil {
				return dst, errViaJSON
			}
			size += n
		}
		r.sizes = append(r.sizes, n)
		size += 1 + p.size + 1 // comma, key, colon
	}
	if size > core.MaxQueryBytes {
		return dst, errViaJSON
	}
	if err := in.makeResident(ctx, q, keys); err != nil {
		return dst, err
	}

	bctx := ctx
	if ctx.Done() != nil {
		bctx = context.WithoutCancel(ctx) // short calls: no watcher goroutine for each
	}
	if _, err := in.call(bctx, in.heapSet, uint64(r.top)); err != nil {
		return dst, err
	}
	input, err := in.parseJSON(ctx, base)
	if err != nil {
		return dst, err
	}
	for _, k := range keys {
		errc, err := in.call(bctx, in.addPath, uint64(input), uint64(r.paths[k].addr), uint64(r.values[q.Tokens[k]].addr))
		if err != nil {
			return dst, err
		}
		if errc != 0 {
			return dst, fmt.Errorf("wasmengine: opa_value_add_path: error %d", errc)
		}
	}
	c, err := in.call(bctx, in.ctxNew)
	if err == nil {
		_, err = in.call(bctx, in.ctxInput, uint64(c), uint64(input))
	}
	if err == nil {
		_, err = in.call(bctx, in.ctxData, uint64(c), uint64(e.dataAddr))
	}
	if err == nil {
		_, err = in.call(bctx, in.ctxEntry, uint64(c), e.decideEP)
	}
	if err == nil {
		_, err = in.call(ctx, in.ctxEval, uint64(c))
	}
	var res, s uint32
	if err == nil {
		res, err = in.call(bctx, in.ctxResult, uint64(c))
	}
	if err == nil {
		s, err = in.call(bctx, in.dump, uint64(res))
	}
	if err != nil {
		return dst, err
	}
	return in.result(s, dst)
}

// makeResident parses, above the resident values, every tokened fact of q that in does
// not hold yet (r.sizes holds their sizes) and the path of every key it has not seen, and
// moves the mark above them.
func (in *instance) makeResident(ctx context.Context, q *core.Query, keys []string) error {
	r := &in.res
	started := false
	for i, k := range keys {
		t := q.Tokens[k]
		_, haveValue := r.values[t]
		_, havePath := r.paths[k]
		if haveValue && havePath {
			continue
		}
		if !started {
			if _, err := in.call(ctx, in.heapSet, uint64(r.top)); err != nil {
				return err
			}
			started = true
		}
		if !haveValue {
			addr, err := in.parseJSON(ctx, q.Facts[k])
			if err != nil {
				return err
			}
			r.values[t] = residentValue{addr: addr, size: r.sizes[i]}
		}
		if !havePath {
			qk, _ := json.Marshal(k)
			addr, err := in.parseJSON(ctx, append(append([]byte(`["facts",`), qk...), ']'))
			if err != nil {
				return err
			}
			r.paths[k] = residentPath{addr: addr, size: len(qk)}
		}
	}
	if !started {
		return nil
	}
	top, err := in.call(ctx, in.heapGet)
	if err != nil {
		return err
	}
	r.top = top
	return nil
}

// parseJSON copies b into the instance's heap, parses it and frees the copy.
func (in *instance) parseJSON(ctx context.Context, b []byte) (uint32, error) {
	p, err := in.call(ctx, in.malloc, uint64(len(b)))
	if err != nil {
		return 0, err
	}
	if !in.mem.Write(p, b) {
		return 0, errors.New("wasmengine: a fact does not fit in memory")
	}
	addr, err := in.call(ctx, in.parse, uint64(p), uint64(len(b)))
	if err != nil {
		return 0, err
	}
	if addr == 0 {
		return 0, errors.New("wasmengine: the policy could not parse a fact")
	}
	if _, err := in.call(ctx, in.free, uint64(p)); err != nil {
		return 0, err
	}
	return addr, nil
}

// checkFact applies CheckQuery's rules to a fact as it sits in a query and returns its
// size as json.Marshal writes it there (an empty fact goes through JSON).
func checkFact(raw json.RawMessage) (int, error) {
	if len(raw) == 0 {
		return 0, errViaJSON
	}
	if err := core.CheckFact(raw); err != nil {
		return 0, err
	}
	return jsonx.GoLen(raw), nil
}

// Stats describes the engine's instances: their linear memory (which never shrinks) and
// the resident facts they hold.
type Stats struct {
	Instances     int    // instances read (every instance of the built variants)
	MemoryBytes   uint64 // their linear memory, summed
	ResidentBytes uint64 // heap bytes above the data that resident facts take, summed
	ResidentFacts int    // resident values (one per token and instance), summed
	Resets        int    // times an instance dropped its resident values at the bound
}

// Stats waits for every instance to be idle and reads it.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	vs := e.variants
	e.mu.Unlock()
	var s Stats
	for _, v := range vs {
		if v == nil {
			continue
		}
		held := make([]*instance, 0, cap(v.pool))
		for range cap(v.pool) {
			held = append(held, <-v.pool)
		}
		for _, in := range held {
			if in != nil {
				s.Instances++
				s.MemoryBytes += uint64(in.mem.Size())
				s.ResidentBytes += uint64(in.res.top - e.dataHeap)
				s.ResidentFacts += len(in.res.values)
				s.Resets += in.res.resets
			}
			v.pool <- in
		}
	}
	return s
}
