package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of a JSON document a host accepts from storage.
const maxDepth = 64

// decodeStrict parses one JSON document as a host must read stored data: valid UTF-8, no
// duplicate member names, nothing after the document, nesting at most maxDepth. Numbers
// stay json.Number (their text).
func decodeStrict(b []byte) (any, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data after the JSON document")
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return nil, errors.New("trailing data after the JSON document")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("not valid JSON: %w", err)
				}
				k := kt.(string)
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("duplicate member %s", strconv.Quote(cut(k, 64)))
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("not valid JSON: %w", err)
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
				return nil, fmt.Errorf("not valid JSON: %w", err)
			}
			return list, nil
		}
		return nil, errors.New("not valid JSON")
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
