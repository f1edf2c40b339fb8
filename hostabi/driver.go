package hostabi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/grantwire/grantwire/core"
)

// MaxRounds bounds the questions one operation may ask; a policy that keeps asking is a bug.
// The longest operation is a connect through the device flow: one question per poll of the
// token endpoint, at most 300 of them (the policy's connect.max_polls), plus about a dozen.
const MaxRounds = 400

// CommitTimeout bounds an operation once it has committed (a need with commit: true is on
// the wire): from there it finishes and saves what it got even if its caller is cancelled.
const CommitTimeout = 60 * time.Second

// Driver runs operations: gather facts → ask the core → perform what it asks → repeat. It
// knows no operation and no kind by name: per operation it only reads the policy's
// prefetch templates.
type Driver struct {
	Engine core.Engine
	Host   Host

	prefetch prefetchMemo // the needs of prefetch templates, per (templates, arguments)
}

// Outcome is an operation's end: a result (JSON that may hold {"$ref": ...} secret
// references) or an error. Secret resolves the references of this operation only.
type Outcome struct {
	Result json.RawMessage
	Error  *core.Error
	Rounds int
	// Query is the last query the core answered (op, args, the final facts, attempt), and
	// Decision its done decision. They hold no secret (facts carry descriptions only);
	// decision logs record them.
	Query    *core.Query
	Decision *core.Decision
	// HostFailure reports that a host failure (a host_error fact) ended the operation.
	HostFailure bool
	perf        Performer
}

// Secret resolves a secret reference of the result.
func (o *Outcome) Secret(ref string) (string, bool) { return o.perf.Secret(ref) }

// SecretRef is a secret reference as a result holds it, {"$ref": ...}: Outcome.Secret
// resolves its Ref.
type SecretRef struct {
	Ref string `json:"$ref"`
}

// ErrCanceled is returned when the caller cancelled the operation before it committed:
// nothing was applied.
var ErrCanceled = errors.New("hostabi: operation canceled before anything was written")

// Run performs one operation. secrets are the operation's secret arguments, described to
// the core under facts["arg"] and referenced as "arg#<name>". err is for bugs and for a
// cancellation before anything was written (wrapping ErrCanceled and ctx.Err()).
func (d *Driver) Run(ctx context.Context, op string, args any, secrets map[string]string) (*Outcome, error) {
	rawArgs, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("hostabi: encode args: %w", err)
	}
	p := d.Host.Begin(op)
	defer p.End()
	base := map[string]json.RawMessage{}
	if len(secrets) > 0 {
		names := make([]string, 0, len(secrets))
		for k, v := range secrets {
			if v != "" {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		arg := make(map[string]json.RawMessage, len(names))
		for _, k := range names {
			arg[k] = p.Describe(FactArgs+"#"+k, secrets[k])
		}
		base[FactArgs], _ = json.Marshal(arg)
	}
	q := &core.Query{Op: op, Args: rawArgs, Facts: copyFacts(base, nil)}
	out := &Outcome{perf: p}
	var pending []core.Need
	if m := d.Engine.Manifest(); m != nil {
		pending = d.prefetch.needs(m.Ops[op].Prefetch, rawArgs)
	}
	runCtx, committed := ctx, false
	for ; out.Rounds < MaxRounds; out.Rounds++ {
		q.Round = out.Rounds
		for _, n := range pending {
			if _, done := q.Facts[n.Key]; done {
				continue
			}
			if after := n.Str("after"); after != "" && string(q.Facts[after]) != `"`+Held+`"` {
				continue
			}
			if !committed {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("%w: %w", ErrCanceled, err)
				}
				if n.Bool("commit") {
					committed = true
					var stop context.CancelFunc
					runCtx, stop = context.WithTimeout(context.WithoutCancel(ctx), CommitTimeout)
					defer stop() // once: committed is set only here
				}
			}
			v, token, err := fetch(runCtx, p, n)
			if err != nil {
				return nil, canceled(ctx, committed, err)
			}
			q.Facts[n.Key] = v
			setToken(q, n.Key, token)
			if token == "" && isHostError(v) { // a fact with a token is never a host failure
				out.HostFailure = true
			}
		}
		dec, err := d.Engine.Decide(runCtx, q)
		if err != nil {
			return nil, canceled(ctx, committed, err)
		}
		if dec.Status == core.StatusNeed {
			pending = dec.Needs
			continue
		}
		if !committed && len(dec.Effects) > 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrCanceled, err)
			}
		}
		err = p.Apply(runCtx, dec.Effects)
		if err == nil {
			final := *q
			out.Query, out.Decision = &final, dec
			out.Result, out.Error = dec.Result, dec.Error
			return out, nil
		}
		pending = nil
		if errors.Is(err, ErrConflict) {
			// A precondition failed: decide again from fresh facts, keeping held locks.
			q.Attempt++
			q.Facts = copyFacts(base, q.Facts)
			q.Tokens = nil // the facts kept (arguments, held locks) have none
			continue
		}
		var he *HostError
		if !errors.As(err, &he) {
			return nil, canceled(ctx, committed, err)
		}
		// The core reports the failure (and decides nothing more is applied).
		out.HostFailure = true
		q.Facts[FactApply+strconv.Itoa(q.Attempt)], _ = json.Marshal(map[string]any{"host_error": he})
		setToken(q, FactApply+strconv.Itoa(q.Attempt), "")
	}
	return nil, fmt.Errorf("hostabi: %s asked more than %d questions", op, MaxRounds)
}

// fetch answers a need, with the fact's token when the performer names facts.
func fetch(ctx context.Context, p Performer, n core.Need) (json.RawMessage, string, error) {
	if tf, ok := p.(TokenFetcher); ok {
		return tf.FetchToken(ctx, n)
	}
	v, err := p.Fetch(ctx, n)
	return v, "", err
}

// setToken records the token of the fact under key ("" drops a token the key had: the
// fact was replaced by one without).
func setToken(q *core.Query, key, token string) {
	if token == "" {
		delete(q.Tokens, key)
		return
	}
	if q.Tokens == nil {
		q.Tokens = map[string]string{}
	}
	q.Tokens[key] = token
}

// canceled reports a failure caused by the caller's cancellation before the operation
// committed as ErrCanceled (nothing was written); other errors stay as they are.
func canceled(ctx context.Context, committed bool, err error) error {
	if !committed && ctx.Err() != nil && !errors.Is(err, ErrCanceled) {
		return fmt.Errorf("%w: %w", ErrCanceled, ctx.Err())
	}
	return err
}

// copyFacts returns base plus the facts of from that report a held lock.
func copyFacts(base, from map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(base)+4)
	for k, v := range base {
		out[k] = v
	}
	for k, v := range from {
		if string(v) == `"`+Held+`"` {
			out[k] = v
		}
	}
	return out
}

func isHostError(v json.RawMessage) bool {
	if len(v) < 14 || v[0] != '{' || !mayNameHostError(v) {
		return false
	}
	var f struct {
		HostError *HostError `json:"host_error"`
	}
	return json.Unmarshal(v, &f) == nil && f.HostError != nil
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
		params := map[string]json.RawMessage{}
		for k, v := range t {
			s, ok := substitute(v, a)
			if !ok {
				continue next
			}
			params[k] = s
		}
		raw, err := json.Marshal(params)
		if err != nil {
			continue
		}
		var n core.Need
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
		b, err := json.Marshal(list)
		return b, err == nil
	}
	return v, true
}
