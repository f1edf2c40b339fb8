# METADATA
# title: Transport rule
# description: |
#   Which URLs grantwire sends a request to (or opens for the user): HTTPS only, plain HTTP
#   only to a loopback IP literal (127.0.0.0/8 or ::1, for local servers and tests), never
#   credentials in the URL, never an IPv4-mapped IPv6 or a link-local address, and only URLs
#   written plainly, so that every parser reads them alike: lowercase scheme, ASCII without
#   spaces, quotes, backslashes or "<>", no percent-encoding or ambiguous numbers in the
#   host. Hosts never follow redirects, so a URL checked here is the URL requested.
package grantwire.transport

import data.grantwire.scopes

# METADATA
# title: maximum URL length
# description: Longer URLs are refused.
max_length := 4096

# METADATA
# title: loopback
# description: |
#   What is this machine, for every rule and every host: the IP networks of a loopback
#   literal, and the names that mean it with the address a host dials for each (RFC 6761
#   §6.3: localhost is never looked up through a resolver). The manifest publishes it;
#   Go reads it through core.Loopback (the native shell's dialer, the remote MCP client,
#   serve's bind check), so that the rule is written here only.
loopback := {"ipv4": "127.0.0.0/8", "ipv6": "::1/128", "names": {"localhost": "127.0.0.1"}}

_bad := ["<", ">", "{", "}", "|", "^", "`", " "]

_scheme(u) := "https" if startswith(u, "https://")

else := "http" if startswith(u, "http://")

_rest(u) := substring(u, count(_scheme(u)) + 3, -1)

_authority(u) := split(split(split(_rest(u), "/")[0], "?")[0], "#")[0]

# The host of an authority (an IPv6 literal keeps its brackets).
_host(a) := concat("", [split(a, "]")[0], "]"]) if {
	startswith(a, "[")
	contains(a, "]")
} else := a if startswith(a, "[")

else := split(a, ":")[0]

_port(a) := p if {
	startswith(a, "[")
	p := trim_prefix(substring(a, count(_host(a)), -1), ":")
} else := p if {
	parts := split(a, ":")
	count(parts) == 2
	p := parts[1]
} else := "" if {
	not contains(a, ":")
} else := "invalid"

# 1 to 5 decimal digits without a leading zero, checked character by character (OPA's Wasm
# runtime reads "01" or "1e3" with to_number where its Go evaluator refuses or rewrites them).
_decimal(s) if {
	n := count(s)
	n > 0
	n <= 5
	every i in numbers.range(0, n - 1) {
		substring(s, i, 1) in {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	}
	_no_leading_zero(s)
}

_no_leading_zero("0")

_no_leading_zero(s) if not startswith(s, "0")

_port_ok("")

_port_ok(p) if {
	_decimal(p)
	to_number(p) >= 1
	to_number(p) <= 65535
}

# METADATA
# title: IPv4 literal
# description: Four decimal octets without leading zeros.
ipv4(h) if {
	parts := split(h, ".")
	count(parts) == 4
	every p in parts {
		_decimal(p)
		to_number(p) <= 255
	}
}

_ipv6(h) := inner if {
	startswith(h, "[")
	endswith(h, "]")
	inner := substring(h, 1, count(h) - 2)
	contains(inner, ":")
	not contains(inner, "%")
	_ip6(inner)
}

# An IPv6 address. OPA's Go evaluator reads an IPv4-mapped address (::ffff:a.b.c.d) as IPv4,
# which ::/0 does not contain; its Wasm runtime reads it as IPv6. Both agree that
# ::ffff:0:0/96 contains it.
_ip6(x) if net.cidr_contains("::/0", x)

_ip6(x) if net.cidr_contains("::ffff:0:0/96", x)

# Hosts made of digits, dots and "x" that are not plain IPv4 (127.1, 0x7f.1, 2130706433)
# mean different addresses to different parsers.
_numeric(h) if {
	not ipv4(h)
	regex.match(`^[0-9xX.]+$`, h)
}

# WHATWG: a host whose last label is a number (decimal or 0x hex) is parsed as IPv4.
_numeric(h) if {
	not ipv4(h)
	labels := split(trim_suffix(h, "."), ".")
	regex.match(`^([0-9]+|0[xX][0-9a-fA-F]*)$`, labels[count(labels) - 1])
}

_loopback(h) if {
	ipv4(h)
	net.cidr_contains(loopback.ipv4, h)
}

_loopback(h) if net.cidr_contains(loopback.ipv6, _ipv6(h))

_link_local(h) if {
	ipv4(h)
	net.cidr_contains("169.254.0.0/16", h)
}

_link_local(h) if net.cidr_contains("fe80::/10", _ipv6(h))

_mapped(h) if net.cidr_contains("::ffff:0:0/96", _ipv6(h))

_special_chars(u) if {
	some ch in _bad
	contains(u, ch)
}

# METADATA
# title: refusal
# description: Why a URL is refused; undefined for an allowed URL.
refusal(u) := "a URL must be a string" if {
	not is_string(u)
} else := "the URL is too long" if {
	count(u) > max_length
} else := "the URL must be written in plain ASCII without spaces, quotes, backslashes or <>" if {
	not _plain(u)
} else := "only https URLs are allowed (plain http only to a loopback IP address)" if {
	not _scheme(u)
} else := "credentials in URLs are refused" if {
	contains(_authority(u), "@")
} else := "the URL has no host" if {
	_host(_authority(u)) == ""
} else := "the URL's port is not a number from 1 to 65535" if {
	not _port_ok(_port(_authority(u)))
} else := "percent-encoded or malformed hosts are refused" if {
	h := _host(_authority(u))
	contains(h, "%")
} else := "malformed IPv6 address" if {
	h := _host(_authority(u))
	startswith(h, "[")
	not _ipv6(h)
} else := "ambiguous numeric hosts are refused (write the IPv4 address as four decimal numbers)" if {
	_numeric(_host(_authority(u)))
} else := "IPv4-mapped IPv6 addresses are refused" if {
	_mapped(_host(_authority(u)))
} else := "link-local addresses are refused" if {
	_link_local(_host(_authority(u)))
} else := "plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)" if {
	_scheme(u) == "http"
	not _loopback(_host(_authority(u)))
}

_plain(u) if {
	scopes.clean(u)
	not _special_chars(u)
	b := base64.encode(u)
	((count(b) / 4) * 3) - _padding(b) == count(u)
}

_padding(b) := 2 if endswith(b, "==")

else := 1 if endswith(b, "=")

else := 0

# METADATA
# title: allowed
# description: The URL passes the transport rule.
allowed(u) if not refusal(u)

# METADATA
# title: origin
# description: The scheme and authority of an allowed URL ("https://host[:port]").
origin(u) := concat("", [_scheme(u), "://", _authority(u)])
