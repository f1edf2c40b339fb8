package host

import (
	"encoding/json"

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
	if b, err := factEncoder.Append(make([]byte, 0, 128), v); err == nil {
		return b, nil
	}
	return json.Marshal(v)
}

// factEncoder writes as json.Marshal does the types facts are made of, host errors too.
var factEncoder = jsonx.Encoder{Escape: jsonx.AppendGoString, Marshal: true, Other: appendHostError}

// appendHostError writes a *hostabi.HostError as json.Marshal does.
func appendHostError(dst []byte, v any) ([]byte, error) {
	t, ok := v.(*hostabi.HostError)
	if !ok {
		return dst, jsonx.ErrUnsupported
	}
	if t == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, `{"code":`...)
	dst = jsonx.AppendGoString(dst, t.Code)
	dst = append(dst, `,"detail":`...)
	dst = jsonx.AppendGoString(dst, t.Detail)
	if t.Fix != "" {
		dst = append(dst, `,"fix":`...)
		dst = jsonx.AppendGoString(dst, t.Fix)
	}
	return append(dst, '}'), nil
}
