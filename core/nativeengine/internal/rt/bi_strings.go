package rt

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

//rego:builtin concat
func (ev *Eval) BiConcat(j string, coll *V) *V {
	xs, ok := ev.elems(coll)
	if !ok {
		return nil
	}
	switch len(xs) {
	case 0:
		return ev.String("")
	case 1:
		if xs[0].k == KStr {
			return xs[0]
		}
		return nil
	}
	n := len(j) * (len(xs) - 1)
	for _, x := range xs {
		if x.k != KStr {
			return nil
		}
		n += len(x.s)
	}
	b := ev.textBytes(n)[:0]
	for i, x := range xs {
		if i > 0 {
			b = append(b, j...)
		}
		b = append(b, x.s...)
	}
	return ev.String(unsafe.String(unsafe.SliceData(b), len(b)))
}

func strs2(a, b *V) (string, string, bool) {
	x, ok1 := Str(a)
	y, ok2 := Str(b)
	return x, y, ok1 && ok2
}

//rego:builtin contains
func (ev *Eval) BiContains(a, b string) *V { return Bool(strings.Contains(a, b)) }

//rego:builtin startswith
func (ev *Eval) BiStartsWith(a, b string) *V { return Bool(strings.HasPrefix(a, b)) }

//rego:builtin endswith
func (ev *Eval) BiEndsWith(a, b string) *V { return Bool(strings.HasSuffix(a, b)) }

//rego:builtin strings.count
func (ev *Eval) BiStringsCount(x, y string) *V {
	return ev.Int(int64(strings.Count(x, y)))
}

// keep returns a when s is its string, else a new string.
func (ev *Eval) keep(a *V, s string) *V {
	if s == a.s {
		return a
	}
	return ev.String(s)
}

//rego:builtin lower
func (ev *Eval) BiLower(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return nil
	}
	return ev.keep(a, strings.ToLower(s))
}

//rego:builtin upper
func (ev *Eval) BiUpper(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return nil
	}
	return ev.keep(a, strings.ToUpper(s))
}

func (ev *Eval) strArray(parts []string) *V {
	out := ev.Array(len(parts))
	for _, p := range parts {
		out.a = append(out.a, ev.String(p))
	}
	return out
}

//rego:builtin split
func (ev *Eval) BiSplit(a, b *V) *V {
	text, delim, ok := strs2(a, b)
	if !ok {
		return nil
	}
	if !strings.Contains(text, delim) {
		out := ev.Array(1)
		out.a = append(out.a, a)
		return out
	}
	if delim == "" {
		return ev.strArray(strings.Split(text, delim))
	}
	// strings.Split without its []string: the parts are substrings of text, which lives
	// as long as the evaluation.
	out := ev.Array(strings.Count(text, delim) + 1)
	for {
		i := strings.Index(text, delim)
		if i < 0 {
			break
		}
		out.a = append(out.a, ev.String(text[:i]))
		text = text[i+len(delim):]
	}
	out.a = append(out.a, ev.String(text))
	return out
}

//rego:builtin strings.split_n
func (ev *Eval) BiSplitN(a, b, c *V) *V {
	text, delim, ok := strs2(a, b)
	n, ok2 := intOperand(c)
	if !ok || !ok2 {
		return nil
	}
	if n >= 0 {
		limit := n + 1
		if limit < 0 {
			limit = -1
		}
		parts := strings.SplitN(text, delim, limit)
		return ev.strArray(parts[:min(n, len(parts))])
	}
	parts := strings.Split(text, delim)
	return ev.strArray(parts[max(len(parts)+n, 0):])
}

//rego:builtin replace
func (ev *Eval) BiReplace(a *V, old, nw string) *V {
	s, ok := Str(a)
	if !ok {
		return nil
	}
	var r string
	if old != "" {
		r = strings.ReplaceAll(s, old, nw)
	} else {
		r = strings.NewReplacer(old, nw).Replace(s)
	}
	return ev.keep(a, r)
}

