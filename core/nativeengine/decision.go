package nativeengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
)

// Typed decisions: Decide turns the policy's result value into a *core.Decision directly,
// each need's, effect's and error's parameter as json.RawMessage of its canonical JSON
// (rt.AppendCanonical), instead of writing the whole decision as canonical JSON and parsing
// it back (core.ParseDecision). The decision is the one core.ParseDecision gives for
// DecideJSON's text (TestTypedDecisionIsParseDecision): a result of any shape the fast
// path does not take exactly as ParseDecision would (an unknown member, a need without a
// key, a string that is not valid UTF-8, an invalid decision) goes through
// core.ParseDecision itself, so its errors and its odd cases are ParseDecision's.

// decideWith evaluates the decide entrypoint on the input value that input builds in the
// evaluation's arena, and returns the decision.
func (e *Engine) decideWith(ctx context.Context, input func(*rt.Eval) (*rt.V, error)) (*core.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ev := e.prog.Get(ctx)
	defer e.prog.Put(ev)
	in, err := input(ev)
	if err != nil {
		return nil, fmt.Errorf("nativeengine: malformed input: %w", err)
	}
	res, err := e.evalValue(ev, e.decide, in)
	if err != nil {
		return nil, err
	}
	return decisionOf(res)
}

// evalValue runs plan on in and returns its one result (in ev's arena).
func (e *Engine) evalValue(ev *rt.Eval, plan func(*rt.Eval, *rt.V, *rt.V) *rt.V, in *rt.V) (*rt.V, error) {
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

// decisionOf is core.ParseDecision(rt.AppendCanonical(nil, res)), mostly without the text.
// Nothing it returns points into the evaluation's arena.
func decisionOf(res *rt.V) (*core.Decision, error) {
	b := decisionBuilder{buf: make([]byte, 0, 512)} // the gate's decisions fit
	if d, ok := b.decision(res); ok {
		return d, nil
	}
	slowDecisions.Add(1)
	return core.ParseDecision(rt.AppendCanonical(nil, res))
}

// slowDecisions counts the decisions that took core.ParseDecision (tests check that the
// policy's own decisions never do).
var slowDecisions atomic.Uint64

// decisionBuilder copies what a decision keeps (strings, parameters' JSON) into one
// buffer it only appends to: every slice and string handed out stays as written.
type decisionBuilder struct {
	buf []byte
}

// raw appends v's canonical JSON and returns it.
func (b *decisionBuilder) raw(v *rt.V) json.RawMessage {
	start := len(b.buf)
	b.buf = rt.AppendCanonical(b.buf, v)
	return b.buf[start:len(b.buf):len(b.buf)]
}

// str copies s out of the arena.
func (b *decisionBuilder) str(s string) string {
	if s == "" {
		return ""
	}
	start := len(b.buf)
	b.buf = append(b.buf, s...)
	return unsafe.String(&b.buf[start], len(s))
}

// lifted is what encoding/json decodes from v into a string: the string itself, or ""
// for any other value; ok is false for a string that is not valid UTF-8 (json would
// decode it with replacement characters).
func lifted(v *rt.V) (s string, ok bool) {
	if s, isStr := rt.Str(v); isStr {
		return s, utf8.ValidString(s)
	}
	return "", true
}

// stringKeyed reports whether every key of an object is a string of valid UTF-8 (keys
// as encoding/json decodes them back from canonical JSON).
func stringKeyed(keys []*rt.V) bool {
	for _, k := range keys {
		s, ok := rt.Str(k)
		if !ok || !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// decision builds the decision; ok is false when res is anything the fast path does not
// decode exactly as core.ParseDecision does.
func (b *decisionBuilder) decision(res *rt.V) (*core.Decision, bool) {
	keys, vals := rt.Members(res)
	if keys == nil && res.Kind() != rt.KObj {
		return nil, false
	}
	d := &core.Decision{}
	for i, k := range keys {
		name, _ := rt.Str(k)
		v := vals[i]
		switch name {
		case "status":
			switch s, _ := rt.Str(v); {
			case v.Kind() == rt.KStr && s == core.StatusNeed:
				d.Status = core.StatusNeed
			case v.Kind() == rt.KStr && s == core.StatusDone:
				d.Status = core.StatusDone
			default:
				return nil, false
			}
		case "needs":
			if v.Kind() != rt.KArr && v.Kind() != rt.KSet {
				return nil, false
			}
			elems := rt.Elems(v)
			d.Needs = make([]core.Need, 0, len(elems))
			for _, x := range elems {
				params, lifts, ok := b.params(x, "key", "kind")
				if !ok || lifts[0] == "" || lifts[1] == "" {
					return nil, false
				}
				d.Needs = append(d.Needs, core.Need{Key: lifts[0], Kind: lifts[1], Params: params})
			}
		case "effects":
			if v.Kind() != rt.KArr && v.Kind() != rt.KSet {
				return nil, false
			}
			elems := rt.Elems(v)
			d.Effects = make([]core.Effect, 0, len(elems))
			for _, x := range elems {
				params, lifts, ok := b.params(x, "kind")
				if !ok || lifts[0] == "" {
					return nil, false
				}
				d.Effects = append(d.Effects, core.Effect{Kind: lifts[0], Params: params})
			}
		case "result":
			if v.Kind() == rt.KNull {
				return nil, false
			}
			d.Result = b.raw(v)
		case "error":
			if v.Kind() != rt.KObj {
				return nil, false
			}
			fields, lifts, ok := b.params(v, "code", "message", "fix")
			if !ok {
				return nil, false
			}
			d.Error = &core.Error{Code: lifts[0], Message: lifts[1], Fix: lifts[2], Fields: fields}
		default:
			// encoding/json matches member names in any case and ignores unknown ones:
			// ParseDecision says what such a member means.
			return nil, false
		}
	}
	switch d.Status {
	case core.StatusNeed:
		if len(d.Needs) == 0 {
			return nil, false
		}
	case core.StatusDone:
		if (d.Error == nil) == (d.Result == nil) {
			return nil, false
		}
	default:
		return nil, false
	}
	return d, true
}

// params splits an object as core's UnmarshalJSON of a need, an effect or an error
// does: the members named in lift (at most three) decoded as strings and left out (lifts,
// in lift's order; "" when absent or not a string), every other member kept as its JSON.
func (b *decisionBuilder) params(obj *rt.V, lift ...string) (params map[string]json.RawMessage, lifts [3]string, ok bool) {
	keys, vals := rt.Members(obj)
	if obj.Kind() != rt.KObj || !stringKeyed(keys) {
		return nil, lifts, false
	}
	params = make(map[string]json.RawMessage, len(keys))
next:
	for i, k := range keys {
		name, _ := rt.Str(k)
		for j, l := range lift {
			if name == l {
				s, valid := lifted(vals[i])
				if !valid {
					return nil, lifts, false
				}
				lifts[j] = b.str(s)
				continue next
			}
		}
		params[b.str(name)] = b.raw(vals[i])
	}
	return params, lifts, true
}
