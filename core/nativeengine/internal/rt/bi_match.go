package rt

import (
	"math/big"
	"net"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/gobwas/glob"
	gintersect "github.com/yashtewari/glob-intersection"
)

// Compiled patterns are kept, a bounded number of them, as topdown keeps them.
type patternCache[T any] struct {
	mu sync.RWMutex
	m  map[string]T
}

const patternCacheSize = 100

func (c *patternCache[T]) get(key string, compile func() (T, error)) (T, error) {
	c.mu.RLock()
	v, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	// The key (and the pattern compiled) may point into a query's bytes, which the next
	// evaluation overwrites: the cache keeps copies.
	key = strings.Clone(key)
	v, err := compile()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]T{}
	}
	for k := range c.m {
		if len(c.m) < patternCacheSize {
			break
		}
		delete(c.m, k)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v, nil
}

var (
	regexps patternCache[*regexp.Regexp]
	globs   patternCache[*glob.Pattern]
)

func compileRegexp(pat string) (*regexp.Regexp, error) {
	return regexps.get(pat, func() (*regexp.Regexp, error) { return regexp.Compile(strings.Clone(pat)) })
}

//rego:builtin regex.is_valid
func (ev *Eval) BiRegexIsValid(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return False
	}
	_, err := syntax.Parse(s, syntax.Perl)
	return Bool(err == nil)
}

//rego:builtin regex.match
func (ev *Eval) BiRegexMatch(pat, s string) *V {
	return matches(pat, s)
}

// matches is whether s matches the regular expression pat (undefined when it is not one).
func matches(pat, s string) *V {
	re, err := compileRegexp(pat)
	if err != nil {
		return nil
	}
	return Bool(re.MatchString(s))
}

//rego:builtin re_match
func (ev *Eval) BiReMatch(a, b string) *V { return ev.BiRegexMatch(a, b) }

//rego:builtin regex.split
func (ev *Eval) BiRegexSplit(pat, s string) *V {
	re, err := compileRegexp(pat)
	if err != nil {
		return nil
	}
	return ev.strArray(re.Split(s, -1))
}

// findArgs are the operands of the regex.find functions: a pattern, a string, a count.
func findArgs(a, b, c *V) (*regexp.Regexp, string, int, bool) {
	pat, s, ok := strs2(a, b)
	n, ok2 := intOperand(c)
	if !ok || !ok2 {
		return nil, "", 0, false
	}
	re, err := compileRegexp(pat)
	return re, s, n, err == nil
}

//rego:builtin regex.find_n
func (ev *Eval) BiRegexFindN(a, b, c *V) *V {
	re, s, n, ok := findArgs(a, b, c)
	if !ok {
		return nil
	}
	return ev.strArray(re.FindAllString(s, n))
}

//rego:builtin regex.find_all_string_submatch_n
func (ev *Eval) BiRegexFindAllStringSubmatchN(a, b, c *V) *V {
	re, s, n, ok := findArgs(a, b, c)
	if !ok {
		return nil
	}
	ms := re.FindAllStringSubmatch(s, n)
	out := ev.Array(len(ms))
	for _, m := range ms {
		out.a = append(out.a, ev.strArray(m))
	}
	return out
}

//rego:builtin regex.replace
func (ev *Eval) BiRegexReplace(a *V, pat, val string) *V {
	base, ok := Str(a)
	if !ok {
		return nil
	}
	re, err := compileRegexp(pat)
	if err != nil {
		return nil
	}
	return ev.keep(a, re.ReplaceAllString(base, val))
}

//rego:builtin glob.match
func (ev *Eval) BiGlobMatch(a, b, c *V) *V {
	pat, ok := Str(a)
	if !ok || b == nil {
		return nil
	}
	var delims []rune
	switch b.k {
	case KNull:
		delims = []rune{}
	case KArr:
		for _, d := range b.a {
			if d.k != KStr {
				return nil
			}
			rs := []rune(d.s)
			if len(rs) != 1 {
				return nil
			}
			delims = append(delims, rs[0])
		}
		if len(delims) == 0 {
			delims = []rune{'.'}
		}
	default:
		return nil
	}
	s, ok := Str(c)
	if !ok {
		return nil
	}
	key := pat + "-" + string(delims)
	g, err := globs.get(key, func() (*glob.Pattern, error) { return glob.Compile(strings.Clone(pat), delims...) })
	if err != nil {
		return nil
	}
	return Bool(g.Match(s))
}

func parseCIDR(a *V) (*net.IPNet, bool) {
	s, ok := Str(a)
	if !ok {
		return nil, false
	}
	_, n, err := net.ParseCIDR(s)
	return n, err == nil
}

