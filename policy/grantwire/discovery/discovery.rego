# METADATA
# title: MCP authorization discovery
# description: |
#   What a remote MCP server's answers mean, as pure functions over what the host fetched:
#   the RFC 9110 WWW-Authenticate challenge (its Bearer parameters, RFC 6750 §3 and RFC
#   9728 §5.1), the protected-resource metadata URLs to try and what a document must hold
#   (RFC 9728: the header's URL, else path-aware then root; the resource must name this
#   server), the authorization-server metadata URLs to try and what a document must hold
#   (RFC 8414 and OpenID Connect Discovery in the MCP order; the issuer identical to the
#   one the URLs were built from; PKCE S256 listed; endpoints that pass the URL rule), and
#   the URL rule itself: the transport rule (package transport), with the name localhost
#   counted as the loopback address for remote MCP servers (hosts dial it as 127.0.0.1,
#   never through DNS).
package grantwire.discovery

import data.grantwire.transport

# METADATA
# title: metadata size cap
# description: The largest metadata or registration document read (bytes); larger ones are refused.
max_document_bytes := 1048576

# METADATA
# title: metadata request timeout
# description: How long one discovery request may take (milliseconds).
request_timeout_ms := 10000

# ---------------------------------------------------------------------------------------
# the URL rule

_localhost_re := `^http://localhost(:[0-9]{1,5})?([/?#]|$)`

# The URL as the transport rule judges it: http://localhost is judged as http://127.0.0.1.
_as_checked(u) := concat("", ["http://", transport.loopback.names.localhost, substring(u, count("http://localhost"), -1)]) if {
	is_string(u)
	regex.match(_localhost_re, u)
} else := u

# METADATA
# title: URL refusal
# description: |
#   Why a URL of a remote MCP server or its authorization server is refused (undefined when
#   allowed): the transport rule, except that http://localhost counts as loopback.
url_refusal(u) := _said_for_remote(transport.refusal(_as_checked(u)))

# METADATA
# title: loopback words
# description: |
#   How the loopback rule of remote MCP servers is said everywhere (errors, mcp add --help,
#   docs): localhost counts as loopback here.
loopback_words := "a loopback address (127.0.0.1, ::1 or localhost)"

# The transport rule's words, with localhost named (issue 20 §1.9: one rule, said one way).
_said_for_remote(r) := replace(
	replace(r, "a loopback IP address (127.0.0.1 or ::1)", loopback_words),
	"(plain http only to a loopback IP address)", "(plain http only to 127.0.0.1, ::1 or localhost)",
)

# METADATA
# title: URL allowed
# description: The URL passes the remote MCP URL rule.
url_allowed(u) if {
	is_string(u)
	not url_refusal(u)
}

# ---------------------------------------------------------------------------------------
# URL parts (of an allowed URL)

_scheme_end(u) := indexof(u, "://") + 3

_nofrag(u) := split(u, "#")[0]

_rest(u) := substring(_nofrag(u), _scheme_end(u), -1)

_authority(u) := regex.find_all_string_submatch_n(`^([^/?]*)`, _rest(u), 1)[0][1]

# METADATA
# title: origin
# description: scheme://authority of an allowed URL.
origin(u) := concat("", [substring(u, 0, _scheme_end(u)), _authority(u)])

_after(u) := substring(_rest(u), count(_authority(u)), -1)

# METADATA
# title: path
# description: The path of an allowed URL ("" when it has none).
path(u) := split(_after(u), "?")[0]

# METADATA
# title: query
# description: The query of an allowed URL without "?" ("" when it has none).
query(u) := substring(_after(u), count(path(u)) + 1, -1) if contains(_after(u), "?")

else := ""

# METADATA
# title: without fragment
# description: The URL without its fragment (RFC 8707 says a resource has none).
canonical(u) := _nofrag(u)

_trim_slash(p) := substring(p, 0, count(p) - 1) if endswith(p, "/")

else := p

