package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of a JSON document a host accepts from storage.
const maxDepth = 64

// Reasons a stored JSON document is refused (the "corrupt" answer of ledger.read). They are
// a fixed vocabulary, so that every host (shells/wasm/node too) words them alike and the
// core sees the same facts whatever host read the file; hostabi/README.md lists them.
const (
	reasonUTF8     = "not valid UTF-8"
	reasonSyntax   = "not valid JSON"
	reasonTrailing = "trailing data after the JSON document"
	reasonDepth    = "nested deeper than 64" // maxDepth
)

// reasonDuplicate names a member that appears twice (the name as a JSON string).
func reasonDuplicate(name string) string {
	b, _ := encodeValue(name)
	return "duplicate member " + string(b)
}

// decodeStrict parses one JSON document as a host must read stored data: valid UTF-8, no
// duplicate member names, nothing after the document, nesting at most maxDepth. Numbers
// stay json.Number (their text). The error is one of the reasons above.
func decodeStrict(b []byte) (any, error) {
	if !utf8.Valid(b) {
		return nil, errors.New(reasonUTF8)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New(reasonTrailing)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return nil, errors.New(reasonTrailing)
	}
	return v, nil
}

var errSyntax = errors.New(reasonSyntax)

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New(reasonDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, errSyntax
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
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
					return nil, errors.New(reasonDuplicate(k))
				}
				v, err := decodeValue(dec, depth+1)
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
				v, err := decodeValue(dec, depth+1)
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
	default:
		return t, nil
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// factValue turns stored JSON into what a fact may carry: integers beyond ±(2^53-1) and
// numbers with a fraction or an exponent become {"$number": text}.
func factValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = factValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = factValue(e)
		}
		return out
	case json.Number:
		if safeInteger(string(t)) {
			return t
		}
		return map[string]any{"$number": string(t)}
	}
	return v
}

func safeInteger(s string) bool {
	if strings.ContainsAny(s, ".eE") {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n <= 1<<53-1 && n >= -(1<<53-1) && s != "-0"
}

// encodeValue writes a JSON value compactly with sorted keys and no HTML escaping.
func encodeValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// encodeDocument writes a ledger: sorted keys, 2-space indentation, a final newline.
func encodeDocument(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// validNumber reports whether s is a JSON number.
func validNumber(s string) bool {
	if !json.Valid([]byte(s)) {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsInf(f, 0)
}
