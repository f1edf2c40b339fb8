package jsonx

// Strict reading: [Check] checks that bytes are exactly one strict JSON document before
// anything decodes them. encoding/json is lenient where a file grantwire trusts must not
// be: it silently replaces invalid UTF-8 with U+FFFD, keeps the last of two members with
// the same name, and decodes the first of several documents. A ledger decoded that way
// and written back would lose what the user (or another program) wrote, without a word.
//
// [Check] is the one place these rules live. The ledger reader of hostabi calls it on
// every ledger; any host that reads grantwire's ledgers should call it too.
//
// Its scanner is the one strict reader of the module: a [Grammar] says what it refuses
// and in which words. [ICheck] is Check's; core.CheckQuery reads queries with another
// (no duplicate check, safe integers only, its own wording).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxDepth is how deeply arrays and objects may nest. grantwire's documents nest four
// levels; the limit keeps a hostile file from costing stack or time.
const MaxDepth = 64

// Error is why a document is refused, and where. It never quotes the document's string
// values (a file may hold secrets); Key is the member name of a duplicate.
type Error struct {
	Offset int64  // byte offset of the offending byte
	Reason string // what is wrong, e.g. "duplicate member name"
	Key    string // the duplicated member name (escaped when printed), if any
}

func (e *Error) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%s %q at byte %d", e.Reason, e.Key, e.Offset)
	}
	return fmt.Sprintf("%s at byte %d", e.Reason, e.Offset)
}

// Reasons of [Error].
const (
	ReasonEmpty          = "no JSON document"
	ReasonSyntax         = "not valid JSON"
	ReasonTrailing       = "trailing data after the JSON document"
	ReasonUTF8           = "invalid UTF-8"
	ReasonSurrogate      = "a lone UTF-16 surrogate escape"
	ReasonNoncharacter   = "a Unicode noncharacter"
	ReasonControl        = "a control character inside a string"
	ReasonDuplicate      = "duplicate member name"
	ReasonTooDeep        = "nested deeper than 64 levels"
	ReasonBadEscape      = "an invalid escape sequence"
	ReasonUnexpectedChar = "unexpected character"
)

// UnmarshalKnown decodes body into v as encoding/json does, but refuses a member v has no
// field for and anything after the first JSON value. It is a request body's reader (REST,
// a control API), not a ledger's: it does not apply [Check]'s rules.
func UnmarshalKnown(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// Check reports whether doc is exactly one JSON value (RFC 8259) that is also an I-JSON
// message (RFC 7493 §2.1–2.3): UTF-8 throughout, no string holding a surrogate (escaped
// or encoded) or a Unicode noncharacter, and no object with two members of the same name
// (compared after unescaping). It also refuses nesting deeper than [MaxDepth] and
// anything but whitespace after the value. It returns nil or an *[Error].
//
// Check allocates only for objects with many members or escaped member names; it reads
// doc once.
func Check(doc []byte) error {
	i := SkipSpace(doc, 0)
	if i == len(doc) {
		return &Error{Offset: int64(i), Reason: ReasonEmpty}
	}
	end, f := ICheck.Value(doc, i, 1)
	if f.Reason != "" {
		return &Error{Offset: int64(f.Offset), Reason: f.Reason, Key: f.Key}
	}
	if i = SkipSpace(doc, end); i != len(doc) {
		return &Error{Offset: int64(i), Reason: ReasonTrailing}
	}
	return nil
}

// A Grammar is one strict reading of JSON: RFC 8259's grammar in valid UTF-8 with no lone
// surrogate escape, nesting at most MaxDepth, and the rules and the wording of its
// refusals that differ between readers. [ICheck] is [Check]'s; core.CheckQuery has its own.
type Grammar struct {
	MaxDepth      int
	Duplicates    bool // refuse two members of one object with the same (unescaped) name
	Noncharacters bool // refuse Unicode noncharacters in strings, escaped or not
	// SafeIntegers refuses every number but an integer within ±(2^53-1) in plain decimal
	// digits (no fraction, no exponent, no -0), with the reason Integer at its start, and
	// any other value with the reason NoValue at its start. Without it a number is JSON's
	// (ReasonSyntax where its grammar fails) and anything else ReasonUTF8 or
	// ReasonUnexpectedChar.
	SafeIntegers     bool
	Integer, NoValue string
	// The reasons of the refusals.
	End, Key, Colon, ObjectSep, ArraySep, Literal, TooDeep, Control, Escape, UEscape,
	Surrogate, UTF8, Unterminated string
}

// A Failure is where and why a [Grammar] refuses a document; Reason is "" when it does not.
// Key is the member name of a duplicate.
type Failure struct {
	Offset int
	Reason string
	Key    string
}

// ICheck is the grammar of [Check]: I-JSON, every refusal one of the Reason constants.
var ICheck = &Grammar{
	MaxDepth: MaxDepth, Duplicates: true, Noncharacters: true,
	End: ReasonSyntax, Key: ReasonSyntax, Colon: ReasonSyntax, ObjectSep: ReasonSyntax,
	ArraySep: ReasonSyntax, Literal: ReasonSyntax, TooDeep: ReasonTooDeep, Control: ReasonControl,
	Escape: ReasonBadEscape, UEscape: ReasonBadEscape, Surrogate: ReasonSurrogate, UTF8: ReasonUTF8,
	Unterminated: ReasonSyntax,
}

// scalar reads a value at i that begins with none of {["tfn: a number, or no value
// (without SafeIntegers; safeInteger with it).
func (s *scanner) scalar(i int) int {
	b := s.b
	switch c := b[i]; {
	case c == '-' || isDigit(c):
		end, ok := ScanNumber(b, i)
		if !ok {
			return s.fail(end, ReasonSyntax)
		}
		return end
	case c >= 0x80:
		if r, _ := utf8.DecodeRune(b[i:]); r == utf8.RuneError {
			return s.fail(i, ReasonUTF8)
		}
	}
	return s.fail(i, ReasonUnexpectedChar)
}

// maxSafe is the largest integer of SafeIntegers: 2^53-1, the largest integer every JSON
// implementation (JavaScript's included) represents exactly.
const maxSafe = 1<<53 - 1

func (s *scanner) safeInteger(i int) int {
	b := s.b
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
		if i-start > 1 {
			return s.fail(start, s.g.Integer) // -0
		}
	case i < len(b) && isDigit(b[i]):
		d := i
		var v uint64
		for i < len(b) && isDigit(b[i]) {
			if i-d >= 16 {
				return s.fail(start, s.g.Integer)
			}
			v = v*10 + uint64(b[i]-'0')
			i++
		}
		if v > maxSafe {
			return s.fail(start, s.g.Integer)
		}
	case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
		return s.fail(start, s.g.Integer)
	default:
		return s.fail(start, s.g.NoValue)
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return s.fail(start, s.g.Integer)
	}
	return i
}

