package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
)

// Apply applies effects in order and stops at the first failure. A run of consecutive
// effects that carry undo is a transaction: when one of them fails, the undo effects of
// those before it in the run are applied in reverse order.
//
// # Errors
//
// A failed precondition wraps hostabi.ErrConflict (the driver decides again from fresh
// facts). A capability's failure is a *hostabi.HostError; a malformed effect is a plain
// error (a policy bug).
func (o *Op) Apply(ctx context.Context, effects []core.Effect) error {
	runStart := 0
	for i, e := range effects {
		if !e.Has("undo") {
			runStart = i + 1
		}
		o.yield(ctx)
		err := o.apply(ctx, e)
		if err == nil {
			o.trace("==> apply %s", effectLine(e))
			// The first effect applied is the commit point: a cancellation that comes later
			// no longer stops the others (the operation is not left half done).
			ctx = context.WithoutCancel(ctx)
			continue
		}
		o.trace("==> apply %s\n<== error %v", effectLine(e), err)
		if e.Has("undo") {
			if uerr := o.undo(context.WithoutCancel(ctx), effects[runStart:i]); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
		return classify(err)
	}
	return nil
}

// classify keeps conflicts and host errors as they are and turns a capability's other
// failures into a host error.
func classify(err error) error {
	var he *hostabi.HostError
	switch {
	case errors.Is(err, hostabi.ErrConflict) && !errors.As(err, &he):
		return err
	case errors.As(err, &he):
		if he.Detail != err.Error() {
			return &hostabi.HostError{Code: he.Code, Detail: err.Error(), Fix: he.Fix}
		}
		return he
	case errors.Is(err, errPolicy):
		return err
	case errors.Is(err, hostabi.ErrCanceled) && !errors.As(err, &he):
		return err // cancelled before the commit point: nothing was written
	}
	return &hostabi.HostError{Code: hostabi.HostErrIO, Detail: err.Error()}
}

// errPolicy marks a malformed effect.
var errPolicy = errors.New("host: malformed effect")

func (o *Op) undo(ctx context.Context, done []core.Effect) error {
	var errs error
	for i := len(done) - 1; i >= 0; i-- {
		var list []core.Effect
		if err := done[i].Decode("undo", &list); err != nil {
			errs = errors.Join(errs, fmt.Errorf("%w: undo: %w", errPolicy, err))
			continue
		}
		for _, u := range list {
			if err := o.apply(ctx, u); err != nil {
				o.trace("==> undo %s\n<== error %v", effectLine(u), err)
				errs = errors.Join(errs, fmt.Errorf("restoring after the failure: %w", err))
				continue
			}
			o.trace("==> undo %s", effectLine(u))
		}
	}
	return errs
}

func effectLine(e core.Effect) string {
	b, _ := json.Marshal(e)
	return string(b)
}

func (o *Op) apply(ctx context.Context, e core.Effect) error {
	c := o.h.caps
	switch e.Kind {
	case hostabi.EffectKeyringSet, hostabi.EffectKeyringDelete:
		return o.keyringEffect(ctx, e)
	case hostabi.EffectLedgerWrite:
		return o.ledgerWrite(ctx, e)
	case hostabi.EffectLockRelease:
		name := e.Str("name")
		if release, ok := o.locks[name]; ok {
			release()
			delete(o.locks, name)
		}
		return nil
	case hostabi.EffectEventEmit:
		if c.Events != nil {
			c.Events.Emit(hostabi.Event{Type: e.Str("type"), Payload: e.Params["payload"]})
		}
		return nil
	case hostabi.EffectHTTPSend:
		r, err := o.buildRequest(e.Params)
		if err != nil {
			return fmt.Errorf("%w: %w", errPolicy, err)
		}
		_, _ = o.send(ctx, "send", r) // best effort: the outcome is ignored
		return nil
	}
	return fmt.Errorf("%w: unknown effect kind %q", errPolicy, e.Kind)
}
