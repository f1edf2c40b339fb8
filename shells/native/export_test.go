package native

import "sync/atomic"

// CountKeyringReads makes the shell count the reads its keyring sends to the store (the
// Secret Service), for tests of the cache.
func CountKeyringReads(s *Shell) *atomic.Int64 {
	n := &atomic.Int64{}
	s.keyring.b = countingBackend{s.keyring.b, n}
	return n
}

type countingBackend struct {
	backend
	n *atomic.Int64
}

func (c countingBackend) Get(service, user string) (string, error) {
	c.n.Add(1)
	return c.backend.Get(service, user)
}