//rego:builtin net.cidr_intersects
func (ev *Eval) BiCIDRIntersects(a, b string) *V {
	_, x, err1 := net.ParseCIDR(a)
	_, y, err2 := net.ParseCIDR(b)
	if err1 != nil || err2 != nil {
		return nil
	}
	return Bool(x.Contains(y.IP) || y.Contains(x.IP))
}

//rego:builtin net.cidr_is_valid
func (ev *Eval) BiCIDRIsValid(a *V) *V {
	_, ok := parseCIDR(a)
	return Bool(ok)
}

//rego:builtin net.cidr_contains
func (ev *Eval) BiCIDRContains(a, b *V) *V {
	x, ok := parseCIDR(a)
	if !ok {
		return nil
	}
	s, ok := Str(b)
	if !ok {
		return nil
	}
	if ip := net.ParseIP(s); ip != nil {
		return Bool(x.Contains(ip))
	}
	y, ok := parseCIDR(b)
	if !ok {
		return nil
	}
	if plainIPv6(x) && plainIPv6(y) {
		xo, _ := x.Mask.Size()
		yo, _ := y.Mask.Size()
		return Bool(xo <= yo && x.IP.Equal(y.IP.Mask(x.Mask)))
	}
	if !x.Contains(y.IP) {
		return False
	}
	last, ok := lastIP(y)
	if !ok {
		return nil
	}
	return Bool(x.Contains(last))
}

//rego:builtin net.cidr_overlap
func (ev *Eval) BiCIDROverlap(a, b *V) *V { return ev.BiCIDRContains(a, b) }

func plainIPv6(n *net.IPNet) bool {
	return len(n.IP) == net.IPv6len && len(n.Mask) == net.IPv6len && n.IP.To4() == nil
}

func lastIP(n *net.IPNet) (net.IP, bool) {
	ones, bits := n.Mask.Size()
	if ones == 0 && bits == 0 {
		return nil, false
	}
	if ones == bits {
		return n.IP, true
	}
	first := new(big.Int).SetBytes(n.IP)
	last := new(big.Int).Lsh(big.NewInt(1), uint(bits-ones))
	last.Sub(last, big.NewInt(1))
	last.Or(last, first)
	b := last.Bytes()
	out := make([]byte, bits/8)
	for i := 1; i <= len(b); i++ {
		out[len(out)-i] = b[len(b)-i]
	}
	return out, true
}

// PathKey joins the path of a dynamic call ("", false when an element is not a string).
func PathKey(path ...*V) (string, bool) {
	var b strings.Builder
	for i, p := range path {
		if p == nil || p.k != KStr {
			return "", false
		}
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(p.s)
	}
	return b.String(), true
}

// DotStr is DotStmt with a string constant key.
func DotStr(src *V, key string) *V {
	if src == nil {
		return nil
	}
	switch src.k {
	case KObj:
		return GetStr(src, key)
	case KSet:
		for _, x := range src.a {
			if x.k == KStr && x.s == key {
				return x
			}
		}
	}
	return nil
}

//rego:builtin regex.template_match
func (ev *Eval) BiRegexTemplateMatch(pattern, match, start, end *V) *V {
	tpl, ok1 := Str(pattern)
	s, ok2 := Str(match)
	open, ok3 := Str(start)
	closing, ok4 := Str(end)
	if !ok1 || !ok2 || !ok3 || !ok4 || len(open) != 1 || len(closing) != 1 {
		return nil
	}
	gen, ok := regexTemplate(tpl, open[0], closing[0])
	if !ok {
		return nil
	}
	return matches(gen, s)
}

// regexTemplate turns a template into a regular expression: its text outside the
// delimiters matched literally, each delimited part (delimiters may nest) a group that
// must be a regular expression of its own; false when delimiters do not balance.
func regexTemplate(tpl string, open, closing byte) (string, bool) {
	var b strings.Builder
	b.WriteByte('^')
	level, from, lit := 0, 0, 0
	for i := 0; i < len(tpl); i++ {
		switch tpl[i] {
		case open:
			if level++; level == 1 {
				from = i
			}
		case closing:
			level--
			switch {
			case level < 0:
				return "", false
			case level == 0:
				inner := tpl[from+1 : i]
				if _, err := regexp.Compile("^" + inner + "$"); err != nil {
					return "", false
				}
				b.WriteString(regexp.QuoteMeta(tpl[lit:from]) + "(" + inner + ")")
				lit = i + 1
			}
		}
	}
	if level != 0 {
		return "", false
	}
	b.WriteString(regexp.QuoteMeta(tpl[lit:]) + "$")
	return b.String(), true
}

//rego:builtin regex.globs_match
func (ev *Eval) BiRegexGlobsMatch(x, y string) *V {
	ne, err := gintersect.NonEmpty(x, y)
	if err != nil {
		return nil
	}
	return Bool(ne)
}
