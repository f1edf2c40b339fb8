package nativeengine

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
)

// decisionOf turns the policy's result into a core.Decision without the JSON round trip
// of core.ParseDecision: every raw member (a need's or an effect's parameters, the
// result, an error's fields) is the canonical JSON that ParseDecision would have cut out
// of the decision's canonical JSON, byte for byte. A result of any other shape, and a
// decision ParseDecision refuses, go through ParseDecision itself, so that the outcome
// is always ParseDecision's.
//
// The raw members are written into one buffer, which the decision keeps; hint is its
// expected size (the size of the last decision of the same operation: a listing is large
// call after call), so that a large decision is written once, without growing copies.
// size is what it took.
func decisionOf(res *rt.V, hint int) (d *core.Decision, size int, err error) {
	b := builderPool.Get().(*builder)
	defer b.release()
	b.buf = make([]byte, 0, max(hint+hint/16, 256))
	if d := b.decision(res); d != nil {
		return d, len(b.buf), nil
	}
	d, err = core.ParseDecision(rt.AppendCanonical(nil, res))
	return d, 0, err
}

// builder writes the canonical JSON of a decision's raw members into one buffer, which
// the decision's raw members are cut from.
type builder struct {
	buf    []byte
	pieces []piece
}

// piece is a raw member: where its bytes are in buf, and where it goes.
type piece struct {
	start, end int
	where      int    // -1: the result; -2: the error's fields; else a need's or effect's index
	key        string // the member's name
}

var builderPool = sync.Pool{New: func() any { return new(builder) }}

func (b *builder) release() {
	if cap(b.pieces) > 4096 {
		b.pieces = nil
	}
	b.buf, b.pieces = nil, b.pieces[:0]
	builderPool.Put(b)
}

func (b *builder) raw(v *rt.V, where int, key string) {
	start := len(b.buf)
	b.buf = rt.AppendCanonical(b.buf, v)
	b.pieces = append(b.pieces, piece{start, len(b.buf), where, key})
}

// str is a string member as ParseDecision reads it back ("", false unless a valid UTF-8
// string): a copy, since the evaluation's strings live in its arena, which the next
// evaluation overwrites.
func str(v *rt.V) (string, bool) {
	s, ok := rt.Str(v)
	if !ok || !utf8.ValidString(s) {
		return "", false
	}
	return strings.Clone(s), true
}

// members writes an object's members as raw pieces, except the lifted ones (strings),
// returned in order. ok is false for anything ParseDecision might read otherwise.
func (b *builder) members(v *rt.V, where int, lift ...string) (params map[string]json.RawMessage, lifted []string, ok bool) {
	if v.Kind() != rt.KObj {
		return nil, nil, false
	}
	keys, vals := rt.Members(v)
	params = make(map[string]json.RawMessage, len(keys))
	lifted = make([]string, len(lift))
next:
	for i, k := range keys {
		ks, ok := str(k)
		if !ok {
			return nil, nil, false
		}
		for j, l := range lift {
			if ks == l {
				if lifted[j], ok = str(vals[i]); !ok {
					return nil, nil, false
				}
				continue next
			}
		}
		params[ks] = nil
		b.raw(vals[i], where, ks)
	}
	return params, lifted, true
}

// decision builds the decision, or returns nil when ParseDecision must judge.
func (b *builder) decision(res *rt.V) *core.Decision {
	if res.Kind() != rt.KObj {
		return nil
	}
	d := &core.Decision{}
	keys, vals := rt.Members(res)
	var needs, effects *rt.V
	for i, k := range keys {
		ks, _ := rt.Str(k)
		v := vals[i]
		switch {
		case k.Kind() != rt.KStr:
			return nil
		case ks == "status":
			s, ok := str(v)
			if !ok {
				return nil
			}
			d.Status = s
		case ks == "needs":
			if v.Kind() != rt.KArr {
				return nil
			}
			needs = v
		case ks == "effects":
			if v.Kind() != rt.KArr {
				return nil
			}
			effects = v
		case ks == "result":
			b.raw(v, -1, "")
		case ks == "error":
			params, lifted, ok := b.members(v, -2, "code", "message", "fix")
			if !ok {
				return nil
			}
			d.Error = &core.Error{Code: lifted[0], Message: lifted[1], Fix: lifted[2], Fields: params}
		default:
			return nil // encoding/json matches names regardless of case: let it judge
		}
	}
	if needs != nil {
		elems, _ := rt.Members(needs)
		d.Needs = make([]core.Need, len(elems))
		for i, x := range elems {
			params, lifted, ok := b.members(x, i, "key", "kind")
			if !ok || lifted[0] == "" || lifted[1] == "" {
				return nil
			}
			d.Needs[i] = core.Need{Key: lifted[0], Kind: lifted[1], Params: params}
		}
	}
	if effects != nil {
		elems, _ := rt.Members(effects)
		d.Effects = make([]core.Effect, len(elems))
		for i, x := range elems {
			params, lifted, ok := b.members(x, len(d.Needs)+i, "kind")
			if !ok || lifted[0] == "" {
				return nil
			}
			d.Effects[i] = core.Effect{Kind: lifted[0], Params: params}
		}
	}
	switch d.Status {
	case core.StatusNeed:
		if len(d.Needs) == 0 {
			return nil
		}
	case core.StatusDone:
		hasResult := false
		for _, p := range b.pieces {
			hasResult = hasResult || p.where == -1
		}
		if (d.Error == nil) == !hasResult {
			return nil
		}
	default:
		return nil
	}
	out := b.buf
	for _, p := range b.pieces {
		raw := json.RawMessage(out[p.start:p.end:p.end])
		switch {
		case p.where == -1:
			d.Result = raw
		case p.where == -2:
			d.Error.Fields[p.key] = raw
		case p.where < len(d.Needs):
			d.Needs[p.where].Params[p.key] = raw
		default:
			d.Effects[p.where-len(d.Needs)].Params[p.key] = raw
		}
	}
	return d
}
