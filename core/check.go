package core

import (
	"errors"
	"fmt"

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
	i := jsonx.SkipSpace(query, 0)
	if i >= len(query) || query[i] != '{' {
		return &QueryError{Offset: i, Reason: "a query must be a JSON object"}
	}
	i, f := queryGrammar.Value(query, i, 1)
	if f.Reason != "" {
		return &QueryError{Offset: f.Offset, Reason: f.Reason}
	}
	if i = jsonx.SkipSpace(query, i); i != len(query) {
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
	i, f := queryGrammar.Value(fact, jsonx.SkipSpace(fact, 0), FactDepth)
	if f.Reason != "" {
		return &QueryError{Offset: f.Offset, Reason: f.Reason}
	}
	if i = jsonx.SkipSpace(fact, i); i != len(fact) {
		return &QueryError{Offset: i, Reason: "data after the fact"}
	}
	return nil
}

// queryGrammar is the strict reading of a query: no duplicate check (the engines agree on
// the last of two members), numbers integers within ±(2^53-1) in plain decimal digits only.
// Queries hold integers only (milliseconds, seconds, HTTP statuses, counts): OPA's Go
// evaluator does arithmetic on other numbers in binary floating point and prints results
// in its own form, OPA's Wasm runtime in exact decimal with the operands' exponents, so
// 1.5, 1e3, 1790000000000.0 or -0 would make the engines disagree.
var queryGrammar = &jsonx.Grammar{
	MaxDepth: MaxQueryDepth, SafeIntegers: true, NoValue: "invalid value",
	Integer: "numbers must be integers within ±(2^53-1) in plain decimal digits",
	End:     "unexpected end of input", Key: "expected an object key", Colon: "expected ':'",
	ObjectSep: "expected ',' or '}'", ArraySep: "expected ',' or ']'", Literal: "invalid literal",
	TooDeep: "nesting deeper than 64", Control: "control character in a string",
	Escape: "invalid escape", UEscape: "invalid \\u escape", Surrogate: "lone surrogate in a \\u escape",
	UTF8: "invalid UTF-8", Unterminated: "unterminated string",
}
