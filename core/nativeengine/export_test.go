package nativeengine

import (
	"context"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
)

// DecisionOfJSON turns a decision given as JSON into the policy's value and builds the
// typed decision from it (fast reports whether the builder took it without
// core.ParseDecision), beside what core.ParseDecision gives for the value's canonical JSON.
func DecisionOfJSON(e *Engine, decision string) (typed *core.Decision, terr error, parsed *core.Decision, perr error, fast bool) {
	ev := e.prog.Get(context.Background())
	defer e.prog.Put(ev)
	v, err := ev.ParseValue(decision)
	if err != nil {
		panic(err)
	}
	b := builderPool.Get().(*builder)
	fast = b.decision(v) != nil
	b.release()
	typed, _, terr = decisionOf(v, 0)
	parsed, perr = core.ParseDecision(rt.AppendCanonical(nil, v))
	return typed, terr, parsed, perr, fast
}
