package rt

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// ErrSyntax reports JSON that is not one valid JSON value.
var ErrSyntax = errors.New("malformed JSON")

// ParseQuery parses a query (which core.CheckQuery has accepted) into the evaluation's
// arena. Its strings point into a copy of query the evaluation keeps until it is
// returned, so the caller may reuse query at once.
func (ev *Eval) ParseQuery(query []byte) (*V, error) {
	ev.buf = append(ev.buf[:0], query...)
	if len(ev.buf) == 0 {
		return nil, ErrSyntax
	}
	return ev.parse(unsafe.String(&ev.buf[0], len(ev.buf)))
}

// ParseMore parses one more JSON value into the evaluation's arena after ParseQuery (the
// parts of an input built from pieces): its bytes are appended to the evaluation's copy,
// so the strings of values parsed before stay valid.
func (ev *Eval) ParseMore(b []byte) (*V, error) {
	if len(b) == 0 {
		return nil, ErrSyntax
	}
	start := len(ev.buf)
	ev.buf = append(ev.buf, b...)
	return ev.parse(unsafe.String(&ev.buf[start], len(b)))
}

// Footprint estimates the heap bytes a value parsed by ParseData holds: its nodes, their
// slices and its strings' bytes (a string shared by several values counted each time).
// Resident caches bound themselves by it.
func Footprint(v *V) int {
	if v == nil {
		return 0
	}
	if v.k == KNull || v.k == KBool || (v.k == KNum && v.s == "" && v.n >= smallMin && v.n <= smallMax) {
		return 0 // a singleton
	}
	n := int(unsafe.Sizeof(V{})) + (cap(v.a)+cap(v.o))*int(unsafe.Sizeof(v)) + len(v.s)
	for _, x := range v.a {
		n += Footprint(x)
	}
	for _, x := range v.o {
		n += Footprint(x)
	}
	return n
}

// ParseData parses a data document (any JSON) onto the heap, as OPA's Go evaluator reads
// data: invalid UTF-8 and lone surrogates become U+FFFD, the last of duplicate keys wins,
// numbers keep their text.
func ParseData(data []byte) (*V, error) {
	ev := &Eval{heap: true}
	return ev.parse(string(data))
}

// ParseValue parses JSON into the evaluation's arena (its strings are copied).
func (ev *Eval) ParseValue(s string) (*V, error) { return ev.parse(strings.Clone(s)) }

func (ev *Eval) parse(s string) (*V, error) {
	p := parser{s: s, ev: ev}
	p.ws()
	v := p.value(0)
	if p.err != nil {
		return nil, p.err
	}
	p.ws()
	if p.i != len(s) {
		return nil, fmt.Errorf("%w: data after the value at byte %d", ErrSyntax, p.i)
	}
	return v, nil
}

type parser struct {
	s   string
	i   int
	ev  *Eval
	err error
}

const maxDepth = 10000

func (p *parser) fail(msg string) *V {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s at byte %d", ErrSyntax, msg, p.i)
	}
	p.i = len(p.s)
	return nil
}

func (p *parser) ws() { p.i = jsonx.SkipSpace(p.s, p.i) }

func (p *parser) value(depth int) *V {
	if p.i >= len(p.s) {
		return p.fail("unexpected end of input")
	}
	if depth > maxDepth {
		return p.fail("nesting too deep")
	}
	switch c := p.s[p.i]; c {
	case '{':
		obj := p.ev.Object(0)
		if p.empty('}') {
			return obj
		}
		for {
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return p.fail("expected an object key")
			}
			k := p.str()
			if p.err != nil {
				return nil
			}
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return p.fail("expected ':'")
			}
			p.i++
			p.ws()
			v := p.value(depth + 1)
			if p.err != nil {
				return nil
			}
			ObjectInsert(obj, k, v)
			if p.next('}', "expected ',' or '}'") {
				return p.done(obj)
			}
		}
	case '[':
		arr := p.ev.Array(0)
		if p.empty(']') {
			return arr
		}
		for {
			v := p.value(depth + 1)
			if p.err != nil {
				return nil
			}
			arr.a = append(arr.a, v)
			if p.next(']', "expected ',' or ']'") {
				return p.done(arr)
			}
		}
	case '"':
		return p.str()
	case 't':
		return p.lit("true", True)
	case 'f':
		return p.lit("false", False)
	case 'n':
		return p.lit("null", Null)
	default:
		return p.num()
	}
}

// empty reads the opening byte of an array or object at p.i and the space after it: true
// when the closing byte end follows at once (p.i past it).
func (p *parser) empty(end byte) bool {
	p.i++
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == end {
		p.i++
		return true
	}
	return false
}

// next reads what follows a member of an array or object: true at the closing byte end
// (p.i past it) or at a failure (p.err set, with sep when the byte is neither end nor ','),
// false after a ',' and the space after it.
func (p *parser) next(end byte, sep string) bool {
	p.ws()
	switch {
	case p.i >= len(p.s):
		p.fail("unexpected end of input")
	case p.s[p.i] == end:
		p.i++
	case p.s[p.i] != ',':
		p.fail(sep)
	default:
		p.i++
		p.ws()
		return false
	}
	return true
}

// done is v, or nil once the parse failed.
func (p *parser) done(v *V) *V {
	if p.err != nil {
		return nil
	}
	return v
}

