package jsonx

// Canonical JSON: this file defines grantwire's canonical JSON form and converts to it.
//
// Both engines must produce byte-identical decisions, but OPA's Wasm runtime writes object
// members in hash-bucket order while Go writes them sorted. The canonical form is therefore
// defined here, once:
//
//   - no insignificant whitespace;
//   - object members sorted by the bytes of their unescaped keys;
//   - strings written as OPA's Wasm JSON writer writes them: `"` and `\` escaped with a
//     backslash, \n \r \t as such, other bytes below 0x20 as \u00XX, everything else
//     (including non-ASCII UTF-8, `<`, `>`, `&`) verbatim;
//   - numbers written as their original text (integers as decimal digits).
//
// [Sorter] rewrites compact JSON (as the Wasm engine produces it) into this form without
// allocating once warm; [Append] writes Go values (as the rego engine produces them).
//
// This package must not import anything outside the standard library.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"
)

// ErrSyntax reports input that is not compact JSON as OPA's writer produces it.
var ErrSyntax = errors.New("canon: malformed JSON")

type member struct {
	keyStart, keyEnd int // the key token in the source, quotes included
	valStart, valEnd int // the canonical value in the scratch buffer of the object's depth
}

// Sorter canonicalises compact JSON in one pass: each object's members are written, in
// canonical form, to a scratch buffer of the object's depth, then copied out in key
// order. Its scratch space is reused between calls, so a warm Sorter does not allocate.
// A Sorter is not safe for concurrent use.
type Sorter struct {
	members []member
	bufs    [][]byte // per depth: the values of the members of the object open there
	keyA    []byte
	keyB    []byte
	src     []byte
}

// Append appends the canonical form of the compact JSON value src to dst.
func (s *Sorter) Append(dst, src []byte) ([]byte, error) {
	s.src = src
	s.members = s.members[:0]
	for i := range s.bufs {
		s.bufs[i] = s.bufs[i][:0]
	}
	dst, end, err := s.value(dst, 0, 0)
	s.src = nil
	if err != nil {
		return dst, err
	}
	if end != len(src) {
		return dst, ErrSyntax
	}
	return dst, nil
}

// skipString returns the end of the string whose opening quote is at i.
func (s *Sorter) skipString(i int) (int, error) {
	src := s.src
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, ErrSyntax
}

// value appends the canonical form of the value at i (at nesting depth) to dst and
// returns the index after it.
func (s *Sorter) value(dst []byte, i, depth int) ([]byte, int, error) {
	src := s.src
	if i >= len(src) {
		return dst, 0, ErrSyntax
	}
	switch src[i] {
	case '{':
		return s.object(dst, i, depth)
	case '[':
		dst = append(dst, '[')
		j := i + 1
		if j < len(src) && src[j] == ']' {
			return append(dst, ']'), j + 1, nil
		}
		for {
			var err error
			if dst, j, err = s.value(dst, j, depth+1); err != nil {
				return dst, 0, err
			}
			if j >= len(src) {
				return dst, 0, ErrSyntax
			}
			if src[j] == ']' {
				return append(dst, ']'), j + 1, nil
			}
			if src[j] != ',' {
				return dst, 0, ErrSyntax
			}
			dst = append(dst, ',')
			j++
		}
	case '"':
		e, err := s.skipString(i)
		if err != nil {
			return dst, 0, err
		}
		return append(dst, src[i:e]...), e, nil
	default:
		j := i
		for j < len(src) && src[j] != ',' && src[j] != '}' && src[j] != ']' && src[j] != ':' {
			j++
		}
		if j == i {
			return dst, 0, ErrSyntax
		}
		return append(dst, src[i:j]...), j, nil
	}
}

func (s *Sorter) object(dst []byte, i, depth int) ([]byte, int, error) {
	src := s.src
	j := i + 1
	if j < len(src) && src[j] == '}' {
		return append(dst, '{', '}'), j + 1, nil
	}
	for len(s.bufs) <= depth {
		s.bufs = append(s.bufs, nil)
	}
	buf := s.bufs[depth]
	mark, base := len(buf), len(s.members)
	for {
		if j >= len(src) || src[j] != '"' {
			return s.fail(dst, depth, buf[:mark], base)
		}
		ks := j
		ke, err := s.skipString(j)
		if err != nil || ke >= len(src) || src[ke] != ':' {
			return s.fail(dst, depth, buf[:mark], base)
		}
		vs := len(buf)
		if buf, j, err = s.value(buf, ke+1, depth+1); err != nil {
			return s.fail(dst, depth, buf[:mark], base)
		}
		s.members = append(s.members, member{keyStart: ks, keyEnd: ke, valStart: vs, valEnd: len(buf)})
		if j >= len(src) {
			return s.fail(dst, depth, buf[:mark], base)
		}
		if src[j] == '}' {
			j++
			break
		}
		if src[j] != ',' {
			return s.fail(dst, depth, buf[:mark], base)
		}
		j++
	}
	ms := s.members[base:]
	slices.SortFunc(ms, func(a, b member) int { return s.compareKeys(a, b) })
	dst = append(dst, '{')
	for k, m := range ms {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, src[m.keyStart:m.keyEnd]...)
		dst = append(dst, ':')
		dst = append(dst, buf[m.valStart:m.valEnd]...)
	}
	s.bufs[depth], s.members = buf[:mark], s.members[:base]
	return append(dst, '}'), j, nil
}

