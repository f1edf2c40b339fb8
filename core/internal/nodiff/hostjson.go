package nodiff

import (
	"bytes"
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

// What a host does to stored bytes before the core sees them (hostabi/README.md): parse
// strictly, turn numbers that are not safe integers into {"$number": text}, describe
// secrets, locate a path inside a ledger document and name the types on the way.

// Describe is the description of a secret registered under ref ("<need key>#<name>"):
// {"$ref", "digest": "sha256:<16 hex>", "crc32": "<8 hex>"}.
func Describe(ref, value string) map[string]any {
	return map[string]any{"$ref": ref, "digest": "sha256:" + hex16(value), "crc32": crc(value)}
}

func hex16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

func crc(s string) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(s))) }

// decodeStrict parses one JSON document as a host reads stored data: valid UTF-8, no
// duplicate member names, nothing after the document. Numbers stay json.Number.
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
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return nil, errors.New("trailing data after the JSON document")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("nested deeper than 64")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
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
				return nil, fmt.Errorf("not valid JSON: %w", err)
			}
			k := kt.(string)
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("duplicate member %s", strconv.Quote(k))
			}
			if m[k], err = decodeValue(dec, depth+1); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token()
		return m, err
	case '[':
		list := []any{}
		for dec.More() {
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	}
	return nil, errors.New("not valid JSON")
}

// factValue is stored JSON as a fact may carry it: integers beyond ±(2^53-1) and numbers
// with a fraction or an exponent become {"$number": text}.
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
	if strings.ContainsAny(s, ".eE") || s == "-0" {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n <= 1<<53-1 && n >= -(1<<53-1)
}

// at returns the value at path inside doc (string keys into objects).
func at(doc any, path []any) (any, bool) {
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		key, ok := k.(string)
		if !ok {
			return nil, false
		}
		if doc, ok = m[key]; !ok {
			return nil, false
		}
	}
	return doc, true
}

// shape names the JSON type of the document and of each value on the way to path, as far
// as the path leads.
func shape(doc any, path []any) []any {
	out := []any{jsonType(doc)}
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			break
		}
		key, _ := k.(string)
		if doc, ok = m[key]; !ok {
			break
		}
		out = append(out, jsonType(doc))
	}
	return out
}

func jsonType(v any) string {
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

// msOf mirrors store.ms: Unix milliseconds of a stored seconds value (an integer, or a
// {"$number"} decimal with at most 15 integer digits); ok is false where the policy's is
// undefined.
func msOf(x any) (int64, bool) {
	switch t := x.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(t), 10, 64)
		return n * 1000, err == nil
	case map[string]any:
		s, ok := t["$number"].(string)
		if !ok {
			return 0, false
		}
		parts := strings.Split(s, ".")
		if len(parts) > 2 || !plainDigits(parts[0], 15) {
			return 0, false
		}
		frac := ""
		if len(parts) == 2 {
			d := parts[1]
			if len(d) > 12 {
				d = d[:12]
			}
			if !plainDigits("1"+d, 15) {
				return 0, false
			}
			frac = parts[1]
		}
		frac = (frac + "000")[:3]
		i, _ := strconv.ParseInt(parts[0], 10, 64)
		f, _ := strconv.ParseInt(frac, 10, 64)
		return i*1000 + f, true
	}
	return 0, false
}

// plainDigits: 1 to max decimal digits without a sign or a leading zero (or "0").
func plainDigits(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s == "0" || s[0] != '0'
}
