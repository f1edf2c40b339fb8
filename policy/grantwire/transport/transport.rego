# METADATA
# title: Transport rule
# description: |
#   Every URL grantwire's shells fetch (token, discovery, registration and authorization
#   endpoints) and every redirect hop is judged here before a request goes out. HTTPS is
#   required; plain HTTP is allowed only to a loopback IP literal (127.0.0.0/8 or ::1), and
#   never after a hop from HTTPS or from a remote host. Credentials in URLs, link-local
#   targets (cloud metadata services), more than 5 redirects, and any redirect away from a
#   token or registration endpoint (which would replay secrets in the body) are refused, and
#   so are IPv4-mapped IPv6 literals (::ffff:169.254.169.254), which would dodge the rest.
#   The shell parses the URL; `url.ip` is the host when it is an IP literal, else "". A
#   redirect hop (hop > 0) must pass `from`, the URL it was redirected from.
package grantwire.transport

import data.grantwire.errors
import data.grantwire.step

_u := input.args.url

_from := input.args.from

_hop := input.args.hop

_purpose := input.args.purpose

# METADATA
# title: maximum redirects
# description: A chain longer than this is refused.
max_redirects := 5

# METADATA
# title: purposes that never follow redirects
# description: Requests whose body carries secrets (codes, verifiers, refresh tokens, client secrets).
no_redirect := {"token", "registration", "revocation"}

_valid_args if {
	is_string(_u.scheme)
	is_string(_u.host)
	is_string(_u.ip)
	is_boolean(_u.userinfo)
	is_number(_hop)
	is_string(_purpose)
	_from_ok
}

# A redirect hop must name the URL it comes from: the rules about where a hop may go
# depend on it, and they cannot be judged without it.
_from_ok if {
	_from == null
	_hop == 0
}

_from_ok if {
	is_string(_from.scheme)
	is_string(_from.host)
	is_string(_from.ip)
}

# IPv4 networks are matched against IPv4 literals only: OPA's Go evaluator treats an
# IPv4-mapped IPv6 literal (::ffff:127.0.0.1) as its IPv4 address, OPA's Wasm runtime does
# not, and such literals are refused before these rules matter.
_ipv4(ip) if {
	ip != ""
	not contains(ip, ":")
}

_loopback(ip) if {
	_ipv4(ip)
	net.cidr_contains("127.0.0.0/8", ip)
}

_loopback("::1")

_link_local(ip) if {
	_ipv4(ip)
	net.cidr_contains("169.254.0.0/16", ip)
}

_link_local(ip) if {
	contains(ip, ":")
	net.cidr_contains("fe80::/10", ip)
}

# An IPv4 address written as IPv6 (::ffff:a.b.c.d or ::ffff:7f00:1) would otherwise dodge
# the loopback and link-local rules (169.254.169.254 is the cloud metadata service).
_mapped(ip) if {
	contains(ip, ":")
	net.cidr_contains("::ffff:0:0/96", ip)
}

# The first reason that refuses the URL.
_refusal := concat("", ["scheme ", _u.scheme, " is not allowed (https only)"]) if {
	not _u.scheme in {"https", "http"}
} else := "credentials in URLs are refused" if {
	_u.userinfo == true
} else := "the URL has no host" if {
	_u.host == ""
} else := "more than 5 redirects" if {
	_hop > max_redirects
} else := concat("", ["redirects from a ", _purpose, " endpoint are never followed"]) if {
	_hop > 0
	_purpose in no_redirect
} else := "IPv4-mapped IPv6 addresses are refused" if {
	_mapped(_u.ip)
} else := "link-local addresses are refused" if {
	_link_local(_u.ip)
} else := "plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)" if {
	_u.scheme == "http"
	not _loopback(_u.ip)
} else := "a redirect from HTTPS to HTTP is refused" if {
	_u.scheme == "http"
	_hop > 0
	_from.scheme == "https"
} else := "a redirect from a remote host to a loopback address is refused" if {
	_loopback(_u.ip)
	_hop > 0
	not _loopback(_from.ip)
}

# METADATA
# title: check_url decision
# description: Allow or refuse one URL (or redirect hop) with the reason.
# entrypoint: true
check_url := step.fail(errors.usage("check_url needs url {scheme, host, ip, userinfo}, hop, purpose and from"), []) if {
	not _valid_args
} else := step.fail(errors.insecure_transport(_refusal), []) if {
	_refusal
} else := step.done({"allow": true}, [])
