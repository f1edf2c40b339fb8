package hostabi

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/grantwire/grantwire/core"
)

// The needs of an operation's prefetch templates depend only on the templates and the
// operation's arguments, and a long-lived process asks the same operation with the same
// arguments call after call (a token hand-out): instantiate's JSON round trips cost more
// than the policy's own decision, so each Driver remembers the needs per (templates,
// arguments). The remembered needs are shared between operations and never changed:
// nothing writes a need (the driver and the hosts only read their parameters).

// maxPrefetchMemo bounds the remembered (templates, arguments) pairs; maxPrefetchArgs the
// size of arguments worth remembering.
const (
	maxPrefetchMemo = 256
	maxPrefetchArgs = 4 << 10
)

// prefetchMemo is a Driver's remembered needs: templates → arguments → needs. Its zero
// value is empty and ready.
type prefetchMemo struct {
	mu sync.Mutex
	m  map[string]map[string][]core.Need
	n  int // pairs remembered
}

// needs is instantiate(templates, args), remembered. A lookup copies nothing: the
// compiler indexes a map by string(b) without converting b.
func (pm *prefetchMemo) needs(templates, args json.RawMessage) []core.Need {
	if len(templates) == 0 || len(args) == 0 || len(args) > maxPrefetchArgs {
		return instantiate(templates, args)
	}
	pm.mu.Lock()
	needs, ok := pm.m[string(templates)][string(args)]
	pm.mu.Unlock()
	if ok {
		return needs
	}
	needs = instantiate(templates, args)
	pm.mu.Lock()
	if pm.m == nil || pm.n >= maxPrefetchMemo {
		pm.m, pm.n = make(map[string]map[string][]core.Need), 0
	}
	byArgs := pm.m[string(templates)]
	if byArgs == nil {
		byArgs = make(map[string][]core.Need)
		pm.m[string(templates)] = byArgs
	}
	if _, had := byArgs[string(args)]; !had {
		pm.n++
	}
	byArgs[string(args)] = needs
	pm.mu.Unlock()
	return needs
}

// mayNameHostError reports whether a JSON object may have a member encoding/json would
// decode as "host_error": a name spelled so in any case, or any escape or non-ASCII byte
// (encoding/json matches names case-insensitively, with Unicode folding). Facts without
// one are no host failure, and isHostError need not decode them.
func mayNameHostError(v []byte) bool {
	const name = "host_error"
	for i, b := range v {
		switch {
		case b == '\\' || b >= 0x80:
			return true
		case b == '_' && i >= 4 && i+6 <= len(v) && bytes.EqualFold(v[i-4:i+6], []byte(name)):
			return true
		}
	}
	return false
}
