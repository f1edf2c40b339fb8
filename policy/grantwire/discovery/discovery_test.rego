package grantwire.discovery_test

import data.grantwire.discovery

# ---------------------------------------------------------------------------------------
# the URL rule

test_localhost_counts_as_loopback if {
	discovery.url_allowed("http://localhost:3000/mcp")
	discovery.url_allowed("http://localhost/mcp")
	discovery.url_allowed("http://localhost")
	discovery.url_allowed("http://127.0.0.1:8080/x")
	discovery.url_allowed("https://mcp.example.com/mcp")
}

test_other_urls_are_refused if {
	every u in [
		"http://localhost.evil.com/", "http://example.com/", "javascript:alert(1)", "data:text/html,x",
		"http://169.254.169.254/latest", "https://user:pw@example.com/", "ftp://example.com",
		"http://LOCALHOST/", "http://localhost:99999/",
	] {
		not discovery.url_allowed(u)
		discovery.url_refusal(u)
	}
	not discovery.url_allowed(42)
}

test_url_parts if {
	u := "https://mcp.example.com:8443/v1/mcp?tenant=a#frag"
	discovery.origin(u) == "https://mcp.example.com:8443"
	discovery.path(u) == "/v1/mcp"
	discovery.query(u) == "tenant=a"
	discovery.canonical(u) == "https://mcp.example.com:8443/v1/mcp?tenant=a"
	discovery.path("https://x.example") == ""
	discovery.query("https://x.example/p") == ""
}

# ---------------------------------------------------------------------------------------
# WWW-Authenticate

test_bearer_parameters if {
	h := `Basic realm="x", Bearer resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error="insufficient_scope", error_description="needs \"write\", sorry"`
	discovery.bearer(h) == {
		"resource_metadata": "https://rs.example/.well-known/oauth-protected-resource/mcp",
		"scope": "files:read files:write",
		"error": "insufficient_scope",
		"error_description": `needs "write", sorry`,
	}
	discovery.challenge_scopes(discovery.bearer(h)) == ["files:read", "files:write"]
}

test_schemes_are_case_insensitive_and_params_unquoted if {
	discovery.bearer(`BEARER error=invalid_token, Scope=read`) == {"error": "invalid_token", "scope": "read"}
	discovery.bearer(`bearer`) == {}
}

test_dpop_challenge_parameters if {
	discovery.bearer(`DPoP resource_metadata="https://rs.example/.well-known/oauth-protected-resource", algs="ES256"`).resource_metadata == "https://rs.example/.well-known/oauth-protected-resource"
	discovery.bearer(`DPoP scope="a", Bearer scope="b"`).scope == "b"
}

test_two_header_lines_joined if {
	# A host joins repeated WWW-Authenticate lines with ", ".
	discovery.bearer(`Basic realm="a", Bearer scope="x"`).scope == "x"
}

test_token68_is_not_a_scheme if {
	discovery.challenges(`Negotiate abc==, Bearer x=1`) == [
		{"scheme": "negotiate", "params": {}},
		{"scheme": "bearer", "params": {"x": "1"}},
	]
}

test_first_bearer_challenge_and_first_value if {
	discovery.bearer(`Bearer scope="a", scope="b", Bearer scope="c"`) == {"scope": "a"}
}

test_no_challenge if {
	discovery.bearer("") == {}
	discovery.bearer(null) == {}
	discovery.bearer(`Basic realm="x"`) == {}
	discovery.challenge_scopes({}) == []
	discovery.challenge_scopes({"scope": "  a   b "}) == ["a", "b"]
}

# ---------------------------------------------------------------------------------------
# protected resource metadata URLs (RFC 9728 §3.1)

test_prm_urls if {
	discovery.prm_urls("https://example.com/public/mcp") == [
		"https://example.com/.well-known/oauth-protected-resource/public/mcp",
		"https://example.com/.well-known/oauth-protected-resource",
	]
	discovery.prm_urls("https://example.com/mcp/") == [
		"https://example.com/.well-known/oauth-protected-resource/mcp",
		"https://example.com/.well-known/oauth-protected-resource",
	]
	discovery.prm_urls("https://example.com") == ["https://example.com/.well-known/oauth-protected-resource"]
	discovery.prm_urls("https://example.com/") == ["https://example.com/.well-known/oauth-protected-resource"]
	discovery.prm_urls("https://example.com/mcp?tenant=a") == [
		"https://example.com/.well-known/oauth-protected-resource/mcp?tenant=a",
		"https://example.com/.well-known/oauth-protected-resource",
	]
	discovery.prm_urls("https://example.com:8443/v1/mcp#frag") == [
		"https://example.com:8443/.well-known/oauth-protected-resource/v1/mcp",
		"https://example.com:8443/.well-known/oauth-protected-resource",
	]
}

