package native

import (
	"context"
	"errors"
	"time"

	"github.com/grantwire/grantwire/hostabi"
)

// GetAt is Get for package host (host.KeyringGenerationReads), which has just taken the generation gen of service
// (Generation) before the read: the cached value is answered when it was read at gen
// (and is younger than cacheMaxAge), else the store is read and its value cached under
// gen. It saves the second look at the generation files that Get would take: one stat
// per generation file per operation.
func (k *keyringStore) GetAt(ctx context.Context, service, user, gen string) (string, error) {
	if k.cache == nil || !ownService(service) || gen == "" {
		return k.Get(ctx, service, user)
	}
	c := k.cache
	c.mu.Lock()
	v, hit := c.m[[2]string{service, user}]
	c.mu.Unlock()
	if hit && v.gen == gen && time.Since(v.at) <= cacheMaxAge {
		if !v.found {
			return "", notFound(service, user)
		}
		return v.value, nil
	}
	value, err := k.get(ctx, service, user)
	switch {
	case err == nil:
		c.put(service, user, gen, value, true)
	case errors.Is(err, hostabi.ErrNotFound):
		c.put(service, user, gen, "", false)
	}
	return value, err
}
