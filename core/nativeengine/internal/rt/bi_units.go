package rt

import (
	"math/big"
	"strings"
)

// units.parse and units.parse_bytes, as topdown parses quantities: a number (digits, '.',
// an exponent of at most six digits) then a unit; quotes removed, spaces refused.

// maxUnitExponentDigits bounds the exponent of a quantity ("1e999999" is refused).
const maxUnitExponentDigits = 6

// splitQuantity splits s into its number and its unit (either may be empty); ok is false
// when the number's exponent is too long.
func splitQuantity(s string) (num, unit string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c == '.', c == '+', c == '-':
			continue
		case c == 'e' || c == 'E':
			// an exponent when a digit or a sign follows, else the unit starts here
			if i+1 == len(s) || !(isDigit(s[i+1]) || s[i+1] == '+' || s[i+1] == '-') {
				return s[:i], s[i:], true
			}
			if s[i+1] == '+' || s[i+1] == '-' {
				i++
			}
			j := i + 1
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			if j-(i+1) > maxUnitExponentDigits {
				return "", "", false
			}
			continue
		}
		return s[:i], s[i:], true
	}
	return s, "", true
}

// Decimal and binary multiples.
var (
	siMultiples = map[byte]uint64{'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12, 'p': 1e15, 'e': 1e18}
	biMultiples = map[byte]uint64{'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30, 't': 1 << 40, 'p': 1 << 50, 'e': 1 << 60}
)

//rego:builtin units.parse_bytes
func (ev *Eval) BiUnitsParseBytes(raw string) *V {
	s := strings.ReplaceAll(strings.ToLower(raw), `"`, "")
	if strings.Contains(s, " ") {
		return nil
	}
	num, unit, ok := splitQuantity(s)
	if !ok || num == "" {
		return nil
	}
	// "", or k, kb, ki, kib… (bytes: an m is mega)
	mult := uint64(1)
	if unit != "" {
		m, known := siMultiples[unit[0]]
		switch rest := unit[1:]; {
		case !known:
			return nil
		case rest == "" || rest == "b":
		case rest == "i" || rest == "ib":
			m = biMultiples[unit[0]]
		default:
			return nil
		}
		mult = m
	}
	f, ok := new(big.Float).SetString(num)
	if !ok {
		return nil
	}
	total, _ := f.Mul(f, new(big.Float).SetUint64(mult)).Int(nil)
	return ev.fromBigInt(total)
}

//rego:builtin units.parse
func (ev *Eval) BiUnitsParse(raw string) *V {
	s := strings.ReplaceAll(raw, `"`, "")
	if strings.Contains(s, " ") {
		return nil
	}
	num, unit, ok := splitQuantity(s)
	if !ok || num == "" {
		return nil
	}
	// The first letter keeps its case (m is milli, M mega); the rest is lowered.
	if len(unit) > 1 {
		unit = unit[:1] + strings.ToLower(unit[1:])
	}
	mult := new(big.Rat)
	switch {
	case unit == "":
		mult.SetInt64(1)
	case unit == "m":
		mult.SetFrac64(1, 1000)
	case len(unit) == 1 && unit != "M" && siMultiples[lowerASCII(unit[0])] != 0:
		mult.SetUint64(siMultiples[lowerASCII(unit[0])])
	case unit == "M":
		mult.SetUint64(siMultiples['m'])
	case len(unit) == 2 && unit[1] == 'i' && biMultiples[lowerASCII(unit[0])] != 0:
		mult.SetUint64(biMultiples[lowerASCII(unit[0])])
	default:
		return nil
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil
	}
	r.Mul(r, mult)
	if r.IsInt() {
		return ev.numText(r.Num().String())
	}
	return ev.numText(r.FloatString(10))
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
