package hostabi

import (
	"bytes"
	"encoding/json"
	"sync"
	"unsafe"

	"github.com/grantwire/grantwire/core"
)

// The needs of an operation's prefetch templates depend only on the templates and the
// operation's arguments, and a long-lived process asks the same operation with the same
// arguments call after call (a token hand-out): instantiate's JSON round trips cost more
// than the policy's own decision, so the needs are remembered per (templates, arguments).
// The remembered needs are shared between operations and never changed: nothing writes a
// need (the driver and the hosts only read their parameters).

// maxPrefetchMemo bounds the remembered (templates, arguments) pairs; maxPrefetchArgs the
// size of arguments worth remembering.
const (
	maxPrefetchMemo = 256
	maxPrefetchArgs = 4 << 10
)

type prefetchKey struct{ templates, args string }

var prefetchMemo struct {
	sync.Mutex
	m map[prefetchKey][]core.Need
}

// prefetch is instantiate(templates, args), remembered.
func prefetch(templates, args json.RawMessage) []core.Need {
	if len(templates) == 0 || len(args) == 0 || len(args) > maxPrefetchArgs {
		return instantiate(templates, args)
	}
	// The lookup key points into the caller's bytes; the stored key is a copy.
	k := prefetchKey{unsafe.String(&templates[0], len(templates)), unsafe.String(&args[0], len(args))}
	prefetchMemo.Lock()
	needs, ok := prefetchMemo.m[k]
	prefetchMemo.Unlock()
	if ok {
		return needs
	}
	needs = instantiate(templates, args)
	k = prefetchKey{string(templates), string(args)}
	prefetchMemo.Lock()
	if prefetchMemo.m == nil || len(prefetchMemo.m) >= maxPrefetchMemo {
		prefetchMemo.m = make(map[prefetchKey][]core.Need)
	}
	prefetchMemo.m[k] = needs
	prefetchMemo.Unlock()
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
