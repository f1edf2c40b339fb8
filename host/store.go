package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// readSlot reads a keyring slot for a need through the host's keyring cache (the memory
// of slots, cache.go): a fresh read is answered from it only by a slot read from the
// store at the operation's look at the generation (taken at its first keyring read,
// again after a lock is acquired).
func (o *Op) readSlot(ctx context.Context, user string, fresh bool) (string, bool, error) {
	if s, ok := o.h.recall(user, fresh, o.generation); ok {
		return s.value, s.found, nil
	}
	gen, known := o.generation() // before the read: a change during it moves the generation
	return o.readStore(ctx, user, gen, known)
}

func (o *Op) keyringGet(ctx context.Context, n core.Need) (any, error) {
	user := n.Str("user")
	if user == "" {
		return nil, errors.New("host: keyring.get needs a user")
	}
	var fields []string
	if raw, ok := n.Params["fields"]; ok {
		var err error
		if fields, err = o.h.fieldsOf(raw); err != nil {
			return nil, fmt.Errorf("host: keyring.get fields: %w", err)
		}
	}
	v, found, err := o.readSlot(ctx, user, n.Bool("fresh"))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return hostError(err)
	}
	if !found {
		return notFoundFact, nil
	}
	return o.keyringFact(n.Key, n.Params["fields"], fields, v)
}

// redact parses b as a JSON object and replaces each listed top-level string member by its
// description (registered "<key>#<member>"); anything but a JSON object gives nil.
func (o *Op) redact(key string, b []byte, fields []string) any {
	v, err := jsonx.Decode(b)
	if err != nil {
		return nil
	}
	return o.redactDoc(key, v, fields)
}

// redactDoc is redact of a parsed document (nil: not JSON).
func (o *Op) redactDoc(key string, v any, fields []string) any {
	return jsonx.DescribeMembers(v, fields, func(f, s string) map[string]any { return o.register(key, f, s) })
}

// expectation is the precondition of a keyring effect.
type expectation struct {
	Found   *bool  `json:"found"`
	Version string `json:"version"`
}

func (o *Op) keyringEffect(ctx context.Context, e core.Effect) error {
	c := o.h.caps
	user := e.Str("user")
	if user == "" {
		return fmt.Errorf("host: %s needs a user", e.Kind)
	}
	if raw, ok := e.Params["expect"]; ok && string(raw) != "null" {
		var x expectation
		if err := json.Unmarshal(raw, &x); err != nil {
			return fmt.Errorf("host: malformed expect: %w", err)
		}
		// A precondition is judged on the store as it is now, not as the operation saw it.
		gen, known := o.h.generation()
		cur, found, err := o.readNow(ctx, user, gen, known)
		if err != nil {
			return err
		}
		switch {
		case x.Found != nil && *x.Found != found:
			return fmt.Errorf("%w: %s of %s found %s", hostabi.ErrConflict, e.Kind, user, presence(found))
		case x.Version != "" && found && Version(cur) != x.Version:
			return fmt.Errorf("%w: %s of %s found another version", hostabi.ErrConflict, e.Kind, user)
		case x.Version != "" && !found && e.Kind == hostabi.EffectKeyringSet:
			return fmt.Errorf("%w: %s of %s found it absent", hostabi.ErrConflict, e.Kind, user)
		}
	}
	if e.Kind == hostabi.EffectKeyringDelete {
		if err := c.Keyring.Delete(ctx, c.Service, user); err != nil {
			return err
		}
		gen, _ := o.h.generation()
		o.h.remember(user, "", false, gen, false)
		return nil
	}
	v, err := o.resolve(e.Params["value"])
	if err != nil {
		return err
	}
	var value string
	switch t := v.(type) {
	case string:
		value = t
	case map[string]any, []any:
		b, err := encodeValue(t)
		if err != nil {
			return err
		}
		value = string(b)
	default:
		return fmt.Errorf("host: keyring.set of %s needs a string or a JSON value", user)
	}
	if err := c.Keyring.Set(ctx, c.Service, user, value); err != nil {
		return err
	}
	gen, _ := o.h.generation()
	o.h.remember(user, value, true, gen, false)
	return nil
}

func presence(found bool) string {
	if found {
		return "it present"
	}
	return "it absent"
}

// ledgerReadFact answers ledger.read: the document (or the value at a path inside it)
// with the file's version, or why the file is corrupt, as JSON. A ledger answered from
// the cache gives the same JSON, marshalled once per version and path, with a token.
func (o *Op) ledgerReadFact(ctx context.Context, n core.Need) (json.RawMessage, string, error) {
	name := n.Str("ledger")
	if name == "" {
		return nil, "", errors.New("host: ledger.read needs a ledger")
	}
	var path []string
	if raw, ok := n.Params["path"]; ok {
		if err := json.Unmarshal(raw, &path); err != nil {
			return nil, "", fmt.Errorf("host: ledger.read path: %w", err)
		}
	}
	if path == nil {
		path = []string{}
	}
	led, err := o.readLedger(ctx, name)
	if err != nil {
		v, err := o.unreadLedger(ctx, name, path, err)
		if err != nil {
			return nil, "", err
		}
		raw, err := json.Marshal(v)
		return raw, "", err
	}
	return o.h.ledgers.memoFact(led, path, func() (json.RawMessage, error) {
		return json.Marshal(o.ledgerFact(name, path, led))
	})
}

