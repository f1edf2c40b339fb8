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

// engineJSON renders a query or a done decision as the engines receive and give them
// (nil stays nil).
func engineJSON[T core.Query | core.Decision](v *T) json.RawMessage {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return raw
}
