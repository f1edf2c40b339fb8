package host

import (
	"encoding/json"
	"sync"
)

// The keyring facts of a token hand-out are the same bytes call after call: a fact of
// keyring.get is a function of the need's key, its fields and the slot's value alone
// (descriptions of secrets carry a digest, never the value). So that a hand-out answered
// from memory does not hash, parse, redact and encode the same values again, the host
// keeps the encoded fact of each (key, fields, value) it answered, with the secrets it
// registered for it, and registers them again when it answers the same fact.
//
// What is kept is as secret as the host's memory of slots (values and their parses are
// already kept there): it never leaves the process, and a fact carries descriptions only.

// maxFactMemo bounds the remembered keyring facts of a Host.
const maxFactMemo = 256

type keyringFactKey struct {
	key    string // the need's key, which names its secret references
	fields string // the need's fields parameter as JSON ("" when absent)
	value  string
}

// memoFact is an encoded fact and the secrets answering it registers.
type memoFact struct {
	raw  json.RawMessage
	refs [][2]string // reference, secret
}

type factMemo struct {
	mu     sync.Mutex
	m      map[keyringFactKey]memoFact
	fields map[string][]string // keyring.get's fields parameter (JSON) → the list, never changed
}

// fieldsOf decodes keyring.get's fields parameter, remembering the lists it decoded.
func (h *Host) fieldsOf(raw json.RawMessage) ([]string, error) {
	h.facts.mu.Lock()
	fields, ok := h.facts.fields[string(raw)]
	h.facts.mu.Unlock()
	if ok {
		return fields, nil
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	h.facts.mu.Lock()
	if h.facts.fields == nil || len(h.facts.fields) >= maxFactMemo {
		h.facts.fields = map[string][]string{}
	}
	h.facts.fields[string(raw)] = fields
	h.facts.mu.Unlock()
	return fields, nil
}

// keyringFact is the fact of keyring.get for a slot holding value, read by need key with
// fields (fieldsRaw their JSON): remembered, or built and remembered.
func (o *Op) keyringFact(key string, fieldsRaw json.RawMessage, fields []string, value string) (json.RawMessage, error) {
	h := o.h
	k := keyringFactKey{key, string(fieldsRaw), value}
	h.facts.mu.Lock()
	f, ok := h.facts.m[k]
	h.facts.mu.Unlock()
	if ok {
		for _, r := range f.refs {
			o.refs[r[0]] = r[1]
		}
		return f.raw, nil
	}
	// Build the fact with a recording operation, so that the secrets it registers are
	// known, then register them in o.
	rec := &Op{h: h, refs: map[string]string{}}
	fact := map[string]any{"found": true, "version": Version(value), "value": rec.register(key, "value", value)}
	if fields != nil {
		fact["json"] = rec.redactDoc(key, h.parseValue(value), fields)
	}
	raw, err := encodeFact(fact)
	if err != nil {
		return nil, err
	}
	raw = raw[:len(raw):len(raw)]
	f = memoFact{raw: raw}
	for ref, secret := range rec.refs {
		o.refs[ref] = secret
		f.refs = append(f.refs, [2]string{ref, secret})
	}
	h.facts.mu.Lock()
	if h.facts.m == nil || len(h.facts.m) >= maxFactMemo {
		h.facts.m = map[keyringFactKey]memoFact{}
	}
	h.facts.m[k] = f
	h.facts.mu.Unlock()
	return raw, nil
}

// notFoundFact is keyring.get's fact for an empty slot.
var notFoundFact = json.RawMessage(`{"found":false}`)