// Value reads the value that starts at i (no whitespace before it) at nesting depth (the
// depth an object or array there would have: 1 for a document's) and returns the index
// after it, or the first refusal.
func (g *Grammar) Value(b []byte, i, depth int) (int, Failure) {
	s := scanner{g: g, b: b}
	end := s.value(i, depth)
	return end, s.f
}

type scanner struct {
	g *Grammar
	b []byte
	f Failure
}

// fail records the first refusal and returns the end of the input, where every caller stops.
func (s *scanner) fail(i int, reason string) int {
	if s.f.Reason == "" {
		s.f = Failure{Offset: i, Reason: reason}
	}
	return len(s.b)
}

func (s *scanner) failed() bool { return s.f.Reason != "" }

func (s *scanner) value(i, depth int) int {
	b := s.b
	if i >= len(b) {
		return s.fail(i, s.g.End)
	}
	switch b[i] {
	case '{':
		return s.object(i, depth)
	case '[':
		if depth > s.g.MaxDepth {
			return s.fail(i, s.g.TooDeep)
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for done := false; ; {
			if i = SkipSpace(b, s.value(i, depth+1)); s.failed() {
				return i
			}
			if i, done = s.next(b, i, ']', s.g.ArraySep); done {
				return i
			}
		}
	case '"':
		return s.skip(i)
	case 't':
		return s.literal(i, "true")
	case 'f':
		return s.literal(i, "false")
	case 'n':
		return s.literal(i, "null")
	}
	if s.g.SafeIntegers {
		return s.safeInteger(i)
	}
	return s.scalar(i)
}

func (s *scanner) literal(i int, word string) int {
	if len(s.b)-i < len(word) || string(s.b[i:i+len(word)]) != word {
		return s.fail(i, s.g.Literal)
	}
	return i + len(word)
}

// smallObject is how many member names an object may have before they go into a map;
// below it a linear search is cheaper and allocates nothing.
const smallObject = 16

func (s *scanner) object(i, depth int) int {
	if depth > s.g.MaxDepth {
		return s.fail(i, s.g.TooDeep)
	}
	if s.g.Duplicates {
		var small [smallObject][]byte
		return s.members(i, depth, small[:0])
	}
	return s.members(i, depth, nil)
}

// members reads the members of the object at i, their names into names (when the grammar
// refuses duplicates: a slice of an array on the caller's stack, so that small objects
// allocate nothing).
func (s *scanner) members(i, depth int, names [][]byte) int {
	b := s.b
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	var many map[string]struct{}
	for {
		if i >= len(b) || b[i] != '"' {
			return s.fail(i, s.g.Key)
		}
		at := i
		if !s.g.Duplicates {
			if i = s.skip(i); s.failed() {
				return i
			}
		} else {
			var name []byte
			if i, name = s.str(i); s.failed() {
				return i
			}
			dup := false
			if many != nil {
				if _, dup = many[string(name)]; !dup {
					many[string(name)] = struct{}{}
				}
			} else {
				for _, n := range names {
					if string(n) == string(name) {
						dup = true
						break
					}
				}
				if len(names) < smallObject {
					names = append(names, name)
				} else {
					many = make(map[string]struct{}, 2*smallObject)
					for _, n := range names {
						many[string(n)] = struct{}{}
					}
					many[string(name)] = struct{}{}
				}
			}
			if dup {
				s.f = Failure{Offset: at, Reason: ReasonDuplicate, Key: string(name)}
				return len(b)
			}
		}
		if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
			return s.fail(i, s.g.Colon)
		}
		if i = SkipSpace(b, s.value(SkipSpace(b, i+1), depth+1)); s.failed() {
			return i
		}
		var done bool
		if i, done = s.next(b, i, '}', s.g.ObjectSep); done {
			return i
		}
	}
}

