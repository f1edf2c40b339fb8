// Package host is the Go implementation of grantwire's host ABI (hostabi, "grantwire.host.v2"):
// it answers the core's needs and applies its effects through a shell's
// [hostabi.Capabilities]. Every need and effect is a primitive — one keyring slot, one JSON
// file, one lock, one HTTP exchange, the loopback, the clock, entropy, an environment
// variable, an event — performed without judgement: this package knows no connector, grant,
// token or scope. hostabi/README.md is its specification; shells/wasm/node implements the
// same in JavaScript.
//
// Capabilities that can stamp files or tell a keyring generation (FileStamps,
// KeyringGenerations in cache.go, implemented by shells/native) let it keep parsed
// ledgers, and answer fresh keyring reads from its memory of slots (the process's one
// keyring cache, whose rule cache.go states), only while they are current; the facts are those a read would give (encoded without reflection,
// keyring facts remembered: factjson.go, factmemo.go).
//
// It imports hostabi, core and the standard library (plus x/oauth2 for the PKCE
// challenge), never an engine.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Host performs needs and effects over capabilities. One Host serves every operation of a
// process: it owns the process's memory of keyring slots (answers to keyring.get with
// fresh:false). It is safe for concurrent use.
type Host struct {
	caps hostabi.Capabilities

	mu     sync.Mutex
	memory map[string]slot // keyring user → last value seen or written by this process

	ledgers ledgerCache    // parsed ledgers, when the Files capability stamps files (cache.go)
	parsed  map[string]any // keyring value → its JSON parse (cache.go)
	facts   factMemo       // encoded keyring facts (factmemo.go)

	// Trace, when set, receives one line per host call and its answer (facts and effects
	// carry no secret, so transcripts are safe to print and to commit as golden files).
	Trace func(line string)
	// Yield, when set, is called before every host call; a deterministic scheduler uses it
	// to interleave operations.
	Yield func(ctx context.Context)
}

type slot struct {
	value string
	found bool
	// gen is the keyring's generation when the slot was remembered ("" when the
	// capability cannot tell: the memory then lasts, as for every shell without one).
	gen string
	// stored: the value is the store's, read at gen (not written or staged by this
	// process); at is when it was read. Only such a slot answers a fresh read.
	stored bool
	at     time.Time
}

var _ hostabi.Host = (*Host)(nil)

// New wraps capabilities. Service defaults to hostabi.DefaultService, Getenv to none.
func New(c hostabi.Capabilities) *Host {
	if c.Service == "" {
		c.Service = hostabi.DefaultService
	}
	if c.Getenv == nil {
		c.Getenv = func(string) string { return "" }
	}
	return &Host{caps: c, memory: map[string]slot{}, ledgers: ledgerCache{m: map[string]*parsedLedger{}}, parsed: map[string]any{}}
}

// Capabilities returns what the host was built with.
func (h *Host) Capabilities() hostabi.Capabilities { return h.caps }

// Remember sets this process's memory of a keyring slot, as if it had been read (the
// conformance corpus uses it to stage another process's stale view); found false forgets
// that the slot holds anything.
func (h *Host) Remember(user, value string, found bool) {
	gen, _ := h.generation()
	h.remember(user, value, found, gen, false)
}

// Forget drops the process's memory of every keyring slot.
func (h *Host) Forget() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.memory)
}

func (h *Host) remember(user, value string, found bool, gen string, stored bool) {
	s := slot{value: value, found: found, gen: gen, stored: stored && gen != ""}
	if s.stored {
		s.at = time.Now()
	}
	h.mu.Lock()
	h.memory[user] = s
	h.mu.Unlock()
}

// recall returns the memory of a slot by the rule of cache.go (storedMaxAge): the
// keyring's generation (as the operation first saw it, current()) must not have moved
// since the slot was remembered; a fresh read is moreover answered only by a slot read
// from the store less than storedMaxAge ago.
func (h *Host) recall(user string, fresh bool, current func() (string, bool)) (slot, bool) {
	h.mu.Lock()
	s, ok := h.memory[user]
	h.mu.Unlock()
	if !ok {
		return slot{}, false
	}
	if s.gen == "" {
		return s, !fresh
	}
	if gen, known := current(); !known || gen != s.gen {
		return slot{}, false
	}
	if fresh && (!s.stored || time.Since(s.at) > storedMaxAge) {
		return slot{}, false
	}
	return s, true
}

