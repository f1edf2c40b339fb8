package rt

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"unsafe"
)

//rego:builtin json.marshal
func (ev *Eval) BiJSONMarshal(a *V) *V {
	if a == nil {
		return nil
	}
	if !goJSONNumbersValid(a) {
		return nil
	}
	ev.scr = AppendGoJSON(ev.scr[:0], a)
	return ev.stringOf(ev.scr)
}

// goJSONNumbersValid reports whether encoding/json would accept every number of v (it
// refuses json.Number text that is not a JSON number).
func goJSONNumbersValid(v *V) bool {
	switch v.k {
	case KNum:
		if v.s == "" {
			return true
		}
		return validJSONNumber(v.s)
	case KArr, KSet:
		for _, x := range v.a {
			if !goJSONNumbersValid(x) {
				return false
			}
		}
	case KObj:
		for i, k := range v.a {
			if !goJSONNumbersValid(k) || !goJSONNumbersValid(v.o[i]) {
				return false
			}
		}
	}
	return true
}

func validJSONNumber(s string) bool {
	p := parser{s: s, ev: &Eval{heap: true}}
	p.num()
	return p.err == nil && p.i == len(s)
}

//rego:builtin json.unmarshal
func (ev *Eval) BiJSONUnmarshal(s string) *V {
	v, err := ev.parse(s)
	if err != nil || !numbersChecked(v) {
		return nil
	}
	return v
}

// numbersChecked applies ast.NumberChecked to every number of v.
func numbersChecked(v *V) bool {
	switch v.k {
	case KNum:
		return v.s == "" || numberChecked(v.s)
	case KArr:
		for _, x := range v.a {
			if !numbersChecked(x) {
				return false
			}
		}
	case KObj:
		for _, x := range v.o {
			if !numbersChecked(x) {
				return false
			}
		}
	}
	return true
}

//rego:builtin json.is_valid
func (ev *Eval) BiJSONIsValid(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return False
	}
	return Bool(json.Valid(unsafe.Slice(unsafe.StringData(s), len(s))))
}

// encodeString writes the encoding of s (n bytes long) into the string arena.
func (ev *Eval) encodeString(n int, s string, encode func(dst, src []byte)) *V {
	t := ev.textBytes(n)
	encode(t, unsafe.Slice(unsafe.StringData(s), len(s)))
	return ev.String(unsafe.String(unsafe.SliceData(t), len(t)))
}

//rego:builtin base64.encode
func (ev *Eval) BiBase64Encode(s string) *V {
	return ev.encodeString(base64.StdEncoding.EncodedLen(len(s)), s, base64.StdEncoding.Encode)
}

//rego:builtin base64.decode
func (ev *Eval) BiBase64Decode(s string) *V {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return ev.String(string(b))
}

//rego:builtin base64.is_valid
func (ev *Eval) BiBase64IsValid(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return False
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return Bool(err == nil)
}

//rego:builtin base64url.encode
func (ev *Eval) BiBase64URLEncode(s string) *V {
	return ev.encodeString(base64.URLEncoding.EncodedLen(len(s)), s, base64.URLEncoding.Encode)
}

//rego:builtin base64url.encode_no_pad
func (ev *Eval) BiBase64URLEncodeNoPad(s string) *V {
	return ev.encodeString(base64.RawURLEncoding.EncodedLen(len(s)), s, base64.RawURLEncoding.Encode)
}

//rego:builtin base64url.decode
func (ev *Eval) BiBase64URLDecode(s string) *V {
	if !strings.HasSuffix(s, "=") {
		switch len(s) % 4 {
		case 0:
		case 2:
			s += "=="
		case 3:
			s += "="
		default:
			return nil
		}
	}
	b, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return ev.String(string(b))
}

//rego:builtin hex.encode
func (ev *Eval) BiHexEncode(s string) *V {
	return ev.encodeString(hex.EncodedLen(len(s)), s, func(dst, src []byte) { hex.Encode(dst, src) })
}

//rego:builtin hex.decode
func (ev *Eval) BiHexDecode(s string) *V {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil
	}
	return ev.String(string(b))
}

//rego:builtin urlquery.encode
func (ev *Eval) BiURLQueryEncode(s string) *V {
	return ev.String(url.QueryEscape(s))
}

//rego:builtin urlquery.decode
func (ev *Eval) BiURLQueryDecode(s string) *V {
	r, err := url.QueryUnescape(s)
	if err != nil {
		return nil
	}
	return ev.String(r)
}