test_resource_matches if {
	u := "http://localhost:3000/mcp"
	discovery.resource_matches("http://localhost:3000/mcp", u)
	discovery.resource_matches("http://localhost:3000/mcp/", u)
	discovery.resource_matches("http://localhost:3000", u)
	discovery.resource_matches("http://localhost:3000/", u)
	not discovery.resource_matches("https://evil.example.com/mcp", u)
	not discovery.resource_matches("http://localhost:3001/mcp", u)
	not discovery.resource_matches("http://localhost:3000/mc", u)
	not discovery.resource_matches("http://localhost:3000/mcp/other", u)
	not discovery.resource_matches("http://localhost:3000/mcp#x", u)
	not discovery.resource_matches("http://localhost:3000/?a=b", u)
	discovery.resource_matches("https://a.example/v1", "https://a.example/v1/mcp")
}

# ---------------------------------------------------------------------------------------
# authorization server metadata URLs (RFC 8414 §3.1, OpenID, MCP order)

test_as_urls if {
	discovery.as_urls("https://auth.example.com") == [
		"https://auth.example.com/.well-known/oauth-authorization-server",
		"https://auth.example.com/.well-known/openid-configuration",
	]
	discovery.as_urls("https://auth.example.com/") == discovery.as_urls("https://auth.example.com")
	discovery.as_urls("https://auth.example.com/tenant1") == [
		"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
		"https://auth.example.com/.well-known/openid-configuration/tenant1",
		"https://auth.example.com/tenant1/.well-known/openid-configuration",
	]
	discovery.as_urls("https://auth.example.com/tenant1/") == discovery.as_urls("https://auth.example.com/tenant1")
	discovery.as_urls("https://login.example.com/a/b/v2.0")[2] == "https://login.example.com/a/b/v2.0/.well-known/openid-configuration"
}

test_issuer_problem if {
	not discovery.issuer_problem("https://as.example.com/t")
	discovery.issuer_problem(7) == "it is not a string"
	discovery.issuer_problem("http://as.example.com") == "plain HTTP is allowed only to a loopback address (127.0.0.1, ::1 or localhost)"
	discovery.issuer_problem("https://as.example.com/?x=1") == "it has a query or a fragment (RFC 8414 §2)"
	discovery.issuer_problem("https://as.example.com/#x") == "it has a query or a fragment (RFC 8414 §2)"
}

# ---------------------------------------------------------------------------------------
# answers

_json := {"content-type": "application/json; charset=utf-8"}

test_verdicts if {
	discovery.verdict({"status": 200, "headers": _json, "json": {"a": 1}}) == "document"
	discovery.verdict({"status": 404, "headers": {}, "json": null, "body": "empty"}) == "next"
	discovery.verdict({"status": 401, "headers": {}, "json": null}) == "next"
	discovery.verdict({"status": 200, "headers": {"content-type": "text/html"}, "json": null, "body": "not_json"}) == "next"
	discovery.verdict({"status": 200, "headers": {}, "json": {"a": 1}}) == "next"
	discovery.verdict({"status": 302, "headers": {"location": "http://169.254.169.254/"}, "json": null}) == "fail"
	discovery.verdict({"status": 500, "headers": _json, "json": {}}) == "fail"
	discovery.verdict({"status": 0, "error": "refused"}) == "fail"
	discovery.verdict({"status": 200, "headers": _json, "json": null, "body": "too_large"}) == "fail"
}

test_failure_texts if {
	discovery.failure({"status": 200, "json": null, "body": "too_large"}) == "answered with more than 1 MiB"
	discovery.failure({"status": 307}) == "answered with a redirect, which grantwire never follows"
	discovery.failure({"status": 0, "error": "tls"}) == "could not be reached (tls)"
	discovery.failure({"status": 0, "error": "weird"}) == "could not be reached (failed)"
	discovery.failure({"status": 503}) == "answered status 503"
	discovery.failure({"status": 4000}) == "answered status (invalid)"
}

_u := "https://mcp.example.com/mcp"

_prm := {"resource": _u, "authorization_servers": ["https://as.example.com"], "scopes_supported": ["a"]}

test_prm_problems if {
	not discovery.prm_problem(_prm, _u)
	discovery.prm_problem(object.remove(_prm, ["resource"]), _u) == "it names no resource"
	discovery.prm_problem(object.union(_prm, {"resource": "https://evil.example.com/mcp"}), _u) == "its resource is not this server (RFC 9728 §3.3); it may be another server's metadata"
	discovery.prm_problem(object.union(_prm, {"authorization_servers": []}), _u) == "it lists no authorization server"
	discovery.prm_problem(object.remove(_prm, ["authorization_servers"]), _u) == "it lists no authorization server"
	discovery.prm_problem(object.union(_prm, {"authorization_servers": ["javascript:alert(1)"]}), _u) == "its authorization server cannot be used: only https URLs are allowed (plain http only to 127.0.0.1, ::1 or localhost)"
	discovery.prm_problem(object.union(_prm, {"scopes_supported": "a b"}), _u) == "its scopes_supported is not a list of strings"
}

