package host

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// Two optional interfaces let a shell's capabilities make the hot path cheap without the
// core knowing (README "Performance: a token hand-out without I/O"). Capabilities that do
// not implement them (internal/testworld/memhost, the Node shell) are used as before.

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
// differs after any such change by any process (ok false: unknown). shells/native
// implements it with generation files that every grantwire write bumps.
//
// The keyring cache. A process has one cache of keyring values, and its owner is the Host:
// its memory of slots (Host.memory). The capability keeps none. The one rule:
//
//	A remembered slot answers keyring.get only while the keyring's generation, as the
//	operation first looked at it (again after a lock is acquired), is the generation it
//	was remembered at. A fresh:true read is answered only by a slot read from the store
//	at that generation less than storedMaxAge ago; a slot this process wrote, or staged
//	(Remember), answers fresh:false only. When the capability cannot tell a generation,
//	nothing answers a fresh read and the memory answers fresh:false for the process's life.
//
// The generation is taken before the store is read, so a change made by another process
// during the read moves it and the next operation reads again: a second process's write
// is seen by the next operation. storedMaxAge bounds the one case the generation cannot
// see: a writer killed between its write and its second bump of the generation.
type KeyringGenerations interface {
	Generation(service string) (gen string, ok bool)
}

// storedMaxAge bounds how long a slot read from the store answers fresh reads without
// another read, whatever the generation says.
const storedMaxAge = 30 * time.Second

// parsedLedger is a ledger as last read: its stamp, and what a read and a parse gave. An
// entry is never changed once cached but for its facts, the memo of the ledger.read
// answers made from it (under the cache's lock).
type parsedLedger struct {
	stamp   string
	found   bool
	version string
	doc     any   // never changed once cached (ledger.read copies what it answers)
	corrupt error // the parse's failure
	// facts memoizes the JSON of each ledger.read answer made from this entry, by path,
	// with its token (resident facts); nil for an entry that is not cached.
	facts map[string]tokenFact
}

// tokenFact is a fact's JSON and the token that names it.
type tokenFact struct {
	raw   json.RawMessage
	token string
}

// tokens numbers the facts the hosts of this process memoize: a token names one fact's
// bytes for as long as the process runs, never reused (core.Query.Tokens).
var tokens atomic.Uint64

// newToken returns a fresh token of the kind ("ledger:17").
func newToken(kind string) string { return kind + ":" + strconv.FormatUint(tokens.Add(1), 10) }

// ledgerCache holds the parsed ledgers of a Host.
type ledgerCache struct {
	mu sync.Mutex
	m  map[string]*parsedLedger
}

// memoFact returns the fact made from a cached entry for the path, making it with make
// the first time. An entry that is not cached (facts nil) memoizes nothing: its fact
// has no token.
func (c *ledgerCache) memoFact(p *parsedLedger, path []string, make func() (json.RawMessage, error)) (json.RawMessage, string, error) {
	if p.facts == nil {
		raw, err := make()
		return raw, "", err
	}
	key := pathKey(path)
	c.mu.Lock()
	f, ok := p.facts[key]
	c.mu.Unlock()
	if ok {
		return f.raw, f.token, nil
	}
	raw, err := make()
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := p.facts[key]; ok { // made meanwhile by another operation
		return f.raw, f.token, nil
	}
	f = tokenFact{raw: raw, token: newToken("ledger")}
	p.facts[key] = f
	return f.raw, f.token, nil
}

// pathKey names a path unambiguously (each member prefixed by its length).
func pathKey(path []string) string {
	var b strings.Builder
	for _, k := range path {
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
	}
	return b.String()
}

// readLedger reads and parses a ledger, through the cache when the Files capability
// stamps files. A refused file (hostabi.FileRefused) or a failed read is never cached.
func (o *Op) readLedger(ctx context.Context, name string) (*parsedLedger, error) {
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
		return nil, err
	}
	p := &parsedLedger{stamp: stamp, found: raw != nil, version: version}
	if raw != nil {
		p.doc, p.corrupt = jsonx.DecodeContext(ctx, raw)
		if err := ctx.Err(); err != nil {
			return nil, err // cancelled: the ledger was not judged, nor cached
		}
	}
	if stamped {
		p.facts = map[string]tokenFact{}
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
	doc, err := jsonx.Decode([]byte(v))
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
