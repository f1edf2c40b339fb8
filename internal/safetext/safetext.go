// Package safetext makes strings that grantwire does not control safe to print on a
// terminal: an account e-mail from a provider's userinfo, ids read from a ledger or the
// agents file, names from a catalog file, anything from a decision log. Printed raw, such
// a string could move the cursor, retitle the window or recolour the screen (ESC and other
// control characters), reorder what follows it (bidi controls), hide characters
// (zero-width format characters) or start a new line that looks like grantwire's own
// output ("fix: …").
//
// [Escape] is the one function that decides; the CLI prints every untrusted string through
// it ([Fprintf] escapes every string argument) and passes its JSON through [JSON]. It
// imports only the standard library.
package safetext

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unsafe reports the runes Escape rewrites: C0 controls (newline and tab included), DEL,
// C1 controls, Unicode format characters (category Cf: bidi controls such as U+202E,
// zero-width characters, the BOM, tag characters) and the line and paragraph separators.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0x2028, r == 0x2029:
		return true
	case r < 0xa0:
		return false
	}
	return unicode.Is(unicode.Cf, r)
}

// Escape returns s unchanged when every character of it is safe to print, else a copy in
// which each unsafe character is written as a Go escape: \n, \r, \t, \x1b, \u202e,
// \U000e0001, and each byte that is not UTF-8 as \xff. Visible characters,
// spaces and backslashes are kept, so most strings print as they are; the escapes are
// for display and are not meant to be reversed.
func Escape(s string) string {
	i := unsafeAt(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeAt returns the index of the first byte of s that Escape would rewrite, or -1.
func unsafeAt(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafe(r) {
			return i
		}
		i += size
	}
	return -1
}

// Args returns a copy of args in which every string (and string-kinded value), []string,
// error and fmt.Stringer is replaced by its escaped text; other values are kept.
func Args(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = Escape(v)
		case []string:
			esc := make([]string, len(v))
			for j, s := range v {
				esc[j] = Escape(s)
			}
			out[i] = esc
		case error:
			out[i] = Escape(v.Error())
		case fmt.Stringer:
			out[i] = Escape(v.String())
		default:
			if rv := reflect.ValueOf(a); rv.IsValid() && rv.Kind() == reflect.String {
				out[i] = Escape(rv.String())
			} else {
				out[i] = a
			}
		}
	}
	return out
}

// Fprintf is fmt.Fprintf with every string-like argument escaped (the format is trusted:
// its own newlines and tabs are kept).
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, Args(args)...)
}

// Sprintf is fmt.Sprintf with every string-like argument escaped.
func Sprintf(format string, args ...any) string {
	return fmt.Sprintf(format, Args(args)...)
}

// JSON rewrites, inside the strings of a JSON text as encoding/json writes it, every
// character Escape would rewrite as a JSON \u escape (a surrogate pair above U+FFFF). The
// result is the same JSON value, byte for byte ASCII where it matters: a JSON parser reads
// back exactly the original strings, and a terminal shows no bidi reordering or control
// sequence. encoding/json already escapes C0 controls and U+2028/U+2029; this adds C1
// controls and format characters. Invalid UTF-8 is left to the caller (encoding/json
// replaces it with U+FFFD).
func JSON(doc []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(doc); {
		if doc[i] < 0x80 {
			i++
			continue
		}
		r, size := utf8.DecodeRune(doc[i:])
		if r == utf8.RuneError && size == 1 || !unsafe(r) {
			i += size
			continue
		}
		out = append(out, doc[last:i]...)
		if r > 0xffff {
			r -= 0x10000
			out = fmt.Appendf(out, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
		last = i
	}
	if out == nil {
		return doc
	}
	return append(out, doc[last:]...)
}
