package host

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
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
		return jsonx.AppendGoString(dst, t), true
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
			dst = jsonx.AppendGoString(dst, k)
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
			dst = jsonx.AppendGoString(dst, e)
		}
		return append(dst, ']'), true
	case *hostabi.HostError:
		if t == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, `{"code":`...)
		dst = jsonx.AppendGoString(dst, t.Code)
		dst = append(dst, `,"detail":`...)
		dst = jsonx.AppendGoString(dst, t.Detail)
		if t.Fix != "" {
			dst = append(dst, `,"fix":`...)
			dst = jsonx.AppendGoString(dst, t.Fix)
		}
		return append(dst, '}'), true
	}
	return dst, false
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
