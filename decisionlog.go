package grantwire

import (
	"encoding/json"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/decisionlog"
)

// Record converts the decision for a decision log.
func (d Decision) Record() decisionlog.Record {
	r := decisionlog.Record{
		Op: d.Op, Args: d.Args, Input: d.Input, Output: d.Output, Revision: d.Revision,
		Engine: d.Engine, Bundle: d.Bundle, Rounds: d.Rounds, At: d.At, Duration: d.Duration,
	}
	if d.HostFailure && d.Error != nil {
		r.Host = &core.Error{Code: d.Error.Code, Message: d.Error.Message}
	}
	return r
}

// observer combines the WithObserver functions into one (nil when none).
func (c *config) observer() func(Decision) {
	fns := c.observers
	switch len(fns) {
	case 0:
		return nil
	case 1:
		return fns[0]
	}
	return func(d Decision) {
		for _, fn := range fns {
			fn(d)
		}
	}
}

// queryJSON renders a query as the engines receive it (nil stays nil).
func queryJSON(q *core.Query) json.RawMessage {
	if q == nil {
		return nil
	}
	raw, err := json.Marshal(q)
	if err != nil {
		return nil
	}
	return raw
}

// decisionJSON renders a done decision in the engines' shape (nil stays nil).
func decisionJSON(d *core.Decision) json.RawMessage {
	if d == nil {
		return nil
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil
	}
	return raw
}