// unreadLedger answers ledger.read for a file the host would not or could not read.
func (o *Op) unreadLedger(ctx context.Context, name string, path []string, err error) (any, error) {
	fact := map[string]any{"ledger": name, "path": path, "file": o.h.caps.Files.Path(name)}
	var refused *hostabi.FileRefused
	if errors.As(err, &refused) {
		fact["found"], fact["corrupt"] = true, refused.Reason
		return fact, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return hostError(err)
}

// ledgerFact is ledger.read's answer from a read (and parsed) ledger.
func (o *Op) ledgerFact(name string, path []string, led *parsedLedger) map[string]any {
	fact := map[string]any{"ledger": name, "path": path, "file": o.h.caps.Files.Path(name)}
	if !led.found {
		fact["found"] = false
		return fact
	}
	fact["found"], fact["version"] = true, led.version
	if led.corrupt != nil {
		fact["corrupt"] = led.corrupt.Error()
		return fact
	}
	doc := led.doc
	v, ok := jsonx.At(doc, path)
	fact["exists"] = ok
	if ok {
		fact["value"] = jsonx.FactValue(v)
	}
	fact["shape"] = jsonx.Shape(doc, path)
	return fact
}

// ledgerOp is one operation of a ledger.write effect.
type ledgerOp struct {
	Path   []string        `json:"path"`
	Value  json.RawMessage `json:"value"`
	Delete bool            `json:"delete"`
	Prune  bool            `json:"prune"`
	Expect *struct {
		Exists *bool           `json:"exists"`
		Value  json.RawMessage `json:"value"`
	} `json:"expect"`
}

func (o *Op) ledgerWrite(ctx context.Context, e core.Effect) error {
	name := e.Str("ledger")
	var ops []ledgerOp
	if err := e.Decode("ops", &ops); err != nil {
		return fmt.Errorf("host: ledger.write ops: %w", err)
	}
	var want *string
	if raw, ok := e.Params["version"]; ok && string(raw) != "null" {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("host: ledger.write version: %w", err)
		}
		want = &v
	}
	// Values are resolved before the file is locked (they may reference secrets only in
	// principle; ledgers hold none, but templates such as $number apply).
	values := make([]any, len(ops))
	for i, op := range ops {
		if op.Delete {
			continue
		}
		v, err := o.resolve(op.Value)
		if err != nil {
			return err
		}
		values[i] = v
	}
	files := o.h.caps.Files
	return files.Update(ctx, name, func(raw []byte, version string) ([]byte, error) {
		if want != nil && *want != version {
			return nil, fmt.Errorf("%w: %s changed since it was read", hostabi.ErrConflict, files.Path(name))
		}
		var doc any = map[string]any{}
		if raw != nil {
			d, err := jsonx.DecodeContext(ctx, raw)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %w", hostabi.ErrCanceled, ctx.Err())
			}
			if err != nil {
				return nil, &hostabi.HostError{Code: hostabi.HostErrIO, Detail: fmt.Sprintf("%s became unreadable (%s); nothing was written", files.Path(name), err)}
			}
			doc = d
		}
		for i, op := range ops {
			if err := checkExpect(doc, op); err != nil {
				return nil, fmt.Errorf("%w: %s %v %s", hostabi.ErrConflict, files.Path(name), op.Path, err)
			}
			var err error
			if op.Delete {
				doc, err = remove(doc, op.Path, op.Prune)
			} else {
				doc, err = put(doc, op.Path, values[i])
			}
			if err != nil {
				return nil, fmt.Errorf("host: ledger.write %s: %w", name, err)
			}
		}
		b, err := encodeDocumentContext(ctx, doc)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", hostabi.ErrCanceled, ctx.Err())
		}
		return b, err
	})
}

func checkExpect(doc any, op ledgerOp) error {
	if op.Expect == nil {
		return nil
	}
	cur, ok := jsonx.At(doc, op.Path)
	if op.Expect.Exists != nil && !*op.Expect.Exists {
		if ok {
			return errors.New("appeared")
		}
		return nil
	}
	if op.Expect.Value == nil {
		return nil
	}
	if !ok {
		return errors.New("vanished")
	}
	same, err := sameJSON(cur, op.Expect.Value)
	if err != nil {
		return err
	}
	if !same {
		return errors.New("changed")
	}
	return nil
}

// sameJSON compares a stored value with an expected one (as the core saw it: numbers that
// are not safe integers as {"$number": text}).
func sameJSON(cur any, want json.RawMessage) (bool, error) {
	a, err := encodeValue(jsonx.FactValue(cur))
	if err != nil {
		return false, err
	}
	w, err := jsonx.Decode(want)
	if err != nil {
		return false, err
	}
	b, err := encodeValue(w)
	if err != nil {
		return false, err
	}
	return string(a) == string(b), nil
}

func put(doc any, path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		if doc != nil {
			return nil, fmt.Errorf("cannot write inside a %s", typeName(doc))
		}
		m = map[string]any{}
	}
	child, err := put(m[path[0]], path[1:], v)
	if err != nil {
		return nil, err
	}
	m[path[0]] = child
	return m, nil
}

func remove(doc any, path []string, prune bool) (any, error) {
	if len(path) == 0 {
		return nil, errors.New("cannot delete the whole document")
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return doc, nil
	}
	if len(path) == 1 {
		delete(m, path[0])
		return m, nil
	}
	child, ok := m[path[0]]
	if !ok {
		return m, nil
	}
	child, err := remove(child, path[1:], prune)
	if err != nil {
		return nil, err
	}
	// prune removes the deleted member's own parent when it is left empty.
	if cm, ok := child.(map[string]any); ok && prune && len(path) == 2 && len(cm) == 0 {
		delete(m, path[0])
	} else {
		m[path[0]] = child
	}
	return m, nil
}

func typeName(v any) string {
	switch t := jsonx.Type(v); t {
	case "array":
		return "list"
	case "string", "number", "boolean":
		return t
	}
	return strconv.Quote(fmt.Sprint(v))
}