//rego:builtin strings.replace_n
func (ev *Eval) BiReplaceN(patterns, a *V) *V {
	if patterns.Kind() != KObj {
		return nil
	}
	s, ok := Str(a)
	if !ok {
		return nil
	}
	pairs := make([]string, 0, 2*len(patterns.a))
	for i, k := range patterns.a {
		if k.k != KStr || patterns.o[i].k != KStr {
			return nil
		}
		pairs = append(pairs, k.s, patterns.o[i].s)
	}
	return ev.String(strings.NewReplacer(pairs...).Replace(s))
}

func (ev *Eval) trim(a, b *V, f func(string, string) string) *V {
	s, c, ok := strs2(a, b)
	if !ok {
		return nil
	}
	return ev.keep(a, f(s, c))
}

//rego:builtin trim
func (ev *Eval) BiTrim(a, b *V) *V { return ev.trim(a, b, strings.Trim) }

//rego:builtin trim_left
func (ev *Eval) BiTrimLeft(a, b *V) *V { return ev.trim(a, b, strings.TrimLeft) }

//rego:builtin trim_right
func (ev *Eval) BiTrimRight(a, b *V) *V { return ev.trim(a, b, strings.TrimRight) }

//rego:builtin trim_prefix
func (ev *Eval) BiTrimPrefix(a, b *V) *V { return ev.trim(a, b, strings.TrimPrefix) }

//rego:builtin trim_suffix
func (ev *Eval) BiTrimSuffix(a, b *V) *V { return ev.trim(a, b, strings.TrimSuffix) }

//rego:builtin trim_space
func (ev *Eval) BiTrimSpace(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return nil
	}
	return ev.keep(a, strings.TrimSpace(s))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

//rego:builtin indexof
func (ev *Eval) BiIndexOf(a, b *V) *V {
	base, search, ok := strs2(a, b)
	if !ok || search == "" {
		return nil
	}
	if isASCII(base) && isASCII(search) {
		return ev.Int(int64(strings.Index(base, search)))
	}
	br, sr := []rune(base), []rune(search)
	for i := range br {
		if len(br) < i+len(sr) {
			break
		}
		if slices.Equal(br[i:i+len(sr)], sr) {
			return ev.Int(int64(i))
		}
	}
	return ev.Int(-1)
}

//rego:builtin indexof_n
func (ev *Eval) BiIndexOfN(a, b *V) *V {
	base, search, ok := strs2(a, b)
	if !ok || search == "" {
		return nil
	}
	out := ev.Array(0)
	if isASCII(base) && isASCII(search) {
		for off := 0; ; {
			i := strings.Index(base[off:], search)
			if i < 0 {
				break
			}
			out.a = append(out.a, ev.Int(int64(off+i)))
			off += i + 1
		}
		return out
	}
	br, sr := []rune(base), []rune(search)
	for i := range br {
		if len(br) < i+len(sr) {
			break
		}
		if slices.Equal(br[i:i+len(sr)], sr) {
			out.a = append(out.a, ev.Int(int64(i)))
		}
	}
	return out
}

//rego:builtin substring
func (ev *Eval) BiSubstring(a, b, c *V) *V {
	base, ok := Str(a)
	start, ok2 := intOperand(b)
	length, ok3 := intOperand(c)
	if !ok || !ok2 || !ok3 || start < 0 {
		return nil
	}
	if base == "" {
		return ev.String("")
	}
	if isASCII(base) {
		if start >= len(base) {
			return ev.String("")
		}
		if length < 0 {
			return ev.String(base[start:])
		}
		if start == 0 && length >= len(base) {
			return a
		}
		return ev.String(base[start : start+min(length, len(base)-start)])
	}
	if start == 0 && length >= utf8.RuneCountInString(base) {
		return a
	}
	runes := []rune(base)
	if start >= len(runes) {
		return ev.String("")
	}
	if length < 0 {
		return ev.String(string(runes[start:]))
	}
	return ev.String(string(runes[start : start+min(length, len(runes)-start)]))
}

