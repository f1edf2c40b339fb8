package jsonx

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
)

// The writer of stored documents (ledgers): encoding/json's bytes, cancellable.

// MarshalPlain is json.Marshal without HTML escaping: compact, map keys sorted, <, > and &
// as they are.
func MarshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// NonNil is s, or an empty slice when s is nil: JSON [] rather than null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// OrEmpty is m, or an empty map when m is nil: JSON {} rather than null.
func OrEmpty[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// Document writes a ledger document as encoding/json indents it (sorted keys, 2-space
// indentation, no HTML escaping) with a final newline, and stops when ctx is done (it
// returns ctx.Err()): the objects and arrays of the document are written member by member,
// looking at ctx every checkEvery members, so that a Ctrl-C while a ledger of hundreds of
// thousands of entries is encoded cancels at once.
func Document(ctx context.Context, v any) ([]byte, error) {
	e := &docEncoder{ctx: ctx}
	if err := e.value(v, ""); err != nil {
		return nil, err
	}
	e.buf.WriteByte('\n')
	return e.buf.Bytes(), nil
}

type docEncoder struct {
	ctx     context.Context
	buf     bytes.Buffer
	written int
	scratch bytes.Buffer
	flat    *json.Encoder // scalars: no indentation
	deep    *json.Encoder // any other value, indented under its prefix
}

// value writes v, whose first line is already indented by prefix.
func (e *docEncoder) value(v any, prefix string) error {
	if e.written++; e.written%checkEvery == 0 {
		if err := e.ctx.Err(); err != nil {
			return err
		}
	}
	inner := prefix + "  "
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			break // {} or null, as encoding/json writes them
		}
		e.buf.WriteString("{\n")
		for i, k := range slices.Sorted(maps.Keys(t)) {
			if i > 0 {
				e.buf.WriteString(",\n")
			}
			e.buf.WriteString(inner)
			if err := e.leaf(k, inner); err != nil {
				return err
			}
			e.buf.WriteString(": ")
			if err := e.value(t[k], inner); err != nil {
				return err
			}
		}
		e.buf.WriteString("\n" + prefix + "}")
		return nil
	case []any:
		if len(t) == 0 {
			break
		}
		e.buf.WriteString("[\n")
		for i, m := range t {
			if i > 0 {
				e.buf.WriteString(",\n")
			}
			e.buf.WriteString(inner)
			if err := e.value(m, inner); err != nil {
				return err
			}
		}
		e.buf.WriteString("\n" + prefix + "]")
		return nil
	}
	return e.leaf(v, prefix)
}

// leaf writes any other value as encoding/json does, indented under prefix.
func (e *docEncoder) leaf(v any, prefix string) error {
	if e.flat == nil {
		e.flat, e.deep = json.NewEncoder(&e.scratch), json.NewEncoder(&e.scratch)
		e.flat.SetEscapeHTML(false)
		e.deep.SetEscapeHTML(false)
	}
	enc := e.flat
	switch v.(type) {
	case string, json.Number, bool, nil:
	default:
		enc = e.deep
		enc.SetIndent(prefix, "  ")
	}
	e.scratch.Reset()
	if err := enc.Encode(v); err != nil {
		return err
	}
	e.buf.Write(bytes.TrimSuffix(e.scratch.Bytes(), []byte("\n")))
	return nil
}
