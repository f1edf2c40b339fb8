package grantwire.transport_test

import data.grantwire.transport

_url(scheme, host, ip) := {"scheme": scheme, "host": host, "ip": ip, "userinfo": false}

_remote := _url("https", "as.example.com", "")

_check(u, hop, purpose, from) := d if {
	d := transport.check_url with input as {"op": "check_url", "args": {"url": u, "hop": hop, "purpose": purpose, "from": from}}
}

_allow := {"status": "done", "effects": [], "result": {"allow": true}}

_refused(reason) := {"status": "done", "effects": [], "error": {
	"code": "INSECURE_TRANSPORT", "fix": "", "reason": reason,
	"message": concat("", ["refused URL: ", reason]),
}}

test_usage if {
	usage := {"status": "done", "effects": [], "error": {
		"code": "USAGE", "fix": "",
		"message": "usage: check_url needs url {scheme, host, ip, userinfo}, hop, purpose and from",
	}}
	every args in [
		{},
		{"url": _remote, "hop": 0, "purpose": "metadata"},
		{"url": object.remove(_remote, ["ip"]), "hop": 0, "purpose": "metadata", "from": null},
		{"url": object.union(_remote, {"userinfo": "no"}), "hop": 0, "purpose": "metadata", "from": null},
		{"url": _remote, "hop": "0", "purpose": "metadata", "from": null},
		{"url": _remote, "hop": 0, "purpose": 1, "from": null},
		{"url": _remote, "hop": 1, "purpose": "metadata", "from": {"scheme": "https", "host": "x"}},
		{"url": "https://as.example.com", "hop": 0, "purpose": "metadata", "from": null},
	] {
		transport.check_url == usage with input as {"op": "check_url", "args": args}
	}
}

test_a_redirect_hop_must_say_where_it_came_from if {
	# Without from, the rules about the previous hop could not be judged.
	every u in [_url("http", "127.0.0.1", "127.0.0.1"), _url("https", "127.0.0.1", "127.0.0.1"), _remote] {
		_check(u, 1, "metadata", null).error.code == "USAGE"
	}
}

test_https_to_a_remote_host_is_allowed if {
	_check(_remote, 0, "token", null) == _allow
	_check(_url("https", "93.184.216.34", "93.184.216.34"), 0, "metadata", null) == _allow
}

test_plain_http_only_to_a_loopback_ip if {
	every ip in ["127.0.0.1", "127.8.9.10", "::1"] {
		_check(_url("http", ip, ip), 0, "token", null) == _allow
	}
	every u in [
		_url("http", "as.example.com", ""),
		_url("http", "localhost", ""),
		_url("http", "10.0.0.1", "10.0.0.1"),
		_url("http", "::2", "::2"),
	] {
		_check(u, 0, "metadata", null) == _refused("plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)")
	}
}

test_other_schemes_are_refused if {
	every s in ["ftp", "file", "javascript", "HTTPS", ""] {
		_check(_url(s, "as.example.com", ""), 0, "metadata", null) == _refused(concat("", ["scheme ", s, " is not allowed (https only)"]))
	}
}

test_credentials_in_urls_are_refused if {
	_check(object.union(_remote, {"userinfo": true}), 0, "metadata", null) == _refused("credentials in URLs are refused")
}

test_a_url_needs_a_host if {
	_check(_url("https", "", ""), 0, "metadata", null) == _refused("the URL has no host")
}

test_link_local_targets_are_refused if {
	every ip in ["169.254.169.254", "169.254.0.1", "fe80::1", "fe80::a:b"] {
		_check(_url("https", ip, ip), 0, "metadata", null) == _refused("link-local addresses are refused")
	}
}

test_at_most_five_redirects if {
	transport.max_redirects == 5
	_check(_remote, 5, "metadata", _remote) == _allow
	_check(_remote, 6, "metadata", _remote) == _refused("more than 5 redirects")
}

test_requests_carrying_secrets_never_follow_redirects if {
	transport.no_redirect == {"token", "registration", "revocation"}
	every p in ["token", "registration", "revocation"] {
		_check(_remote, 0, p, null) == _allow
		_check(_remote, 1, p, _remote) == _refused(concat("", ["redirects from a ", p, " endpoint are never followed"]))
	}
	_check(_remote, 1, "authorization", _remote) == _allow
}

test_https_never_downgrades if {
	lo := _url("http", "127.0.0.1", "127.0.0.1")
	_check(lo, 1, "metadata", _url("https", "127.0.0.1", "127.0.0.1")) == _refused("a redirect from HTTPS to HTTP is refused")
}

test_remote_hosts_never_redirect_to_loopback if {
	reason := "a redirect from a remote host to a loopback address is refused"
	_check(_url("https", "127.0.0.1", "127.0.0.1"), 1, "metadata", _remote) == _refused(reason)
	_check(_url("https", "::1", "::1"), 2, "metadata", _url("https", "10.0.0.1", "10.0.0.1")) == _refused(reason)
	_check(_url("http", "127.0.0.1", "127.0.0.1"), 1, "metadata", _url("http", "10.0.0.1", "10.0.0.1")) == _refused(reason)
}

test_loopback_may_redirect_within_loopback if {
	lo := _url("http", "127.0.0.1", "127.0.0.1")
	_check(lo, 1, "metadata", lo) == _allow
	_check(_url("https", "127.0.0.1", "127.0.0.1"), 1, "metadata", _url("https", "::1", "::1")) == _allow
	_check(_remote, 1, "metadata", lo) == _allow
}

test_ipv4_mapped_ipv6_literals_are_refused if {
	every ip in ["::ffff:169.254.169.254", "::ffff:127.0.0.1", "::ffff:7f00:1"] {
		_check(_url("http", ip, ip), 0, "metadata", null) == _refused("IPv4-mapped IPv6 addresses are refused")
	}
	_check(_url("https", "::1", "::1"), 0, "metadata", null) == _allow
}