// next reads what follows a member of an array or object at i: the closing byte end
// (done, i past it), a ',' (i at the next member), or anything else (done, failed with
// sep; input ending there fails with End).
func (s *scanner) next(b []byte, i int, end byte, sep string) (int, bool) {
	switch {
	case i >= len(b):
		return s.fail(i, s.g.End), true
	case b[i] == end:
		return i + 1, true
	case b[i] != ',':
		return s.fail(i, sep), true
	}
	return SkipSpace(b, i+1), false
}

// plain marks the bytes a string may hold without a closer look: printable ASCII other
// than the quote and the backslash.
var plain = func() (t [256]bool) {
	for ch := 0x20; ch < 0x80; ch++ {
		t[ch] = ch != '"' && ch != '\\'
	}
	return t
}()

// skip reads the string whose opening quote is at i and returns the index after it.
func (s *scanner) skip(i int) int {
	b := s.b
	i++
	for i < len(b) {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return s.fail(i, s.g.Control)
		case c == '\\':
			if i, _ = s.escape(i); s.failed() {
				return i
			}
		default: // non-ASCII
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return s.fail(i, s.g.UTF8)
			}
			if s.g.Noncharacters && noncharacter(r) {
				return s.fail(i, ReasonNoncharacter)
			}
			i += size
		}
	}
	return s.fail(i, s.g.Unterminated)
}

// str reads the string whose opening quote is at i and returns the index after it. With
// decode it also returns the string's value: a view of b when it has no escapes, else the
// unescaped value.
func (s *scanner) str(i int) (int, []byte) {
	const decode = true
	b := s.b
	i++
	start := i
	var out []byte // the unescaped value, once an escape is seen
	escaped := false
	for i < len(b) {
		run := i
		for i < len(b) && plain[b[i]] {
			i++
		}
		if decode && escaped {
			out = append(out, b[run:i]...)
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			if !decode {
				return i + 1, nil
			}
			if !escaped {
				return i + 1, b[start:i]
			}
			return i + 1, out
		case c < 0x20:
			return s.fail(i, s.g.Control), nil
		case c == '\\':
			if decode && !escaped {
				out = append(out, b[start:i]...)
			}
			escaped = true
			var r rune
			if i, r = s.escape(i); s.failed() {
				return i, nil
			}
			if decode {
				out = utf8.AppendRune(out, r)
			}
		default: // non-ASCII
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return s.fail(i, s.g.UTF8), nil
			}
			if s.g.Noncharacters && noncharacter(r) {
				return s.fail(i, ReasonNoncharacter), nil
			}
			if decode && escaped {
				out = append(out, b[i:i+size]...)
			}
			i += size
		}
	}
	return s.fail(i, s.g.Unterminated), nil
}

// escape reads the escape sequence at i (a backslash) and returns the index after it and
// the rune it stands for; a \u escape of a high surrogate must be followed by one of a low
// surrogate.
func (s *scanner) escape(i int) (int, rune) {
	b := s.b
	if i+1 >= len(b) {
		return s.fail(i, s.g.End), 0
	}
	switch b[i+1] {
	case '"', '\\', '/':
		return i + 2, rune(b[i+1])
	case 'b':
		return i + 2, '\b'
	case 'f':
		return i + 2, '\f'
	case 'n':
		return i + 2, '\n'
	case 'r':
		return i + 2, '\r'
	case 't':
		return i + 2, '\t'
	case 'u':
	default:
		return s.fail(i, s.g.Escape), 0
	}
	r, ok := Hex4(b[i+2:])
	if !ok {
		return s.fail(i, s.g.UEscape), 0
	}
	end := i + 6
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return s.fail(i, s.g.Surrogate), 0
	case r >= 0xD800 && r <= 0xDBFF:
		lo, ok := rune(0), false
		if end+1 < len(b) && b[end] == '\\' && b[end+1] == 'u' {
			lo, ok = Hex4(b[end+2:])
		}
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return s.fail(i, s.g.Surrogate), 0
		}
		end += 6
		r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
	}
	if s.g.Noncharacters && noncharacter(r) {
		return s.fail(i, ReasonNoncharacter), 0
	}
	return end, r
}

// noncharacter reports the 66 noncharacters of Unicode: U+FDD0..U+FDEF and the last two
// code points of every plane.
func noncharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}