# ---------------------------------------------------------------------------------------
# WWW-Authenticate (RFC 9110 §11.6.1)

_tchar := "[!#$%&'*+.^_`|~0-9A-Za-z-]"

# One item of a challenge list: an auth-param (name = token / quoted-string) or a bare
# token (an auth-scheme, or a token68 when it follows a scheme without a comma). The
# leading comma, if any, is captured so that schemes and token68 can be told apart.
_item_re := concat("", [
	`(,)?[ \t]*(?:(`, _tchar, `+)[ \t]*=[ \t]*("(?:[^"\\]|\\.)*"|`, _tchar, `+)|([A-Za-z0-9._~+/-]+=*))`,
])

# METADATA
# title: challenge items
# description: The challenge list's items, at most 64 (a longer list is cut).
items(h) := regex.find_all_string_submatch_n(_item_re, h, 64) if is_string(h)

else := []

_bare(it) if it[4] != ""

_token68(xs, i) if {
	_bare(xs[i])
	i > 0
	xs[i][1] == ""
	_bare(xs[i - 1])
}

_scheme_at(xs, i) if {
	_bare(xs[i])
	not _token68(xs, i)
}

# The scheme an item belongs to: the last scheme at or before it.
_owner(xs, i) := max({j | some j, _ in xs; j <= i; _scheme_at(xs, j)})

_unquote(v) := concat("", [p |
	some m in regex.find_all_string_submatch_n(`\\(.)|([^\\]+)`, substring(v, 1, count(v) - 2), -1)
	p := concat("", [m[1], m[2]])
]) if {
	startswith(v, `"`)
} else := v

# METADATA
# title: challenges
# description: |
#   The challenges of a WWW-Authenticate value (several header lines joined with ", "):
#   [{scheme (lowercase), params: {name (lowercase): value (unquoted)}}], in order; a
#   parameter repeated in a challenge keeps its first value.
challenges(h) := [{"scheme": lower(xs[j][4]), "params": _params(xs, j)} |
	xs := items(h)
	some j, _ in xs
	_scheme_at(xs, j)
]

_params(xs, j) := {name: _first_value(xs, j, name) |
	some i, it in xs
	not _bare(it)
	_owner(xs, i) == j
	name := lower(it[2])
}

_first_value(xs, j, name) := _unquote(xs[i][3]) if {
	i := min({i |
		some i, it in xs
		not _bare(it)
		lower(it[2]) == name
		_owner(xs, i) == j
	})
}

# METADATA
# title: bearer parameters
# description: |
#   The parameters of the first Bearer challenge of a WWW-Authenticate value, else of its
#   first DPoP challenge (RFC 9449 §7.1: the same parameters), ({} when there is neither).
bearer(h) := c.params if {
	c := [c | some c in challenges(h); c.scheme == "bearer"][0]
} else := c.params if {
	c := [c | some c in challenges(h); c.scheme == "dpop"][0]
} else := {}

# METADATA
# title: challenge scopes
# description: The scopes a Bearer challenge names (its scope parameter, space-separated), sorted.
challenge_scopes(params) := sort({s | some s in split(params.scope, " "); s != ""}) if is_string(params.scope)

else := []

# ---------------------------------------------------------------------------------------
# protected resource metadata (RFC 9728)

_prm_suffix := "/.well-known/oauth-protected-resource"

# METADATA
# title: protected resource metadata URLs
# description: |
#   The well-known URLs of a server's protected-resource metadata, in the order tried
#   (RFC 9728 §3.1): path-aware (the path without a terminating slash, and the query, after
#   the well-known suffix), then the root; only the root for a server at its origin.
prm_urls(u) := [concat("", [origin(u), _prm_suffix])] if {
	_trim_slash(path(u)) == ""
	query(u) == ""
} else := [
	concat("", [origin(u), _prm_suffix, _trim_slash(path(u)), _q(query(u))]),
	concat("", [origin(u), _prm_suffix]),
]

