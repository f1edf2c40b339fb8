package nodiff

import (
	"encoding/json"
	"strconv"
	"strings"
)

// How the simulated host reads stored bytes (strict JSON, {"$number"} values, secret
// descriptions, paths in ledgers) is internal/jsonx (stored.go), the Go host's own. What is left
// here: a need's path as member names, and the policy's store.ms mirrored.

// keys is a ledger.read path as member names, up to an element that is not a string (no
// policy asks for one: then ok is false, and nothing is at the path).
func keys(p []any) (names []string, ok bool) {
	names = make([]string, 0, len(p))
	for _, k := range p {
		s, isString := k.(string)
		if !isString {
			return names, false
		}
		names = append(names, s)
	}
	return names, true
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
