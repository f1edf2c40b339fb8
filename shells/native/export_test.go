package native

import (
	"maps"
	"sync"
	"sync/atomic"
)

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

// CountStats counts the shell's stats of file stamps by path until the returned function
// stops counting and returns the counts.
func CountStats(s *Shell) (stop func() map[string]int) {
	var mu sync.Mutex
	counts := map[string]int{}
	f := func(p string) (string, bool, error) {
		mu.Lock()
		counts[p]++
		mu.Unlock()
		return lstatStamp(p)
	}
	s.keyring.gen.stat, s.ledgers.stat = f, f
	return func() map[string]int {
		s.keyring.gen.stat, s.ledgers.stat = nil, nil
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(counts)
	}
}