_q("") := ""

_q(q) := concat("", ["?", q]) if q != ""

# METADATA
# title: resource matches
# description: |
#   The resource a protected-resource metadata document names may stand for the server at
#   URL u: it is u (without the fragment, a terminating slash aside), or a URL of the same
#   origin whose path is a prefix of u's on a segment boundary (the origin itself for a root
#   document). A resource of another origin never matches.
resource_matches(r, u) if {
	url_allowed(r)
	not contains(r, "#")
	origin(r) == origin(u)
	query(r) == ""
	_prefix_path(_trim_slash(path(r)), _trim_slash(path(u)))
}

resource_matches(r, u) if {
	url_allowed(r)
	not contains(r, "#")
	_trim_slash(canonical(r)) == _trim_slash(canonical(u))
}

_prefix_path("", _)

_prefix_path(p, q) if {
	p != ""
	p == q
}

_prefix_path(p, q) if {
	p != ""
	startswith(q, concat("", [p, "/"]))
}

# ---------------------------------------------------------------------------------------
# authorization server metadata (RFC 8414 §3.1, OpenID Connect Discovery §4, MCP order)

# METADATA
# title: issuer problem
# description: Why an issuer identifier cannot be used to find metadata (undefined when it can).
issuer_problem(iss) := "it is not a string" if {
	not is_string(iss)
} else := url_refusal(iss) if {
	url_refusal(iss)
} else := "it has a query or a fragment (RFC 8414 §2)" if {
	some ch in ["?", "#"]
	contains(iss, ch)
}

# METADATA
# title: authorization server metadata URLs
# description: |
#   The metadata URLs of an issuer in the order tried: for an issuer with a path,
#   OAuth with path insertion, OpenID with path insertion, OpenID with the path appended;
#   for one without, OAuth then OpenID at the root. A terminating slash is removed first.
as_urls(iss) := [
	concat("", [origin(iss), "/.well-known/oauth-authorization-server"]),
	concat("", [origin(iss), "/.well-known/openid-configuration"]),
] if {
	_trim_slash(path(iss)) == ""
} else := [
	concat("", [origin(iss), "/.well-known/oauth-authorization-server", _trim_slash(path(iss))]),
	concat("", [origin(iss), "/.well-known/openid-configuration", _trim_slash(path(iss))]),
	concat("", [origin(iss), _trim_slash(path(iss)), "/.well-known/openid-configuration"]),
]

# ---------------------------------------------------------------------------------------
# fetched documents

_json_type(r) if startswith(lower(object.get(object.get(r, "headers", {}), "content-type", "")), "application/json")

# METADATA
# title: document verdict
# description: |
#   What one metadata answer means for the search through candidate URLs: "next" (4xx, or
#   200 that is not a JSON object served as application/json: not here, try the next),
#   "document" (a JSON object to judge), or "fail" (anything else: a redirect, a server
#   error, no answer, a body over the size cap).
verdict(r) := "fail" if {
	object.get(r, "body", "") == "too_large"
} else := "next" if {
	is_number(r.status)
	r.status >= 400
	r.status < 500
} else := "document" if {
	r.status == 200
	is_object(r.json)
	_json_type(r)
} else := "next" if {
	r.status == 200
} else := "fail"

# METADATA
# title: failure text
# description: What went wrong with an answer whose verdict is "fail", for an error message.
failure(r) := "answered with more than 1 MiB" if {
	object.get(r, "body", "") == "too_large"
} else := "answered with a redirect, which grantwire never follows" if {
	r.status >= 300
	r.status < 400
} else := concat("", ["could not be reached (", _word(r.error), ")"]) if {
	r.status == 0
} else := concat("", ["answered status ", _status_text(r.status)])

_word(e) := e if {
	e in {"timeout", "refused", "tls", "canceled", "failed"}
} else := "its host name does not resolve" if {
	e == "dns"
} else := "no route to its host" if {
	e == "unreachable"
} else := "failed"

