package host

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/grantwire/grantwire/hostabi"
)

// encodeFact writes a fact as json.Marshal does, byte for byte, without its reflection
// for the types facts are made of (maps of any, lists, strings, numbers, booleans, host
// errors); anything else goes through json.Marshal (TestEncodeFactIsMarshal). A
// json.RawMessage is a fact already encoded by this package (factmemo.go): it is answered
// as it is.
func encodeFact(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	if b, ok := appendFact(make([]byte, 0, 128), v); ok {
		return b, nil
	}
	return json.Marshal(v)
}

// appendFact appends v as json.Marshal writes it; ok is false for a value it does not
// know (dst is then to be dropped).
func appendFact(dst []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, t), true
	case string:
		return appendJSONString(dst, t), true
	case int:
		return strconv.AppendInt(dst, int64(t), 10), true
	case int64:
		return strconv.AppendInt(dst, t, 10), true
	case json.Number:
		if t == "" {
			return append(dst, '0'), true
		}
		if !jsonNumber(string(t)) {
			return dst, false
		}
		return append(dst, t...), true
	case map[string]any:
		if t == nil {
			return append(dst, "null"...), true
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendFact(dst, t[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if t == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendFact(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case []string:
		if t == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, e)
		}
		return append(dst, ']'), true
	case *hostabi.HostError:
		if t == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, `{"code":`...)
		dst = appendJSONString(dst, t.Code)
		dst = append(dst, `,"detail":`...)
		dst = appendJSONString(dst, t.Detail)
		if t.Fix != "" {
			dst = append(dst, `,"fix":`...)
			dst = appendJSONString(dst, t.Fix)
		}
		return append(dst, '}'), true
	}
	return dst, false
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as encoding/json does: HTML characters (<, >, &), control
// characters, U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd.
func appendJSONString(dst []byte, s string) []byte {
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
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
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
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
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

// jsonNumber reports whether s is a number in JSON's grammar (what json.Marshal accepts
// as a json.Number).
func jsonNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}
