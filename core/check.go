package core

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// Limits of a query, enforced by [CheckQuery] before any engine evaluates it.
const (
	// MaxQueryBytes is the largest query an engine accepts.
	MaxQueryBytes = 16 << 20
	// MaxQueryDepth is the deepest nesting of objects and arrays a query may have (the
	// query object itself is depth 1). Real queries stay below 10.
	MaxQueryDepth = 64
)

// ErrMalformedQuery is the error every engine returns, before evaluating anything, for a
// query that is not a JSON object of valid UTF-8 (see [CheckQuery]). Use errors.Is; the
// error itself is a *[QueryError].
var ErrMalformedQuery = errors.New("core: malformed query")

// QueryError says where and why a query was refused at the engine boundary.
type QueryError struct {
	Offset int    // byte offset of the problem
	Reason string // what is wrong there
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("core: malformed query: %s at byte %d", e.Reason, e.Offset)
}

// Is makes errors.Is(err, ErrMalformedQuery) true.
func (e *QueryError) Is(target error) bool { return target == ErrMalformedQuery }

// CheckQuery reports whether query is acceptable to every engine: one JSON object (RFC
// 8259) of at most MaxQueryBytes and MaxQueryDepth, in valid UTF-8, whose \u escapes
// encode Unicode scalar values (no lone surrogates, as RFC 7493 requires), and whose
// numbers are integers within ±(2^53-1) written in plain decimal digits (no fraction, no
// exponent, no -0).
//
// Both engines call it first, so that input their parsers would treat differently (OPA's
// Wasm parser accepts set literals and aborts on invalid UTF-8, OPA's Go parser replaces
// invalid UTF-8 and lone surrogates with U+FFFD; the two do arithmetic differently on
// anything but integers) is refused the same way by both. It does not allocate for a
// valid query.
func CheckQuery(query []byte) error {
	if len(query) > MaxQueryBytes {
		return &QueryError{Offset: MaxQueryBytes, Reason: fmt.Sprintf("query of %d bytes exceeds the limit of %d", len(query), MaxQueryBytes)}
	}
	c := checker{b: query}
	i := c.ws(0)
	if i >= len(query) || query[i] != '{' {
		return &QueryError{Offset: i, Reason: "a query must be a JSON object"}
	}
	i = c.value(i, 1)
	if c.err != nil {
		return c.err
	}
	if i = c.ws(i); i != len(query) {
		return &QueryError{Offset: i, Reason: "data after the query object"}
	}
	return nil
}

// FactDepth is the depth at which a fact sits in a query: the query object is depth 1,
// its "facts" object depth 2, a fact's value depth 3.
const FactDepth = 3

// CheckFact makes the checks of [CheckQuery] on one fact's bytes, as the fact would sit
// in a query under "facts" (at [FactDepth]): one JSON value (any kind; empty bytes stand
// for null, as encoding/json writes a nil json.RawMessage) in valid UTF-8, with no lone
// surrogate, nesting within MaxQueryDepth counted from the query, numbers integers within
// ±(2^53-1). An engine that builds its input from a [Query]'s parts instead of its JSON
// runs it on each fact, once per fact's version (see Query.Tokens). Offsets in the error
// are within the fact. The query's size limit is the caller's to check.
func CheckFact(fact []byte) error {
	if len(fact) == 0 {
		return nil
	}
	c := checker{b: fact}
	i := c.value(c.ws(0), FactDepth)
	if c.err != nil {
		return c.err
	}
	if i = c.ws(i); i != len(fact) {
		return &QueryError{Offset: i, Reason: "data after the fact"}
	}
	return nil
}

type checker struct {
	b   []byte
	err *QueryError
}

func (c *checker) fail(i int, reason string) int {
	if c.err == nil {
		c.err = &QueryError{Offset: i, Reason: reason}
	}
	return len(c.b)
}

func (c *checker) ws(i int) int { return jsonx.SkipSpace(c.b, i) }

