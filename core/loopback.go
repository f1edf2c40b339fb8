package core

import (
	"net/netip"
	"strings"
)

// Loopback is the policy's loopback rule, as its manifest publishes it (transport.loopback):
// the IP networks of a loopback literal, and the names that mean this machine with the
// address each is dialed at (RFC 6761 §6.3: localhost is never looked up through a
// resolver). It is the one place Go reads the rule: the native shell's dialer, the remote
// MCP client's and serve's bind check ask it, and none of them writes it again.
type Loopback struct {
	IPv4  string            `json:"ipv4"`
	IPv6  string            `json:"ipv6"`
	Names map[string]string `json:"names"`
}

// IsHost reports whether host (a name, an IP literal, an IPv6 literal with or without
// brackets) is this machine under the rule. An IPv4-mapped IPv6 address is not, as the
// policy's transport rule refuses it.
func (l Loopback) IsHost(host string) bool {
	if _, ok := l.name(host); ok {
		return true
	}
	addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil || addr.Zone() != "" {
		return false
	}
	for _, n := range []string{l.IPv4, l.IPv6} {
		if p, err := netip.ParsePrefix(n); err == nil && p.Contains(addr) {
			return true
		}
	}
	return false
}

// Addr is the address to dial for "host:port": a loopback name's address (localhost:8080
// → 127.0.0.1:8080), any other address unchanged.
func (l Loopback) Addr(hostport string) string {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return hostport
	}
	if ip, ok := l.name(hostport[:i]); ok {
		if strings.Contains(ip, ":") {
			ip = "[" + ip + "]"
		}
		return ip + hostport[i:]
	}
	return hostport
}

// name is the address a loopback name is dialed at (names compare without case, as DNS).
func (l Loopback) name(host string) (string, bool) {
	for n, ip := range l.Names {
		if strings.EqualFold(n, host) {
			return ip, true
		}
	}
	return "", false
}