//rego:builtin urlquery.encode_object
func (ev *Eval) BiURLQueryEncodeObject(a *V) *V {
	if a.Kind() != KObj {
		return nil
	}
	// OPA turns the object into JSON first: non-string keys become their JSON text, sets
	// become arrays.
	q := url.Values{}
	for i, k := range a.a {
		ks := k.s
		if k.k != KStr {
			ks = string(AppendGoJSON(nil, k))
		}
		switch v := a.o[i]; v.k {
		case KStr:
			q.Set(ks, v.s)
		case KArr, KSet:
			vals := make([]string, 0, len(v.a))
			for _, x := range v.a {
				if x.k != KStr {
					return nil
				}
				vals = append(vals, x.s)
			}
			q[ks] = append(q[ks], vals...)
		default:
			return nil
		}
	}
	return ev.String(q.Encode())
}

//rego:builtin urlquery.decode_object
func (ev *Eval) BiURLQueryDecodeObject(s string) *V {
	vals, err := url.ParseQuery(s)
	if err != nil {
		return nil
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ev.Object(len(keys))
	for _, k := range keys {
		arr := ev.Array(len(vals[k]))
		for _, x := range vals[k] {
			arr.a = append(arr.a, ev.String(x))
		}
		out.a, out.o = append(out.a, ev.String(k)), append(out.o, arr)
	}
	return out
}

//rego:builtin json.marshal_with_options
func (ev *Eval) BiJSONMarshalWithOptions(a, opts *V) *V {
	if a == nil || opts.Kind() != KObj || !goJSONNumbersValid(a) {
		return nil
	}
	prefix, indent := "", "\t"
	implicit, explicit, pretty := false, false, false
	for i, k := range opts.a {
		v := opts.o[i]
		if k.k != KStr {
			return nil
		}
		switch k.s {
		case "prefix", "indent":
			if v.k != KStr {
				return nil
			}
			if k.s == "prefix" {
				prefix = v.s
			} else {
				indent = v.s
			}
			implicit = true
		case "pretty":
			if v.k != KBool {
				return nil
			}
			explicit, pretty = true, v.n != 0
		default:
			return nil
		}
	}
	if !explicit {
		pretty = implicit
	}
	ev.scr = AppendGoJSON(ev.scr[:0], a)
	if !pretty {
		return ev.stringOf(ev.scr)
	}
	// as json.MarshalIndent writes it, the first line prefixed too
	var b bytes.Buffer
	b.WriteString(prefix)
	if err := json.Indent(&b, ev.scr, prefix, indent); err != nil {
		return nil
	}
	return ev.stringOf(b.Bytes())
}

// jwtPart base64url-decodes a part of a JWT (padding optional).
func (ev *Eval) jwtPart(s string) (*V, bool) {
	v := ev.BiBase64URLDecode(s)
	return v, v != nil
}

//rego:builtin io.jwt.decode
func (ev *Eval) BiJWTDecode(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return nil
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return nil
	}
	h, ok := ev.jwtPart(parts[0])
	if !ok {
		return nil
	}
	header := ev.BiJSONUnmarshal(h.s)
	if header.Kind() != KObj || GetStr(header, "enc") != nil { // a JWE is not supported
		return nil
	}
	p, ok := ev.jwtPart(parts[1])
	if !ok {
		return nil
	}
	if cty := GetStr(header, "cty"); cty != nil {
		if cty.k != KStr {
			return nil
		}
		if cty.s == "JWT" { // a nested token, maybe quoted
			return ev.BiJWTDecode(ev.String(strings.Trim(p.s, `"'`)))
		}
	}
	payload := ev.BiJSONUnmarshal(p.s)
	if payload.Kind() != KObj {
		return nil
	}
	sig, ok := ev.jwtPart(parts[2])
	if !ok {
		return nil
	}
	out := ev.Array(3)
	out.a = append(out.a, header, payload, ev.String(hex.EncodeToString([]byte(sig.s))))
	return out
}

//rego:builtin uri.parse
func (ev *Eval) BiURIParse(s string) *V {
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	out := ev.Object(7)
	put := func(k, v string) {
		if v != "" {
			ObjectInsert(out, ev.String(k), ev.String(v))
		}
	}
	put("scheme", u.Scheme)
	put("hostname", u.Hostname())
	put("port", u.Port())
	put("path", u.Path)
	if u.Path != "" {
		put("raw_path", cmp.Or(u.RawPath, u.Path))
	}
	put("raw_query", u.RawQuery)
	put("fragment", u.Fragment)
	return out
}

//rego:builtin uri.is_valid
func (ev *Eval) BiURIIsValid(a *V) *V {
	s, ok := Str(a)
	if !ok || s == "" {
		return False
	}
	_, err := url.Parse(s)
	return Bool(err == nil)
}
