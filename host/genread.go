package host

import (
	"context"
	"errors"

	"github.com/grantwire/grantwire/hostabi"
)

// KeyringGenerationReads is implemented by a Keyring capability that keeps a cache of its
// own behind the generation of KeyringGenerations (shells/native). GetAt is Get for a
// caller that has taken the generation gen before the read: the capability answers from
// its cache a value it read at gen, and otherwise reads the store and keeps the value
// under gen. The host and the capability then share one look at the generation per
// operation (at most one stat per generation file) instead of taking one each per read.
type KeyringGenerationReads interface {
	GetAt(ctx context.Context, service, user, gen string) (string, error)
}

// readStore reads a slot from the store (through the capability's cache at gen when it
// has one and the generation is known) and remembers it under gen, which the caller took
// before the read.
func (o *Op) readStore(ctx context.Context, user, gen string, known bool) (string, bool, error) {
	c := o.h.caps
	var v string
	var err error
	if r, ok := c.Keyring.(KeyringGenerationReads); ok && known {
		v, err = r.GetAt(ctx, c.Service, user, gen)
	} else {
		v, err = c.Keyring.Get(ctx, c.Service, user)
	}
	if errors.Is(err, hostabi.ErrNotFound) {
		o.h.remember(user, "", false, gen)
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	o.h.remember(user, v, true, gen)
	return v, true, nil
}