// value checks the value starting at i (no leading whitespace) and returns the index after it.
func (c *checker) value(i, depth int) int {
	b := c.b
	if i >= len(b) {
		return c.fail(i, "unexpected end of input")
	}
	switch b[i] {
	case '{':
		if depth > MaxQueryDepth {
			return c.fail(i, "nesting deeper than 64")
		}
		i = c.ws(i + 1)
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return c.fail(i, "expected an object key")
			}
			if i = c.ws(c.str(i)); c.err != nil {
				return i
			}
			if i >= len(b) || b[i] != ':' {
				return c.fail(i, "expected ':'")
			}
			if i = c.ws(c.value(c.ws(i+1), depth+1)); c.err != nil {
				return i
			}
			if i >= len(b) {
				return c.fail(i, "unexpected end of input")
			}
			if b[i] == '}' {
				return i + 1
			}
			if b[i] != ',' {
				return c.fail(i, "expected ',' or '}'")
			}
			i = c.ws(i + 1)
		}
	case '[':
		if depth > MaxQueryDepth {
			return c.fail(i, "nesting deeper than 64")
		}
		i = c.ws(i + 1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = c.ws(c.value(i, depth+1)); c.err != nil {
				return i
			}
			if i >= len(b) {
				return c.fail(i, "unexpected end of input")
			}
			if b[i] == ']' {
				return i + 1
			}
			if b[i] != ',' {
				return c.fail(i, "expected ',' or ']'")
			}
			i = c.ws(i + 1)
		}
	case '"':
		return c.str(i)
	case 't':
		return c.lit(i, "true")
	case 'f':
		return c.lit(i, "false")
	case 'n':
		return c.lit(i, "null")
	default:
		return c.num(i)
	}
}

func (c *checker) lit(i int, word string) int {
	if len(c.b)-i < len(word) || string(c.b[i:i+len(word)]) != word {
		return c.fail(i, "invalid literal")
	}
	return i + len(word)
}

func isDigit(ch byte) bool { return ch >= '0' && ch <= '9' }

// maxSafe is the largest integer a query may hold: 2^53-1, the largest integer every
// JSON implementation (JavaScript's included) represents exactly.
const maxSafe = 1<<53 - 1

// num checks a number. Queries hold integers only (milliseconds, seconds, HTTP statuses,
// counts), written in plain decimal digits and within ±(2^53-1): OPA's Go evaluator does
// arithmetic on other numbers in binary floating point and prints results in its own
// form, OPA's Wasm runtime in exact decimal with the operands' exponents, so 1.5, 1e3,
// 1790000000000.0 or -0 would make the engines disagree.
func (c *checker) num(i int) int {
	b := c.b
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	const reason = "numbers must be integers within ±(2^53-1) in plain decimal digits"
	switch {
	case i < len(b) && b[i] == '0':
		i++
		if i-start > 1 {
			return c.fail(start, reason) // -0
		}
	case i < len(b) && isDigit(b[i]):
		d := i
		var v uint64
		for i < len(b) && isDigit(b[i]) {
			if i-d >= 16 {
				return c.fail(start, reason)
			}
			v = v*10 + uint64(b[i]-'0')
			i++
		}
		if v > maxSafe {
			return c.fail(start, reason)
		}
	case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
		return c.fail(start, reason)
	default:
		return c.fail(start, "invalid value")
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return c.fail(start, reason)
	}
	return i
}

// plain marks the bytes a string may hold without a closer look: printable ASCII other
// than the quote and the backslash.
var plain = func() (t [256]bool) {
	for ch := 0x20; ch < 0x80; ch++ {
		t[ch] = ch != '"' && ch != '\\'
	}
	return t
}()

// str checks the string starting at the quote at i and returns the index after its end.
func (c *checker) str(i int) int {
	b := c.b
	i++
	for i < len(b) {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		ch := b[i]
		switch {
		case ch == '"':
			return i + 1
		case ch < 0x20:
			return c.fail(i, "control character in a string")
		case ch == '\\':
			if i+1 >= len(b) {
				return c.fail(i, "unexpected end of input")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := jsonx.Hex4(b[i+2:])
				if !ok {
					return c.fail(i, "invalid \\u escape")
				}
				switch {
				case r >= 0xDC00 && r <= 0xDFFF:
					return c.fail(i, "lone surrogate in a \\u escape")
				case r >= 0xD800 && r <= 0xDBFF:
					if i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
						return c.fail(i, "lone surrogate in a \\u escape")
					}
					lo, ok := jsonx.Hex4(b[i+8:])
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return c.fail(i, "lone surrogate in a \\u escape")
					}
					i += 12
				default:
					i += 6
				}
			default:
				return c.fail(i, "invalid escape")
			}
		case ch < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return c.fail(i, "invalid UTF-8")
			}
			i += size
		}
	}
	return c.fail(i, "unterminated string")
}