_status_text(s) := format_int(s, 10) if {
	is_number(s)
	s >= 0
	s < 1000
} else := "(invalid)"

_strings(v) if {
	is_array(v)
	every s in v {
		is_string(s)
	}
}

_nonempty_strings(v) if {
	_strings(v)
	count(v) > 0
}

# METADATA
# title: protected resource metadata problem
# description: |
#   Why a protected-resource metadata document cannot be used for the server at u
#   (undefined when it can): its resource must match u, it must list at least one
#   authorization server, every one must pass the URL rule, and scopes_supported, when
#   present, must be a list of strings.
prm_problem(doc, u) := "it names no resource" if {
	not is_string(object.get(doc, "resource", null))
} else := "its resource is not this server (RFC 9728 §3.3); it may be another server's metadata" if {
	not resource_matches(doc.resource, u)
} else := "it lists no authorization server" if {
	not _nonempty_strings(object.get(doc, "authorization_servers", null))
} else := concat("", ["its authorization server cannot be used: ", p]) if {
	# the first one refused: several refused would give conflicting values
	p := [p | some a in doc.authorization_servers; p := issuer_problem(a)][0]
} else := "its scopes_supported is not a list of strings" if {
	doc.scopes_supported != null
	not _strings(doc.scopes_supported)
}

_url_fields := [
	"authorization_endpoint", "token_endpoint", "registration_endpoint", "revocation_endpoint",
	"introspection_endpoint", "userinfo_endpoint", "jwks_uri", "end_session_endpoint",
	"device_authorization_endpoint", "pushed_authorization_request_endpoint",
]

# METADATA
# title: authorization server metadata problem
# description: |
#   Why an authorization-server metadata document fetched for issuer iss cannot be used
#   (undefined when it can): its issuer must be identical to iss (no normalisation), it must
#   list S256 in code_challenge_methods_supported (an absent list means no PKCE), "code"
#   in response_types_supported when it has that list, and every endpoint it names must
#   pass the URL rule (authorization and token endpoints are required).
as_problem(doc, iss) := "its issuer is not the authorization server it was fetched for (RFC 8414 §3.3)" if {
	object.get(doc, "issuer", null) != iss
} else := "it does not list PKCE S256 in code_challenge_methods_supported" if {
	not "S256" in _list(object.get(doc, "code_challenge_methods_supported", null))
} else := "it does not list the code response type" if {
	doc.response_types_supported != null
	not "code" in _list(doc.response_types_supported)
} else := concat("", ["it has no ", f]) if {
	f := [f | some f in ["authorization_endpoint", "token_endpoint"]; not is_string(object.get(doc, f, null))][0]
} else := _url_fields_problem(doc)

# METADATA
# title: authorization server metadata problem for a machine grant
# description: |
#   as_problem for a grant with no person (client credentials, JWT bearer): no browser and
#   no PKCE, so only the issuer, a token endpoint and the URL rule on every endpoint named.
machine_as_problem(doc, iss) := "its issuer is not the authorization server it was fetched for (RFC 8414 §3.3)" if {
	object.get(doc, "issuer", null) != iss
} else := "it has no token_endpoint" if {
	not is_string(object.get(doc, "token_endpoint", null))
} else := _url_fields_problem(doc)

# the first field refused, in the order of _url_fields
_url_fields_problem(doc) := [m |
	some f in _url_fields
	doc[f] != null
	p := _field_refusal(doc[f])
	m := concat("", ["its ", f, " is refused: ", p])
][0]

_field_refusal(v) := "it is not a string" if {
	not is_string(v)
} else := url_refusal(v)

_list(v) := v if is_array(v)

else := []

# METADATA
# title: optional list
# description: A document member that should be a list of strings, or [] when it is not one.
strings(v) := v if _strings(v)

else := []

# METADATA
# title: flag
# description: A document member that is true (anything else is false).
flag(v) if v == true