_iss := "https://as.example.com"

_asm := {
	"issuer": _iss,
	"authorization_endpoint": "https://as.example.com/authorize",
	"token_endpoint": "https://as.example.com/token",
	"registration_endpoint": "https://as.example.com/register",
	"code_challenge_methods_supported": ["S256"],
	"response_types_supported": ["code"],
}

test_as_problems if {
	not discovery.as_problem(_asm, _iss)
	not discovery.as_problem(object.remove(_asm, ["response_types_supported", "registration_endpoint"]), _iss)
	discovery.as_problem(_asm, "https://as.example.com/") == "its issuer is not the authorization server it was fetched for (RFC 8414 §3.3)"
	discovery.as_problem(object.remove(_asm, ["issuer"]), _iss) == "its issuer is not the authorization server it was fetched for (RFC 8414 §3.3)"
	discovery.as_problem(object.remove(_asm, ["code_challenge_methods_supported"]), _iss) == "it does not list PKCE S256 in code_challenge_methods_supported"
	discovery.as_problem(object.union(_asm, {"code_challenge_methods_supported": ["plain"]}), _iss) == "it does not list PKCE S256 in code_challenge_methods_supported"
	discovery.as_problem(object.union(_asm, {"code_challenge_methods_supported": "S256"}), _iss) == "it does not list PKCE S256 in code_challenge_methods_supported"
	discovery.as_problem(object.union(_asm, {"response_types_supported": ["token"]}), _iss) == "it does not list the code response type"
	discovery.as_problem(object.remove(_asm, ["token_endpoint"]), _iss) == "it has no token_endpoint"
	discovery.as_problem(object.union(_asm, {"token_endpoint": "http://as.example.com/token"}), _iss) == "its token_endpoint is refused: plain HTTP is allowed only to a loopback address (127.0.0.1, ::1 or localhost)"
	discovery.as_problem(object.union(_asm, {"registration_endpoint": "javascript:alert(1)"}), _iss) == "its registration_endpoint is refused: only https URLs are allowed (plain http only to 127.0.0.1, ::1 or localhost)"
	discovery.as_problem(object.union(_asm, {"jwks_uri": 5}), _iss) == "its jwks_uri is refused: it is not a string"

	# several problems of one kind: the first, never a conflict (found by FuzzRemoteASMetadata)
	discovery.as_problem(object.remove(_asm, ["authorization_endpoint", "token_endpoint"]), _iss) == "it has no authorization_endpoint"
	discovery.as_problem(object.union(_asm, {"jwks_uri": 5, "token_endpoint": "javascript:x"}), _iss) == "its token_endpoint is refused: only https URLs are allowed (plain http only to 127.0.0.1, ::1 or localhost)"
}

test_machine_as_problems if {
	bare := object.remove(_asm, ["authorization_endpoint", "code_challenge_methods_supported", "response_types_supported"])
	not discovery.machine_as_problem(bare, _iss)
	not discovery.machine_as_problem(_asm, _iss)
	discovery.machine_as_problem(bare, "https://as.example.com/") == "its issuer is not the authorization server it was fetched for (RFC 8414 §3.3)"
	discovery.machine_as_problem(object.remove(bare, ["token_endpoint"]), _iss) == "it has no token_endpoint"
	discovery.machine_as_problem(object.union(bare, {"token_endpoint": "http://as.example.com/token"}), _iss) == "its token_endpoint is refused: plain HTTP is allowed only to a loopback address (127.0.0.1, ::1 or localhost)"
}

test_prm_several_refused_servers if {
	discovery.prm_problem(object.union(_prm, {"authorization_servers": ["javascript:x", "https://a.example.com?q"]}), _u) == "its authorization server cannot be used: only https URLs are allowed (plain http only to 127.0.0.1, ::1 or localhost)"
}

test_helpers if {
	discovery.strings(["a", "b"]) == ["a", "b"]
	discovery.strings(["a", 1]) == []
	discovery.strings(null) == []
	discovery.flag(true)
	not discovery.flag(false)
}

# The loopback rule of remote servers names localhost, which it accepts (issue 20 §1.9).
test_url_refusal_names_localhost if {
	discovery.url_refusal("http://mcp.example.com/mcp") == "plain HTTP is allowed only to a loopback address (127.0.0.1, ::1 or localhost)"
	not discovery.url_refusal("http://localhost:3000/mcp")
}

# An unreachable host names why (issue 20 §2.4).
test_failure_names_the_reason if {
	discovery.failure({"status": 0, "error": "dns"}) == "could not be reached (its host name does not resolve)"
	discovery.failure({"status": 0, "error": "unreachable"}) == "could not be reached (no route to its host)"
	discovery.failure({"status": 0, "error": "refused"}) == "could not be reached (refused)"
}
