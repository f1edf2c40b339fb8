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
// It owns nothing but the check and imports only the standard library.

import (
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

// Check reports whether doc is exactly one JSON value (RFC 8259) that is also an I-JSON
// message (RFC 7493 §2.1–2.3): UTF-8 throughout, no string holding a surrogate (escaped
// or encoded) or a Unicode noncharacter, and no object with two members of the same name
// (compared after unescaping). It also refuses nesting deeper than [MaxDepth] and
// anything but whitespace after the value. It returns nil or an *[Error].
//
// Check allocates only for objects with many members or escaped member names; it reads
// doc once.
func Check(doc []byte) error {
	c := checker{b: doc}
	c.ws()
	if c.i == len(c.b) {
		return c.fail(ReasonEmpty)
	}
	if err := c.value(0); err != nil {
		return err
	}
	c.ws()
	if c.i != len(c.b) {
		return c.fail(ReasonTrailing)
	}
	return nil
}

type checker struct {
	b []byte
	i int
}

func (c *checker) fail(reason string) *Error {
	return &Error{Offset: int64(c.i), Reason: reason}
}

func (c *checker) ws() { c.i = SkipSpace(c.b, c.i) }

func (c *checker) value(depth int) error {
	if c.i >= len(c.b) {
		return c.fail(ReasonSyntax)
	}
	switch b := c.b[c.i]; {
	case b == '{':
		return c.object(depth + 1)
	case b == '[':
		return c.array(depth + 1)
	case b == '"':
		_, err := c.str(false)
		return err
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number()
	case b >= 0x80:
		if r, _ := utf8.DecodeRune(c.b[c.i:]); r == utf8.RuneError {
			return c.fail(ReasonUTF8)
		}
	}
	return c.fail(ReasonUnexpectedChar)
}

func (c *checker) literal(word string) error {
	if len(c.b)-c.i < len(word) || string(c.b[c.i:c.i+len(word)]) != word {
		return c.fail(ReasonSyntax)
	}
	c.i += len(word)
	return nil
}

func (c *checker) number() error {
	end, ok := ScanNumber(c.b, c.i)
	c.i = end
	if !ok {
		return c.fail(ReasonSyntax)
	}
	return nil
}

func (c *checker) array(depth int) error {
	if depth > MaxDepth {
		return c.fail(ReasonTooDeep)
	}
	c.i++ // [
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
		return nil
	}
	for {
		c.ws()
		if err := c.value(depth); err != nil {
			return err
		}
		c.ws()
		if c.i >= len(c.b) {
			return c.fail(ReasonSyntax)
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			return nil
		default:
			return c.fail(ReasonSyntax)
		}
	}
}

// smallObject is how many member names an object may have before they go into a map;
// below it a linear search is cheaper and allocates nothing.
const smallObject = 16

func (c *checker) object(depth int) error {
	if depth > MaxDepth {
		return c.fail(ReasonTooDeep)
	}
	c.i++ // {
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return nil
	}
	var small [smallObject][]byte
	names := small[:0]
	var many map[string]struct{}
	for {
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return c.fail(ReasonSyntax)
		}
		at := c.i
		name, err := c.str(true)
		if err != nil {
			return err
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
			return &Error{Offset: int64(at), Reason: ReasonDuplicate, Key: string(name)}
		}
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return c.fail(ReasonSyntax)
		}
		c.i++
		c.ws()
		if err := c.value(depth); err != nil {
			return err
		}
		c.ws()
		if c.i >= len(c.b) {
			return c.fail(ReasonSyntax)
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return nil
		default:
			return c.fail(ReasonSyntax)
		}
	}
}

// str checks the string at c.i (an opening quote). With decode it returns the string's
// value: a view of doc when it has no escapes, else the unescaped value.
func (c *checker) str(decode bool) ([]byte, error) {
	c.i++ // "
	start := c.i
	var out []byte // the unescaped value, once an escape is seen
	escaped := false
	for c.i < len(c.b) {
		b := c.b[c.i]
		switch {
		case b == '"':
			end := c.i
			c.i++
			if !decode {
				return nil, nil
			}
			if !escaped {
				return c.b[start:end], nil
			}
			return out, nil
		case b < 0x20:
			return nil, c.fail(ReasonControl)
		case b == '\\':
			if decode && !escaped {
				out = append(out, c.b[start:c.i]...)
			}
			escaped = true
			r, err := c.escape()
			if err != nil {
				return nil, err
			}
			if decode {
				out = utf8.AppendRune(out, r)
			}
		case b < 0x80:
			c.i++
			if decode && escaped {
				out = append(out, b)
			}
		default:
			r, size := utf8.DecodeRune(c.b[c.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, c.fail(ReasonUTF8)
			}
			if noncharacter(r) {
				return nil, c.fail(ReasonNoncharacter)
			}
			if decode && escaped {
				out = append(out, c.b[c.i:c.i+size]...)
			}
			c.i += size
		}
	}
	return nil, c.fail(ReasonSyntax)
}

// escape reads one escape sequence at c.i (a backslash) and returns the rune it stands
// for; a \u escape of a high surrogate must be followed by one of a low surrogate.
func (c *checker) escape() (rune, error) {
	if c.i+1 >= len(c.b) {
		return 0, c.fail(ReasonSyntax)
	}
	switch c.b[c.i+1] {
	case '"', '\\', '/':
		r := rune(c.b[c.i+1])
		c.i += 2
		return r, nil
	case 'b':
		c.i += 2
		return '\b', nil
	case 'f':
		c.i += 2
		return '\f', nil
	case 'n':
		c.i += 2
		return '\n', nil
	case 'r':
		c.i += 2
		return '\r', nil
	case 't':
		c.i += 2
		return '\t', nil
	case 'u':
	default:
		return 0, c.fail(ReasonBadEscape)
	}
	at := c.i
	r, ok := Hex4(c.b[c.i+2:])
	if !ok {
		return 0, c.fail(ReasonBadEscape)
	}
	c.i += 6
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		c.i = at
		return 0, c.fail(ReasonSurrogate)
	case r >= 0xD800 && r <= 0xDBFF:
		lo, ok := rune(0), false
		if c.i+1 < len(c.b) && c.b[c.i] == '\\' && c.b[c.i+1] == 'u' {
			lo, ok = Hex4(c.b[c.i+2:])
		}
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			c.i = at
			return 0, c.fail(ReasonSurrogate)
		}
		c.i += 6
		r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
	}
	if noncharacter(r) {
		c.i = at
		return 0, c.fail(ReasonNoncharacter)
	}
	return r, nil
}

// noncharacter reports the 66 noncharacters of Unicode: U+FDD0..U+FDEF and the last two
// code points of every plane.
func noncharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}