//rego:builtin strings.reverse
func (ev *Eval) BiStringsReverse(s string) *V {
	buf := make([]byte, len(s))
	for start := 0; start < len(s); {
		r, n := utf8.DecodeRuneInString(s[start:])
		start += n
		if r == utf8.RuneError && n == 1 {
			buf[len(s)-start] = s[start-1]
			continue
		}
		utf8.EncodeRune(buf[len(s)-start:], r)
	}
	return ev.String(string(buf))
}

// strList is builtins.StringSliceOperand: the strings of an array or set.
func strList(a *V) ([]string, bool) {
	switch a.Kind() {
	case KArr, KSet:
	default:
		return nil, false
	}
	out := make([]string, 0, len(a.a))
	for _, x := range a.a {
		if x.k != KStr {
			return nil, false
		}
		out = append(out, x.s)
	}
	return out, true
}

// strOrList is the operand of strings.any_prefix_match and any_suffix_match: a string,
// or an array or set of strings.
func strOrList(v *V) ([]string, bool) {
	switch v.Kind() {
	case KStr:
		return []string{v.s}, true
	case KArr, KSet:
		return strList(v)
	}
	return nil, false
}

func (ev *Eval) anyAffix(a, b *V, match func(s, affix string) bool) *V {
	strs, ok1 := strOrList(a)
	bases, ok2 := strOrList(b)
	if !ok1 || !ok2 {
		return nil
	}
	for _, s := range strs {
		for _, base := range bases {
			if match(s, base) {
				return True
			}
		}
	}
	return False
}

//rego:builtin strings.any_prefix_match
func (ev *Eval) BiAnyPrefixMatch(a, b *V) *V { return ev.anyAffix(a, b, strings.HasPrefix) }

//rego:builtin strings.any_suffix_match
func (ev *Eval) BiAnySuffixMatch(a, b *V) *V { return ev.anyAffix(a, b, strings.HasSuffix) }

//rego:builtin sprintf
func (ev *Eval) BiSprintf(f, args *V) *V {
	format, ok := Str(f)
	if !ok || args.Kind() != KArr {
		return nil
	}
	xs := make([]any, len(args.a))
	for i, t := range args.a {
		switch t.k {
		case KNum:
			ns := numText(t)
			if strings.ContainsAny(ns, ".eE") {
				if f, err := strconv.ParseFloat(ns, 64); err == nil {
					xs[i] = f
				} else {
					xs[i] = ns
				}
			} else if x, ok := atoi64(ns); ok {
				xs[i] = x
			} else if b, ok := new(big.Int).SetString(ns, 10); ok {
				xs[i] = b
			} else {
				xs[i] = ns
			}
		case KStr:
			xs[i] = t.s
		default:
			xs[i] = string(AppendRego(nil, t))
		}
	}
	return ev.String(fmt.Sprintf(format, xs...))
}

//rego:builtin internal.template_string
func (ev *Eval) BiTemplateString(parts *V) *V {
	if parts.Kind() != KArr {
		return nil
	}
	var b []byte
	for _, p := range parts.a {
		switch p.k {
		case KStr:
			b = append(b, p.s...)
		case KNum, KBool, KNull:
			b = AppendRego(b, p)
		case KSet:
			switch len(p.a) {
			case 0:
				b = append(b, "<undefined>"...)
			case 1:
				if x := p.a[0]; x.k == KStr {
					b = append(b, x.s...)
				} else {
					b = AppendRego(b, x)
				}
			default:
				Fail("", "template-strings must not produce multiple outputs") // a conflict in OPA too
			}
		default:
			failWith(InternalError, "illegal argument type: "+typeNames[p.k])
		}
	}
	return ev.String(string(b))
}