// Begin starts an operation.
func (h *Host) Begin(op string) hostabi.Performer {
	return &Op{h: h, Name: op, refs: map[string]string{}, locks: map[string]func(){}}
}

// Op is the host's state for one operation: the secrets it registered, the locks it
// holds and its loopback listener. It is used by one goroutine.
type Op struct {
	h        *Host
	Name     string
	refs     map[string]string
	locks    map[string]func()
	callback hostabi.Callback
	// gen is the keyring's generation as this operation first judged its memory (cache.go).
	gen generationSnapshot
}

var _ hostabi.Performer = (*Op)(nil)

// End releases every lock the operation holds and closes its loopback listener.
func (o *Op) End() {
	for _, name := range slices.Sorted(maps.Keys(o.locks)) {
		o.locks[name]()
		o.trace("release %s", name)
	}
	clear(o.locks)
	if o.callback != nil {
		_ = o.callback.Close()
		o.callback = nil
	}
}

// Secret resolves a secret reference ("<fact key>#<name>") of this operation.
func (o *Op) Secret(ref string) (string, bool) {
	v, ok := o.refs[ref]
	return v, ok
}

// Describe registers a secret under ref and returns its description.
func (o *Op) Describe(ref, value string) json.RawMessage {
	o.refs[ref] = value
	b, _ := json.Marshal(jsonx.Describe(ref, value))
	return b
}

// Held reports whether the operation holds the named lock.
func (o *Op) Held(name string) bool { _, ok := o.locks[name]; return ok }

func (o *Op) trace(format string, args ...any) {
	if o.h.Trace != nil {
		o.h.Trace(fmt.Sprintf(format, args...))
	}
}

func (o *Op) yield(ctx context.Context) {
	if o.h.Yield != nil {
		o.h.Yield(ctx)
	}
}

// register stores a secret under "<key>#<name>" and returns its description.
func (o *Op) register(key, name, value string) map[string]any {
	ref := key + "#" + name
	o.refs[ref] = value
	return jsonx.Describe(ref, value)
}

// Digest refers to a secret without revealing it: "sha256:" and 16 hex digits.
func Digest(secret string) string { return jsonx.Digest(secret) }

// CRC32 is the CRC-32 (IEEE) of s as 8 lowercase hex digits (GAIA's client_id_hash).
func CRC32(s string) string { return jsonx.CRC32(s) }

// Version is the version token of a keyring value: 16 hex digits of its SHA-256.
func Version(value string) string { return jsonx.Version(value) }

// hostError builds the answer to a need whose capability failed.
func hostError(err error) (any, error) {
	var he *hostabi.HostError
	if !errors.As(err, &he) {
		he = &hostabi.HostError{Code: hostabi.HostErrIO, Detail: err.Error()}
	}
	return map[string]any{"host_error": he}, nil
}

// Fetch answers one need. A capability's failure is answered as a host_error fact; the
// error is for malformed needs (a policy bug) and the caller's cancellation.
func (o *Op) Fetch(ctx context.Context, n core.Need) (json.RawMessage, error) {
	raw, _, err := o.FetchToken(ctx, n)
	return raw, err
}

// FetchToken is Fetch with the fact's token (hostabi.TokenFetcher): a ledger.read answered
// from the ledger cache (a Files capability that stamps files) is marshalled once per
// ledger version and path and named by a token unique in the process; other facts have
// none ("").
func (o *Op) FetchToken(ctx context.Context, n core.Need) (json.RawMessage, string, error) {
	o.yield(ctx)
	var raw json.RawMessage
	var token string
	var err error
	if n.Kind == hostabi.NeedLedgerRead {
		raw, token, err = o.ledgerReadFact(ctx, n)
	} else {
		var v any
		if v, err = o.fetch(ctx, n); err == nil {
			raw, err = encodeFact(v)
		}
	}
	if err == nil && ctx.Err() != nil && n.Kind != hostabi.NeedClockNow {
		err = ctx.Err()
	}
	if err != nil {
		if o.h.Trace != nil {
			o.trace("==> %s %s\n<== error %v", n.Kind, params(n.Params), err)
		}
		return nil, "", err
	}
	if o.h.Trace != nil {
		o.trace("==> %s %s\n<== %s", n.Kind, params(n.Params), raw)
	}
	return raw, token, nil
}

func params(p map[string]json.RawMessage) string {
	b, _ := json.Marshal(p)
	return string(b)
}
