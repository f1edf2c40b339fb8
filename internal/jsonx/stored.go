package jsonx

// Stored bytes: this file owns how a host reads stored bytes before the core sees them
// (hostabi/README.md): a JSON document read strictly (valid UTF-8, no duplicate member,
// nothing after it, nesting bounded) and refused with a reason from a fixed vocabulary;
// numbers that are not safe integers carried as {"$number": text}; the value at a path in
// a ledger document and the JSON types on the way; a secret's description (digest and
// CRC-32) and a keyring value's version token.
//
// The Go host (host/) and the differential test's simulated host (internal/testworld/nodiff)
// both read through it, so the facts the engines are tested on are the facts a host
// gives. The Node shell words the same reasons (hostabi/testdata/stored-json.json holds
// the cases every host checks). It imports only the standard library.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reasons a stored JSON document is refused by [Decode] (the "corrupt" answer of
// ledger.read), with [ReasonSyntax] and [ReasonTrailing]. They are a fixed vocabulary, so
// that every host (shells/wasm/node too) words them alike and the core sees the same facts
// whatever host read the file; hostabi/README.md lists them. Nesting is bounded by
// [MaxDepth] here too.
const (
	StoredReasonUTF8  = "not valid UTF-8"
	StoredReasonDepth = "nested deeper than 64" // MaxDepth
)

// StoredReasonDuplicate names a member that appears twice (the name as a JSON string, HTML
// characters unescaped).
func StoredReasonDuplicate(name string) string {
	b, _ := MarshalPlain(name) // a string always encodes
	return "duplicate member " + string(b)
}

var errSyntax = errors.New(ReasonSyntax)

// Decode parses one JSON document as a host must read stored data: valid UTF-8, no
// duplicate member names, nothing after the document, nesting at most MaxDepth. Numbers
// stay json.Number (their text). The error's text is one of the reasons above.
func Decode(b []byte) (any, error) { return DecodeContext(context.Background(), b) }

// checkEvery is how many values DecodeContext reads, and how many members Document
// writes, between two looks at their context.
const checkEvery = 4096

// DecodeContext is Decode that stops when ctx is done: a ledger of hundreds of thousands
// of entries takes a second to read, and a Ctrl-C during it cancels the read at once. The
// error is then ctx.Err() (never one of the reasons: the document was not judged).
func DecodeContext(ctx context.Context, b []byte) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, errors.New(StoredReasonUTF8)
	}
	d := &decoder{Decoder: json.NewDecoder(bytes.NewReader(b)), ctx: ctx}
	d.UseNumber()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New(ReasonTrailing)
	}
	if rest := bytes.TrimSpace(b[d.InputOffset():]); len(rest) > 0 {
		return nil, errors.New(ReasonTrailing)
	}
	return v, nil
}

// decoder reads one document's values, looking at its context every checkEvery of them.
type decoder struct {
	*json.Decoder
	ctx  context.Context
	read int
}

func (dec *decoder) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, errors.New(StoredReasonDepth)
	}
	if dec.read++; dec.read%checkEvery == 0 {
		if err := dec.ctx.Err(); err != nil {
			return nil, err
		}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, errSyntax
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		m := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, errSyntax
			}
			k, ok := kt.(string)
			if !ok {
				return nil, errSyntax
			}
			if _, dup := m[k]; dup {
				return nil, errors.New(StoredReasonDuplicate(k))
			}
			v, err := dec.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		if _, err := dec.Token(); err != nil {
			return nil, errSyntax
		}
		return m, nil
	case '[':
		list := []any{}
		for dec.More() {
			v, err := dec.value(depth + 1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, errSyntax
		}
		return list, nil
	}
	return nil, errSyntax
}

// FactValue turns a decoded document into what a fact may carry: integers beyond
// ±(2^53-1), -0 and numbers with a fraction or an exponent become {"$number": text}. It
// returns a copy; v is not changed.
func FactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = FactValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = FactValue(e)
		}
		return out
	case json.Number:
		if SafeInteger(string(t)) {
			return t
		}
		return map[string]any{"$number": string(t)}
	}
	return v
}

// SafeInteger reports whether the JSON number s is an integer every JSON reader holds
// exactly: within ±(2^53-1), written without a fraction or an exponent, and not -0.
func SafeInteger(s string) bool {
	if strings.ContainsAny(s, ".eE") || s == "-0" {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n <= 1<<53-1 && n >= -(1<<53-1)
}

// At returns the value at path inside doc (member names of nested objects).
func At(doc any, path []string) (any, bool) {
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = m[k]; !ok {
			return nil, false
		}
	}
	return doc, true
}

// RawAt is At on undecoded JSON: the raw value at path inside doc, each step decoding
// only one object's members (a tool call's arguments, an operation's result).
func RawAt(doc json.RawMessage, path []string) (json.RawMessage, bool) {
	for _, k := range path {
		var m map[string]json.RawMessage
		if json.Unmarshal(doc, &m) != nil {
			return nil, false
		}
		var ok bool
		if doc, ok = m[k]; !ok {
			return nil, false
		}
	}
	return doc, true
}

// Shape names the JSON type of each value on the way to path (the document first), as far
// as the path leads: the core tells a missing entry from a document of the wrong shape.
func Shape(doc any, path []string) []string {
	out := []string{Type(doc)}
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			break
		}
		if doc, ok = m[k]; !ok {
			break
		}
		out = append(out, Type(doc))
	}
	return out
}

// Type is the JSON type of a decoded value: object, array, string, number, boolean or null.
func Type(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// Describe is the description of a secret registered under ref ("<need key>#<name>"):
// {"$ref": ref, "digest": Digest(value), "crc32": CRC32(value)}.
func Describe(ref, value string) map[string]any {
	return map[string]any{"$ref": ref, "digest": Digest(value), "crc32": CRC32(value)}
}

// DescribeMembers is what a fact carries of a stored JSON object some of whose members are
// secrets: the decoded document v as FactValue makes it, with each listed top-level
// string member replaced by describe(member, value) (the host registers the secret and
// returns its Describe). Anything but an object gives nil. v is not changed.
func DescribeMembers(v any, members []string, describe func(member, value string) map[string]any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := FactValue(m).(map[string]any)
	for _, f := range members {
		if s, ok := m[f].(string); ok {
			out[f] = describe(f, s)
		}
	}
	return out
}

// Digest refers to a secret without revealing it: "sha256:" and 16 hex digits.
func Digest(secret string) string { return "sha256:" + Version(secret) }

// CRC32 is the CRC-32 (IEEE) of s as 8 lowercase hex digits (GAIA's client_id_hash).
func CRC32(s string) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(s))) }

// Version is the version token of a keyring value: 16 hex digits of its SHA-256.
func Version(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:8])
}
