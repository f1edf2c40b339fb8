package host

import (
	"context"
	"errors"

	"github.com/grantwire/grantwire/hostabi"
)

// readStore reads a slot from the store and remembers it under gen, which the caller took
// before the read (known: the capability vouches for gen, so the slot may answer fresh
// reads while gen is current: cache.go).
func (o *Op) readStore(ctx context.Context, user, gen string, known bool) (string, bool, error) {
	c := o.h.caps
	v, err := c.Keyring.Get(ctx, c.Service, user)
	if errors.Is(err, hostabi.ErrNotFound) {
		o.h.remember(user, "", false, gen, known)
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	o.h.remember(user, v, true, gen, known)
	return v, true, nil
}

// readNow is a fresh read judged at gen, a look at the generation taken now (an effect's
// precondition): answered by a slot read from the store at gen, else read.
func (o *Op) readNow(ctx context.Context, user, gen string, known bool) (string, bool, error) {
	if known {
		if s, ok := o.h.recall(user, true, func() (string, bool) { return gen, true }); ok {
			return s.value, s.found, nil
		}
	}
	return o.readStore(ctx, user, gen, known)
}
