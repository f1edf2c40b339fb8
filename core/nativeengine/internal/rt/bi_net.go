package rt

import (
	"math/big"
	"net"
	"slices"
)

//rego:builtin net.cidr_expand
func (ev *Eval) BiCIDRExpand(a *V) *V {
	s, ok := Str(a)
	if !ok {
		return nil
	}
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		return nil
	}
	out := ev.Set(0)
	for ip := ip.Mask(n.Mask); n.Contains(ip); {
		if len(out.a)&1023 == 1023 {
			ev.Check()
		}
		out.a = append(out.a, ev.String(ip.String()))
		if !nextIP(ip) { // past the last address of the space
			break
		}
	}
	slices.SortFunc(out.a, Compare) // addresses in text order, as a set holds them
	return out
}

// nextIP increments ip in place; false when it wrapped around to zero.
func nextIP(ip net.IP) bool {
	for j := len(ip) - 1; j >= 0; j-- {
		if ip[j]++; ip[j] != 0 {
			return true
		}
	}
	return false
}

// cidrMatchTerms lists the networks of an operand of net.cidr_contains_matches with the
// key each is reported by: a string (itself), an array's elements (their index), a set's
// members (themselves), an object's values (their key); an element that is an array
// stands for its first element. ok is false for an element of another type.
func cidrMatchTerms(v *V) (cidrs, keys []*V, ok bool) {
	add := func(x, key *V) bool {
		switch x.k {
		case KStr:
		case KArr:
			if len(x.a) == 0 {
				return false
			}
			x = x.a[0]
		default:
			return false
		}
		cidrs, keys = append(cidrs, x), append(keys, key)
		return true
	}
	switch v.Kind() {
	case KStr:
		return []*V{v}, []*V{v}, true
	case KArr:
		for i, x := range v.a {
			if !add(x, IntConst(int64(i))) {
				return nil, nil, false
			}
		}
	case KSet:
		for _, x := range v.a {
			if !add(x, x) {
				return nil, nil, false
			}
		}
	case KObj:
		for i, x := range v.o {
			if !add(x, v.a[i]) {
				return nil, nil, false
			}
		}
	}
	return cidrs, keys, true
}

//rego:builtin net.cidr_contains_matches
func (ev *Eval) BiCIDRContainsMatches(a, b *V) *V {
	if a == nil || b == nil {
		return nil
	}
	// As OPA iterates: the second operand is read for each network of the first, so it
	// is not read when the first has none.
	c1, k1, ok := cidrMatchTerms(a)
	if !ok {
		return nil
	}
	out := ev.Set(0)
	if len(c1) == 0 {
		return out
	}
	c2, k2, ok := cidrMatchTerms(b)
	if !ok {
		return nil
	}
	for i, x := range c1 {
		for j, y := range c2 {
			r := ev.BiCIDRContains(x, y)
			if r == nil {
				return nil // an operand that is not a network: an error in OPA
			}
			if IsTrue(r) {
				pair := ev.Array(2)
				pair.a = append(pair.a, k1[i], k2[j])
				SetAdd(out, pair)
			}
		}
	}
	return out
}

// A cidrRange is the addresses of a network in one space of 128 bits, IPv4 addresses
// mapped (::ffff:a.b.c.d), as OPA merges them.
type cidrRange struct {
	first, last *big.Int
	v4          bool
	orig        string // the network as given, when no other range merged into it
}

var v4Mapped = new(big.Int).Lsh(big.NewInt(0xffff), 32)

// netOf is a network of net.cidr_merge: a CIDR, or an IPv4 address (with its classful
// default mask, as OPA reads it); an IPv6 address without a prefix length is an error.
func netOf(x *V) (*net.IPNet, bool) {
	s, ok := Str(x)
	if !ok {
		return nil, false
	}
	if ip := net.ParseIP(s); ip != nil {
		if ip.To4() == nil {
			return nil, false
		}
		return &net.IPNet{IP: ip, Mask: ip.DefaultMask()}, true
	}
	_, n, err := net.ParseCIDR(s)
	return n, err == nil
}

func rangeOf(n *net.IPNet) cidrRange {
	ones, bits := n.Mask.Size()
	ip := n.IP.Mask(n.Mask)
	r := cidrRange{v4: ip.To4() != nil, orig: n.String()}
	if r.v4 {
		ip = ip.To4()
	}
	first := new(big.Int).SetBytes(ip)
	if r.v4 {
		first.Or(first, v4Mapped)
	}
	size := new(big.Int).Lsh(big.NewInt(1), uint(bits-ones))
	r.first, r.last = first, new(big.Int).Sub(new(big.Int).Add(first, size), big.NewInt(1))
	return r
}

// cidrsOf splits a range into the fewest networks that cover it exactly.
func cidrsOf(r cidrRange) []string {
	var out []string
	bits := 128
	base := new(big.Int)
	if r.v4 {
		bits, base = 32, v4Mapped
	}
	first := new(big.Int).Set(r.first)
	one := big.NewInt(1)
	for first.Cmp(r.last) <= 0 {
		// the largest block aligned at first that ends within the range
		size := bits
		for size > 0 {
			block := new(big.Int).Lsh(one, uint(bits-size+1))
			if new(big.Int).Mod(new(big.Int).Sub(first, base), block).Sign() != 0 {
				break
			}
			end := new(big.Int).Sub(new(big.Int).Add(first, block), one)
			if end.Cmp(r.last) > 0 {
				break
			}
			size--
		}
		ip := make(net.IP, 16)
		first.FillBytes(ip)
		if r.v4 {
			ip = ip[12:]
		}
		out = append(out, (&net.IPNet{IP: ip, Mask: net.CIDRMask(size, bits)}).String())
		first.Add(first, new(big.Int).Lsh(one, uint(bits-size)))
	}
	return out
}

//rego:builtin net.cidr_merge
func (ev *Eval) BiCIDRMerge(a *V) *V {
	switch a.Kind() {
	case KArr, KSet:
	default:
		return nil
	}
	rs := make([]cidrRange, 0, len(a.a))
	for _, x := range a.a {
		n, ok := netOf(x)
		if !ok {
			return nil
		}
		rs = append(rs, rangeOf(n))
	}
	// By last address, then first; from the end, a range merges into the one before it
	// when it starts at most one address after that one ends.
	slices.SortFunc(rs, func(x, y cidrRange) int {
		if c := x.last.Cmp(y.last); c != 0 {
			return c
		}
		return x.first.Cmp(y.first)
	})
	for i := len(rs) - 1; i > 0; i-- {
		prev := new(big.Int).Sub(rs[i].first, big.NewInt(1))
		if prev.Cmp(rs[i-1].last) <= 0 {
			first := rs[i].first
			if rs[i-1].first.Cmp(first) < 0 {
				first = rs[i-1].first
			}
			rs[i-1] = cidrRange{first: first, last: rs[i].last, v4: rs[i].v4}
			rs = slices.Delete(rs, i, i+1)
		}
	}
	out := ev.Set(len(rs))
	for _, r := range rs {
		if r.orig != "" {
			SetAdd(out, ev.String(r.orig))
			continue
		}
		for _, c := range cidrsOf(r) {
			SetAdd(out, ev.String(c))
		}
	}
	return out
}
