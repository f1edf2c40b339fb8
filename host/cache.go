package host

import (
	"context"
	"sync"
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
		p.doc, p.corrupt = decodeStrict(raw)
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
