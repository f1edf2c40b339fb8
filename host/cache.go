package host

import (
	"context"
	"sync"

	"github.com/grantwire/grantwire/internal/storedjson"
)

// Two optional interfaces let a shell's capabilities make the hot path cheap without the
// core knowing (README "Performance: a token hand-out without I/O"). Capabilities that do
// not implement them (hostabi/memhost, the Node shell) are used as before.

// FileStamps is implemented by a Files capability that can tell, far more cheaply than a
// read, whether a file may have changed: Stamp returns a token that differs whenever the
// file's content may differ (ok false: unknown, read the file). The host then keeps the
// parsed document of each ledger it read and answers ledger.read from it while the stamp
// is unchanged: the fact is the one a read would give.
type FileStamps interface {
	Stamp(name string) (stamp string, ok bool)
}

// KeyringGenerations is implemented by a Keyring capability that can tell whether any
// value of a service may have changed in the store: Generation returns a token that
// differs after any such change by any process (ok false: unknown). The host then answers
// keyring.get with fresh:false from its memory of a slot only while the generation is the
// one it saw when it remembered the slot, so another process's change is seen by the next
// read instead of lasting as long as the process.
type KeyringGenerations interface {
	Generation(service string) (gen string, ok bool)
}

// parsedLedger is a ledger as last read: its stamp, and what a read and a parse gave.
type parsedLedger struct {
	stamp   string
	found   bool
	version string
	doc     any   // never changed once cached (ledger.read copies what it answers)
	corrupt error // the parse's failure
}

// ledgerCache holds the parsed ledgers of a Host.
type ledgerCache struct {
	mu sync.Mutex
	m  map[string]parsedLedger
}

// readLedger reads and parses a ledger, through the cache when the Files capability
// stamps files. A refused file (hostabi.FileRefused) or a failed read is never cached.
func (o *Op) readLedger(ctx context.Context, name string) (parsedLedger, error) {
	files := o.h.caps.Files
	st, _ := files.(FileStamps)
	var stamp string
	var stamped bool
	if st != nil {
		if stamp, stamped = st.Stamp(name); stamped {
			o.h.ledgers.mu.Lock()
			p, ok := o.h.ledgers.m[name]
			o.h.ledgers.mu.Unlock()
			if ok && p.stamp == stamp {
				return p, nil
			}
		}
	}
	// The stamp is taken before the read: a file replaced in between is cached with the
	// older stamp, so the next read sees a new stamp and reads again.
	raw, version, err := files.Read(ctx, name)
	if err != nil {
		return parsedLedger{}, err
	}
	p := parsedLedger{stamp: stamp, found: raw != nil, version: version}
	if raw != nil {
		p.doc, p.corrupt = storedjson.Decode(raw)
	}
	if stamped {
		o.h.ledgers.mu.Lock()
		o.h.ledgers.m[name] = p
		o.h.ledgers.mu.Unlock()
	}
	return p, nil
}

// generation is the keyring's current generation of the host's service ("" , false when
// the capability cannot tell).
func (h *Host) generation() (string, bool) {
	if g, ok := h.caps.Keyring.(KeyringGenerations); ok {
		return g.Generation(h.caps.Service)
	}
	return "", false
}

// generationSnapshot is the keyring generation an operation judges its memory reads by:
// taken at the first one (and again after a lock is acquired), so that an operation pays
// for one look at the generation however many slots its memory answers. A change made
// before the operation began is seen; one made while it runs is seen by the next.
type generationSnapshot struct {
	state int8 // genUntaken, genKnown, genUnknown
	gen   string
}

const (
	genUntaken int8 = iota
	genKnown
	genUnknown
)

// generation is the operation's snapshot of the keyring generation.
func (o *Op) generation() (string, bool) {
	switch o.gen.state {
	case genKnown:
		return o.gen.gen, true
	case genUnknown:
		return "", false
	}
	gen, ok := o.h.generation()
	o.gen = generationSnapshot{state: genUnknown}
	if ok {
		o.gen = generationSnapshot{state: genKnown, gen: gen}
	}
	return gen, ok
}

// maxParsed bounds the keyring values whose parse a Host keeps.
const maxParsed = 64

// parseValue parses a keyring value as JSON (nil when it is not), keeping the parse of
// the values seen last: a token hand-out reads the same three values call after call.
// The parse is never changed (redactDoc copies what it answers).
func (h *Host) parseValue(v string) any {
	h.mu.Lock()
	doc, ok := h.parsed[v]
	h.mu.Unlock()
	if ok {
		return doc
	}
	doc, err := storedjson.Decode([]byte(v))
	if err != nil {
		doc = nil
	}
	h.mu.Lock()
	if len(h.parsed) >= maxParsed {
		clear(h.parsed)
	}
	h.parsed[v] = doc
	h.mu.Unlock()
	return doc
}
