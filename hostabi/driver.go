package hostabi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/grantwire/grantwire/core"
)

// MaxRounds bounds the questions one operation may ask; a policy that keeps asking is a bug.
const MaxRounds = 64

// Driver runs operations: gather facts → ask the core → perform what it asks → repeat. It
// knows no operation by name: per operation it only reads the policy's prefetch templates.
type Driver struct {
	Engine core.Engine
	Host   *Host
}

// Outcome is an operation's end: a result (JSON that may hold {"$ref": ...} secret
// references) or an error. Secret resolves the references of this operation only.
type Outcome struct {
	Result json.RawMessage
	Error  *core.Error
	Rounds int
	// Query is the last query the core answered with a done decision (op, args, the final
	// facts, attempt), and Decision that decision; both are nil when a host failure ended
	// the operation before the core decided. They hold no secret (facts carry digests and
	// references only); decision logs record them.
	Query    *core.Query
	Decision *core.Decision
	// HostFailure is set when the shell, not the policy, ended the operation (a keyring or
	// ledger failure: INSECURE_STORE, CORRUPT_LEDGER, ...); Error is then the same error.
	HostFailure *core.Error
	op          *Op
}

// Secret resolves a secret reference of the result.
func (o *Outcome) Secret(ref string) (string, bool) { return o.op.Secret(ref) }

// Run performs one operation. secrets are the operation's secret arguments (referenced by
// the core as "arg#<name>"). Host failures (INSECURE_STORE, CORRUPT_LEDGER, ...) end the
// operation with their *core.Error as Outcome.Error; err is for bugs and cancellation.
func (d *Driver) Run(ctx context.Context, op string, args any, secrets map[string]string) (*Outcome, error) {
	rawArgs, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("hostabi: encode args: %w", err)
	}
	o := d.Host.Begin(op, secrets)
	defer o.End()
	q := &core.Query{Op: op, Args: rawArgs, Facts: map[string]json.RawMessage{}}
	out := &Outcome{op: o}
	var pending []core.Need
	if m := d.Engine.Manifest(); m != nil {
		pending = instantiate(m.Ops[op].Prefetch, rawArgs)
	}
	for ; out.Rounds < MaxRounds; out.Rounds++ {
		q.Round = out.Rounds
		dec, err := d.ask(ctx, o, q, pending)
		if err == nil && dec.Status == core.StatusNeed {
			pending = dec.Needs
			continue
		}
		if err == nil {
			// q.Facts is replaced, never changed, after a done decision: a copy of q is stable.
			final := *q
			out.Query, out.Decision = &final, dec
			// Cancelled before the effects: write nothing (issue 10, item 17).
			if err = ctx.Err(); err == nil {
				err = o.Apply(ctx, dec.Effects)
			}
			if err == nil {
				out.Result, out.Error = dec.Result, dec.Error
				return out, nil
			}
		}
		if !errors.Is(err, ErrConflict) {
			var ce *core.Error
			if errors.As(err, &ce) {
				out.Error, out.HostFailure = ce, ce
				return out, nil
			}
			return nil, err
		}
		// A precondition failed: decide again from fresh facts, keeping the locks held.
		out.Query, out.Decision = nil, nil
		q.Attempt++
		kept := map[string]json.RawMessage{}
		for k, v := range q.Facts {
			if string(v) == `"held"` {
				kept[k] = v
			}
		}
		q.Facts, pending = kept, nil
	}
	return nil, fmt.Errorf("hostabi: %s asked more than %d questions", op, MaxRounds)
}

// ask gathers the pending facts, then asks the core.
func (d *Driver) ask(ctx context.Context, o *Op, q *core.Query, pending []core.Need) (*core.Decision, error) {
	if err := d.gather(ctx, o, q, pending); err != nil {
		return nil, err
	}
	return d.Engine.Decide(ctx, q)
}

// gather fetches needs in order. A need marked "after" a lock is skipped unless that lock
// is held; a fact already present is not fetched again.
func (d *Driver) gather(ctx context.Context, o *Op, q *core.Query, needs []core.Need) error {
	for _, n := range needs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, done := q.Facts[n.Key]; done {
			continue
		}
		if after := n.Str("after"); after != "" && string(q.Facts[after]) != `"held"` {
			continue
		}
		v, err := o.Fetch(ctx, n)
		if err != nil {
			return err
		}
		q.Facts[n.Key] = v
	}
	return nil
}

// instantiate turns prefetch templates into needs by replacing {"$arg": name} with the
// argument. A template whose argument is missing or not a string is dropped: the core
// will ask for what it needs (or report the usage error) in its first answer.
func instantiate(templates json.RawMessage, args json.RawMessage) []core.Need {
	var tmpl []map[string]json.RawMessage
	var a map[string]json.RawMessage
	if json.Unmarshal(templates, &tmpl) != nil || json.Unmarshal(args, &a) != nil {
		return nil
	}
	var out []core.Need
next:
	for _, t := range tmpl {
		n := core.Need{Params: map[string]json.RawMessage{}}
		for k, v := range t {
			s, ok := substitute(v, a)
			if !ok {
				continue next
			}
			n.Params[k] = s
		}
		raw, _ := json.Marshal(n.Params)
		if json.Unmarshal(raw, &n) == nil {
			out = append(out, n)
		}
	}
	return out
}

func substitute(v json.RawMessage, args map[string]json.RawMessage) (json.RawMessage, bool) {
	var ref struct {
		Arg *string `json:"$arg"`
	}
	if json.Unmarshal(v, &ref) == nil && ref.Arg != nil {
		val, ok := args[*ref.Arg]
		var s string
		if !ok || json.Unmarshal(val, &s) != nil {
			return nil, false
		}
		return val, true
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		for i, e := range list {
			s, ok := substitute(e, args)
			if !ok {
				return nil, false
			}
			list[i] = s
		}
		b, _ := json.Marshal(list)
		return b, true
	}
	return v, true
}
