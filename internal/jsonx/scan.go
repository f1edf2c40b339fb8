package jsonx

// The pieces of JSON's grammar every reader of this module scans the same way (the strict
// reader, core.CheckQuery, the native engine's parser, the host's fact encoder), written
// once for both strings and byte slices.

// SkipSpace returns the index of the first byte at or after i that is not JSON whitespace.
func SkipSpace[T ~string | ~[]byte](s T, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Digits returns the index of the first byte at or after i that is not a decimal digit.
func Digits[T ~string | ~[]byte](s T, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// ScanNumber scans the number of JSON's grammar (RFC 8259 §6) that starts at i. It returns
// the index after it and true, or the index of the byte where the grammar failed and false.
func ScanNumber[T ~string | ~[]byte](s T, i int) (int, bool) {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && isDigit(s[i]):
		i = Digits(s, i)
	default:
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return i, false
		}
		i = Digits(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return i, false
		}
		i = Digits(s, i)
	}
	return i, true
}

// IsNumber reports whether s is exactly one number in JSON's grammar (what json.Marshal
// accepts as a json.Number).
func IsNumber(s string) bool {
	end, ok := ScanNumber(s, 0)
	return ok && end == len(s)
}

// Hex4 decodes the four hex digits at the start of s (the digits of a \u escape).
func Hex4[T ~string | ~[]byte](s T) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