// fail restores the scratch space of an object left half-read.
func (s *Sorter) fail(dst []byte, depth int, buf []byte, base int) ([]byte, int, error) {
	s.bufs[depth], s.members = buf, s.members[:base]
	return dst, 0, ErrSyntax
}

func (s *Sorter) compareKeys(a, b member) int {
	ka := s.src[a.keyStart+1 : a.keyEnd-1]
	kb := s.src[b.keyStart+1 : b.keyEnd-1]
	if bytes.IndexByte(ka, '\\') < 0 && bytes.IndexByte(kb, '\\') < 0 {
		return bytes.Compare(ka, kb)
	}
	s.keyA = unescape(s.keyA[:0], ka)
	s.keyB = unescape(s.keyB[:0], kb)
	return bytes.Compare(s.keyA, s.keyB)
}

// unescape decodes the body of a JSON string (no quotes) into dst.
func unescape(dst, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			dst = append(dst, c)
			continue
		}
		i++
		switch b[i] {
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			if i+4 < len(b) {
				if v, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 32); err == nil {
					dst = utf8.AppendRune(dst, rune(v))
					i += 4
					continue
				}
			}
			dst = append(dst, 'u')
		default:
			dst = append(dst, b[i])
		}
	}
	return dst
}

// AppendString appends s as a canonical JSON string.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// An Escaper appends a string as a JSON string: [AppendString] (canonical) or
// [AppendGoString] (as encoding/json.Marshal writes it). Every encoder of this package and
// of the native engine's runtime takes one, instead of one copy of the encoder per escaping.
type Escaper func(dst []byte, s string) []byte

// An Encoder writes Go values built from JSON types (nil, bool, string, json.Number, int,
// int64, []any, []string, map[string]any with its keys sorted) with its strings escaped by
// Escape.
type Encoder struct {
	Escape Escaper
	// Marshal writes as encoding/json.Marshal does: a nil map or slice is null, a
	// json.Number is checked against JSON's grammar ("" is 0), and float64, *big.Int and
	// json.RawMessage are other types. Without it (the canonical form), a nil map is {}, a
	// nil slice [], and float64 ('g', shortest), *big.Int and json.RawMessage (compacted
	// and canonicalised) are written too.
	Marshal bool
	// Other appends a value of any other type, or returns ErrUnsupported.
	Other func(dst []byte, v any) ([]byte, error)
}

// ErrUnsupported reports a value of a type an [Encoder] does not write.
var ErrUnsupported = errors.New("jsonx: unsupported type")

// Canonical writes grantwire's canonical form; [Append] is its Append.
var Canonical = Encoder{Escape: AppendString}

// Append appends the canonical JSON form of a Go value built from JSON types: nil, bool,
// string, json.Number, float64, int, int64, *big.Int, []any, []string, map[string]any, or
// json.RawMessage (which is canonicalised in turn).
func Append(dst []byte, v any) ([]byte, error) { return Canonical.Append(dst, v) }

// Append appends v as JSON (see [Encoder]); a value of a type it does not write is left
// to e.Other, or is an error wrapping [ErrUnsupported] (dst is then to be dropped).
func (e *Encoder) Append(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case string:
		return e.Escape(dst, x), nil
	case json.Number:
		if !e.Marshal {
			return append(dst, x...), nil
		}
		if x == "" {
			return append(dst, '0'), nil
		}
		if !IsNumber(string(x)) {
			return dst, fmt.Errorf("%w: json.Number %q", ErrUnsupported, string(x))
		}
		return append(dst, x...), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		if !e.Marshal {
			return strconv.AppendFloat(dst, x, 'g', -1, 64), nil
		}
	case *big.Int:
		if !e.Marshal {
			return x.Append(dst, 10), nil
		}
	case []any:
		return appendArray(e, dst, x, e.Append)
	case []string:
		return appendArray(e, dst, x, func(dst []byte, s string) ([]byte, error) { return e.Escape(dst, s), nil })
	case map[string]any:
		if x == nil && e.Marshal {
			return append(dst, "null"...), nil
		}
		var kb [16]string // on the stack for a small object
		keys := kb[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.Escape(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = e.Append(dst, x[k]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case json.RawMessage:
		if !e.Marshal {
			var buf bytes.Buffer
			if err := json.Compact(&buf, x); err != nil {
				return dst, err
			}
			var any any
			d := json.NewDecoder(&buf)
			d.UseNumber()
			if err := d.Decode(&any); err != nil {
				return dst, err
			}
			return e.Append(dst, any)
		}
	}
	if e.Other != nil {
		return e.Other(dst, v)
	}
	return dst, fmt.Errorf("%w %T", ErrUnsupported, v)
}

// Marshal returns the canonical JSON form of any value that encoding/json can marshal.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var x any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	return Append(nil, x)
}

const goHex = "0123456789abcdef"

// AppendGoString appends s as encoding/json.Marshal writes a string: HTML characters (<, >, &), control
// characters, U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd.
func AppendGoString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', goHex[b>>4], goHex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', goHex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendArray writes xs as a JSON array, each element by el (a nil slice as null when
// e.Marshal).
func appendArray[T any](e *Encoder, dst []byte, xs []T, el func([]byte, T) ([]byte, error)) ([]byte, error) {
	if xs == nil && e.Marshal {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i, x := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = el(dst, x); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}
