package rt

import (
	"strconv"
	"strings"
)

// semver.is_valid and semver.compare: Semantic Versioning 2.0.0 as OPA parses it (a
// leading "v" allowed; major, minor and patch without leading zeros, fitting an int64;
// dot-separated identifiers of [0-9A-Za-z-] for the pre-release and the build metadata,
// no numeric pre-release identifier with a leading zero).

type semver struct {
	core [3]int64
	pre  []string // the pre-release identifiers (none: a release)
}

func semverIdents(s string) ([]string, bool) {
	ids := strings.Split(s, ".")
	for _, id := range ids {
		if id == "" {
			return nil, false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return nil, false
			}
		}
	}
	return ids, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func parseSemver(s string) (semver, bool) {
	var v semver
	s = strings.TrimPrefix(s, "v")
	s, meta, hasMeta := strings.Cut(s, "+")
	if hasMeta {
		if _, ok := semverIdents(meta); !ok {
			return v, false
		}
	}
	s, pre, hasPre := strings.Cut(s, "-")
	if hasPre {
		ids, ok := semverIdents(pre)
		if !ok {
			return v, false
		}
		for _, id := range ids {
			if len(id) > 1 && id[0] == '0' && allDigits(id) {
				return v, false
			}
		}
		v.pre = ids
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		if p == "" || p[0] == '+' || p[0] == '-' || (len(p) > 1 && p[0] == '0') {
			return v, false
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return v, false
		}
		v.core[i] = n
	}
	return v, true
}

// compareSemver orders versions by precedence: the core numbers, then a release above its
// pre-releases, then the pre-release identifiers in turn (numbers below names, numbers
// numerically, names in ASCII order; the longer list wins a tie).
func compareSemver(a, b semver) int {
	for i := range a.core {
		if c := cmpInt(a.core[i], b.core[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		x, y := a.pre[i], b.pre[i]
		xn, yn := allDigits(x), allDigits(y)
		switch {
		case xn && !yn:
			return -1
		case !xn && yn:
			return 1
		case xn && yn:
			xi, _ := strconv.Atoi(x)
			yi, _ := strconv.Atoi(y)
			if c := cmpInt(int64(xi), int64(yi)); c != 0 {
				return c
			}
		default:
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		}
	}
	return cmpInt(int64(len(a.pre)), int64(len(b.pre)))
}

//rego:builtin semver.is_valid
func (ev *Eval) BiSemverIsValid(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return False
	}
	_, ok = parseSemver(s)
	return Bool(ok)
}

//rego:builtin semver.compare
func (ev *Eval) BiSemverCompare(a, b *V) *V {
	x, ok1 := Str(a)
	y, ok2 := Str(b)
	if !ok1 || !ok2 {
		return nil
	}
	va, ok1 := parseSemver(x)
	vb, ok2 := parseSemver(y)
	if !ok1 || !ok2 {
		return nil
	}
	return ev.Int(int64(compareSemver(va, vb)))
}