func (p *parser) lit(word string, v *V) *V {
	if !strings.HasPrefix(p.s[p.i:], word) {
		return p.fail("invalid literal")
	}
	p.i += len(word)
	return v
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *parser) num() *V {
	start := p.i
	end, ok := jsonx.ScanNumber(p.s, start)
	if !ok {
		if end == start || (end == start+1 && p.s[start] == '-') {
			return p.fail("invalid value")
		}
		return p.fail("invalid number")
	}
	p.i = end
	return p.ev.numText(p.s[start:end])
}

// unescaped is the byte each one-letter JSON escape (\n, \", …) stands for.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// str parses the string at p.i (its opening quote).
func (p *parser) str() *V {
	s := p.s
	i := p.i + 1
	start := i
	for i < len(s) {
		c := s[i]
		if c == '"' {
			p.i = i + 1
			return p.ev.String(s[start:i])
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	// the slow path: escapes, control characters, non-ASCII
	b := p.ev.scr[:0]
	b = append(b, s[start:i]...)
	plainSoFar := true
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			p.ev.scr = b
			if plainSoFar {
				return p.ev.String(s[start:i])
			}
			return p.ev.stringOf(b)
		case c == '\\':
			plainSoFar = false
			if i+1 >= len(s) {
				return p.fail("unexpected end of input")
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				b = append(b, unescaped[e])
				i += 2
			case 'u':
				r, ok := jsonx.Hex4(s[i+2:])
				if !ok {
					return p.fail("invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(-1), false
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2, ok2 = jsonx.Hex4(s[i+2:])
					}
					if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				return p.fail("invalid escape")
			}
		case c < 0x20:
			return p.fail("control character in a string")
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				plainSoFar = false
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
	}
	return p.fail("unterminated string")
}

// AppendCanonical appends the canonical JSON form of v (see internal/jsonx) as the rego
// engine writes a result: sets as arrays in order, objects with non-string keys keyed by
// those keys' JSON.
func AppendCanonical(dst []byte, v *V) []byte { return appendJSON(dst, v, jsonx.AppendString) }

// AppendGoJSON appends v as encoding/json marshals OPA's JSON form of it (json.marshal):
// HTML characters, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD. It differs from
// AppendCanonical in the escaping of strings only.
func AppendGoJSON(dst []byte, v *V) []byte { return appendJSON(dst, v, jsonx.AppendGoString) }

// appendJSON writes v as JSON, its strings (keys too) written by esc.
func appendJSON(dst []byte, v *V, esc jsonx.Escaper) []byte {
	switch v.k {
	case KNull:
		return append(dst, "null"...)
	case KBool:
		if v.n != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case KNum:
		return appendNum(dst, v)
	case KStr:
		return esc(dst, v.s)
	case KArr, KSet:
		dst = append(dst, '[')
		for i, x := range v.a {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, x, esc)
		}
		return append(dst, ']')
	case KObj:
		if !stringKeys(v) {
			return appendObjectStringified(dst, v, esc)
		}
		dst = append(dst, '{')
		for i, k := range v.a {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = esc(dst, k.s)
			dst = append(dst, ':')
			dst = appendJSON(dst, v.o[i], esc)
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

func stringKeys(v *V) bool {
	for _, k := range v.a {
		if k.k != KStr {
			return false
		}
	}
	return true
}

// appendObjectStringified writes an object whose keys are not all strings as OPA turns
// it into JSON: every key becomes its JSON text (the last of equal texts, in key order,
// wins), members sorted by those texts.
func appendObjectStringified(dst []byte, v *V, esc jsonx.Escaper) []byte {
	type member struct {
		k string
		v *V
	}
	ms := make([]member, 0, len(v.a))
	for i, k := range v.a {
		ks := k.s
		if k.k != KStr {
			ks = string(AppendGoJSON(nil, k))
		}
		ms = append(ms, member{ks, v.o[i]})
	}
	slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.k, b.k) })
	out := ms[:0]
	for _, m := range ms {
		if len(out) > 0 && out[len(out)-1].k == m.k {
			out[len(out)-1] = m
			continue
		}
		out = append(out, m)
	}
	dst = append(dst, '{')
	for i, m := range out {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = esc(dst, m.k)
		dst = append(dst, ':')
		dst = appendJSON(dst, m.v, esc)
	}
	return append(dst, '}')
}

// AppendRego appends v in Rego's syntax, as OPA's ast writes a value (sprintf's %v,
// messages): strings quoted by strconv.Quote, ", " and ": " between members, set() for
// the empty set.
func AppendRego(dst []byte, v *V) []byte {
	switch v.k {
	case KStr:
		return strconv.AppendQuote(dst, v.s)
	case KArr:
		return appendRegoList(dst, '[', v.a, ']')
	case KSet:
		if len(v.a) == 0 {
			return append(dst, "set()"...)
		}
		return appendRegoList(dst, '{', v.a, '}')
	case KObj:
		dst = append(dst, '{')
		for i, k := range v.a {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendRego(dst, k)
			dst = append(dst, ": "...)
			dst = AppendRego(dst, v.o[i])
		}
		return append(dst, '}')
	}
	return AppendCanonical(dst, v)
}

// appendRegoList appends the members of an array or set in Rego's syntax between open
// and end.
func appendRegoList(dst []byte, open byte, xs []*V, end byte) []byte {
	dst = append(dst, open)
	for i, x := range xs {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = AppendRego(dst, x)
	}
	return append(dst, end)
}
