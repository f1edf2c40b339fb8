package grantwire.oauth_test

import data.grantwire.fixtures_test as fx
import data.grantwire.oauth

_id := fx.desc("client#client_id", fx.id_a)

_sec := fx.desc("client#client_secret", "5ec5ec5ec5ec5ec5")

# A client view (store.client) with or without a secret, and a tenant.
_client(sec, tenant) := {
	"found": true, "source": "keyring", "version": "k1", "client_id": _id, "client_id_hash": fx.hash_a,
	"client_secret": _sec, "has_secret": true, "tenant": tenant,
} if {
	sec == true
} else := {
	"found": true, "source": "keyring", "version": "k1", "client_id": _id, "client_id_hash": fx.hash_a,
	"client_secret": null, "has_secret": false, "tenant": tenant,
}

# ---------------------------------------------------------------------------------------
# endpoints

test_endpoint_with_tenant if {
	oauth.endpoint("microsoft", "token_url", "contoso") == "https://login.microsoftonline.com/contoso/oauth2/v2.0/token" with data.catalog as fx.catalog
	oauth.endpoint("google", "token_url", null) == "https://oauth2.googleapis.com/token" with data.catalog as fx.catalog
	oauth.endpoint("google", "token_url", "ignored") == "https://oauth2.googleapis.com/token" with data.catalog as fx.catalog
}

test_endpoint_undefined if {
	# "{tenant}" without a tenant, no such field, an empty field, no such provider
	not oauth.endpoint("microsoft", "token_url", null) with data.catalog as fx.catalog
	not oauth.endpoint("google", "device_authorization_url", null) with data.catalog as fx.catalog
	not oauth.endpoint("x", "token_url", null) with data.catalog as {"connectors": {"x": {"token_url": ""}}}
	not oauth.endpoint("nope", "token_url", null) with data.catalog as fx.catalog
}

test_endpoint_problem if {
	oauth.endpoint_problem("microsoft", "token_url", null) == "the catalog gives microsoft no usable token_url" with data.catalog as fx.catalog
	oauth.endpoint_problem("x", "token_url", null) == "x token_url: plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)" with data.catalog as {"connectors": {"x": {"token_url": "http://example.com/token"}}}
	not oauth.endpoint_problem("google", "token_url", null) with data.catalog as fx.catalog
}

# ---------------------------------------------------------------------------------------
# client authentication

test_auth_method if {
	oauth.auth_method("google", _client(true, null)) == "client_secret_basic" with data.catalog as fx.catalog
	oauth.auth_method("google", _client(false, null)) == "none" with data.catalog as fx.catalog
	oauth.auth_method("microsoft", _client(true, null)) == "client_secret_post" with data.catalog as fx.catalog
	oauth.auth_method("local", _client(true, null)) == "none" with data.catalog as fx.catalog
	oauth.auth_method("x", _client(true, null)) == "client_secret_basic" with data.catalog as {"connectors": {"x": {"token_endpoint_auth_method": "private_key_jwt"}}}
}

test_token_need_basic if {
	n := oauth.refresh_need("refresh", "google", _client(true, null), fx.ref("conn#refresh_token")) with data.catalog as fx.catalog
	n == {
		"key": "refresh", "kind": "http.request", "commit": true,
		"method": "POST", "url": "https://oauth2.googleapis.com/token",
		"headers": {"Accept": "application/json", "Authorization": {"$basic": [_id, _sec]}},
		"form": {"grant_type": "refresh_token", "refresh_token": {"$ref": "conn#refresh_token"}},
		"secret_fields": ["access_token", "refresh_token", "id_token"],
		"timeout_ms": 30000,
	}
}

test_token_need_post if {
	n := oauth.refresh_need("refresh", "microsoft", _client(true, "contoso"), fx.ref("r")) with data.catalog as fx.catalog
	n.url == "https://login.microsoftonline.com/contoso/oauth2/v2.0/token"
	n.headers == {"Accept": "application/json"}
	n.form == {"grant_type": "refresh_token", "refresh_token": {"$ref": "r"}, "client_id": _id, "client_secret": _sec}
}

test_token_need_none if {
	# method none, and basic or post without a secret: the client id in the form only
	every p in ["local", "google", "microsoft"] {
		n := oauth.refresh_need("refresh", p, _client(false, "common"), fx.ref("r")) with data.catalog as fx.catalog
		n.headers == {"Accept": "application/json"}
		n.form == {"grant_type": "refresh_token", "refresh_token": {"$ref": "r"}, "client_id": _id}
	}

	# method none never sends a secret it has
	n := oauth.refresh_need("refresh", "local", _client(true, null), fx.ref("r")) with data.catalog as fx.catalog
	n.url == "http://127.0.0.1:8080/token"
	n.headers == {"Accept": "application/json"}
	n.form == {"grant_type": "refresh_token", "refresh_token": {"$ref": "r"}, "client_id": _id}
}

test_exchange_need if {
	n := oauth.exchange_need("token", "google", _client(true, null), fx.ref("callback#code"), fx.redirect_uri, fx.ref("verifier#value")) with data.catalog as fx.catalog
	n.commit == true
	n.key == "token"
	n.form == {
		"grant_type": "authorization_code", "code": {"$ref": "callback#code"},
		"redirect_uri": fx.redirect_uri, "code_verifier": {"$ref": "verifier#value"},
	}
	n.headers.Authorization == {"$basic": [_id, _sec]}
}

# ---------------------------------------------------------------------------------------
# the authorization URL

test_authorization_url_template if {
	u := oauth.authorization_url("google", _client(true, null), ["email", "openid"], fx.redirect_uri, fx.ref("state#value"), fx.ref("verifier#value")) with data.catalog as fx.catalog
	u == {
		"$url": "https://accounts.google.com/o/oauth2/v2/auth",
		"query": {
			"access_type": "offline", "prompt": "consent",
			"response_type": "code", "client_id": _id, "redirect_uri": fx.redirect_uri,
			"scope": "email openid", "state": {"$ref": "state#value"},
			"code_challenge": {"$s256": {"$ref": "verifier#value"}}, "code_challenge_method": "S256",
		},
	}
}

test_authorization_url_separator_and_tenant if {
	g := oauth.authorization_url("github", _client(false, null), ["read:user", "repo"], fx.redirect_uri, fx.ref("s"), fx.ref("v")) with data.catalog as fx.catalog
	g.query.scope == "read:user,repo"
	g["$url"] == "https://github.com/login/oauth/authorize"
	m := oauth.authorization_url("microsoft", _client(false, "contoso"), ["User.Read"], fx.redirect_uri, fx.ref("s"), fx.ref("v")) with data.catalog as fx.catalog
	m["$url"] == "https://login.microsoftonline.com/contoso/oauth2/v2.0/authorize"
	m.query.scope == "User.Read"
}

test_auth_params_never_override_the_protocol if {
	cat := {"connectors": {"x": {
		"authorization_url": "https://as.example.com/authorize", "scope_separator": "",
		"auth_params": {"response_type": "token", "state": "fixed", "code_challenge_method": "plain", "extra": "1"},
	}}}
	u := oauth.authorization_url("x", _client(false, null), ["a", "b"], fx.redirect_uri, fx.ref("s"), fx.ref("v")) with data.catalog as cat
	u.query.response_type == "code"
	u.query.state == {"$ref": "s"}
	u.query.code_challenge_method == "S256"
	u.query.extra == "1"
	u.query.scope == "a b"
}

# ---------------------------------------------------------------------------------------
# userinfo and revocation

test_userinfo_need if {
	n := oauth.userinfo_need("userinfo", "google", _client(true, null), fx.ref("token#access_token")) with data.catalog as fx.catalog
	n == {
		"key": "userinfo", "kind": "http.request", "method": "GET",
		"url": "https://openidconnect.googleapis.com/v1/userinfo",
		"headers": {"Accept": "application/json", "Authorization": {"$concat": ["Bearer ", {"$ref": "token#access_token"}]}},
		"timeout_ms": 10000,
	}
	oauth.has_userinfo("google", _client(true, null)) with data.catalog as fx.catalog
	not oauth.has_userinfo("local", _client(true, null)) with data.catalog as fx.catalog
	not oauth.has_userinfo("x", _client(true, null)) with data.catalog as {"connectors": {"x": {"userinfo_url": "http://example.com/me"}}}
}

test_account if {
	oauth.account(fx.http(200, {"email": "a@b.c", "preferred_username": "p@b.c", "login": "l"})) == "a@b.c"
	oauth.account(fx.http(200, {"email": "", "preferred_username": "p@b.c", "login": "l"})) == "p@b.c"
	oauth.account(fx.http(200, {"preferred_username": "not-an-email", "login": "octocat"})) == "octocat"
	oauth.account(fx.http(200, {"login": ""})) == ""
	oauth.account(fx.http(200, null)) == ""
	oauth.account(fx.http(401, {"email": "a@b.c"})) == ""
	oauth.account({"status": 0, "error": "timeout"}) == ""
}

test_revoke_effect if {
	oauth.revoke_effect("google", _client(true, null), fx.ref("conn#refresh_token")) == {
		"kind": "http.send", "method": "POST", "url": "https://oauth2.googleapis.com/revoke",
		"headers": {"Authorization": {"$basic": [_id, _sec]}},
		"form": {"token": {"$ref": "conn#refresh_token"}, "token_type_hint": "refresh_token"},
		"timeout_ms": 5000,
	} with data.catalog as fx.catalog
	p := oauth.revoke_effect("microsoft", _client(true, "common"), fx.ref("r")) with data.catalog as fx.catalog
	p.url == "https://login.microsoftonline.com/common/oauth2/v2.0/revoke"
	p.headers == {}
	p.form == {"token": {"$ref": "r"}, "token_type_hint": "refresh_token", "client_id": _id, "client_secret": _sec}
	not oauth.revoke_effect("github", _client(true, null), fx.ref("r")) with data.catalog as fx.catalog
	not oauth.revoke_effect("x", _client(true, null), fx.ref("r")) with data.catalog as {"connectors": {"x": {"revocation_url": "http://example.com/revoke"}}}
}

# ---------------------------------------------------------------------------------------
# token responses

test_response_ok if {
	r := fx.http(200, fx.token_json("t", {"refresh_token": fx.new_refresh("t", "4e44e44e4e44e44e"), "scope": "openid gmail email"}))
	oauth.response(r) == {
		"ok": true, "access": fx.desc("t#access_token", "a2a2a2a2a2a2a2a2"),
		"refresh": fx.new_refresh("t", "4e44e44e4e44e44e"), "expires_in": 3599,
		"scope": ["email", "gmail", "openid"],
	}
}

test_response_ok_without_refresh_or_scope if {
	oauth.response(fx.http(200, fx.token_json("t", {}))) == {
		"ok": true, "access": fx.desc("t#access_token", "a2a2a2a2a2a2a2a2"),
		"refresh": null, "expires_in": 3599, "scope": null,
	}
	oauth.response(fx.http(200, fx.token_json("t", {"scope": "  "}))).scope == null
	oauth.response(fx.http(200, fx.token_json("t", {"scope": 7}))).scope == null
	oauth.response(fx.http(200, fx.token_json("t", {"scope": ""}))).scope == null
	oauth.response(fx.http(200, fx.token_json("t", {"refresh_token": "plain"}))).refresh == null
}

test_response_scope_separators if {
	oauth.response(fx.http(200, fx.token_json("t", {"scope": "repo,read:user"}))).scope == ["read:user", "repo"]
	oauth.response(fx.http(200, fx.token_json("t", {"scope": "b  a, a"}))).scope == ["a", "b"]
}

test_response_expires_in if {
	oauth.response(fx.http(200, fx.token_json("t", {"expires_in": 60}))).expires_in == 60
	every e in [0, -5, "3600", null] {
		oauth.response(fx.http(200, fx.token_json("t", {"expires_in": e}))).expires_in == 3600
	}
	oauth.response(fx.http(200, object.remove(fx.token_json("t", {}), ["expires_in"]))).expires_in == 3600
}

test_response_oauth_errors if {
	oauth.response(fx.http(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})) == {
		"ok": false, "kind": "oauth", "status": 400, "error": "invalid_grant", "detail": "",
	}
	oauth.response(fx.http(401, {"error": "invalid_client"})) == {"ok": false, "kind": "oauth", "status": 401, "error": "invalid_client", "detail": ""}

	# 200 with an error (GitHub does this) is read as a 400
	oauth.response(fx.http(200, {"error": "bad_verification_code", "access_token": fx.desc("t#access_token", "a2a2a2a2a2a2a2a2")})) == {
		"ok": false, "kind": "oauth", "status": 400, "error": "bad_verification_code", "detail": "",
	}

	# an error that does not look like an RFC 6749 code is not repeated
	oauth.response(fx.http(400, {"error": "<script>alert(1)</script>"})).error == "unrecognised_error"
	oauth.response(fx.http(400, {"error": ""})).error == "unrecognised_error"
}

test_error_code if {
	oauth.error_code("invalid_grant") == "invalid_grant"
	oauth.error_code("temporarily.unavailable-1") == "temporarily.unavailable-1"
	oauth.error_code(concat("", [c | some _ in numbers.range(1, 65); c := "a"])) == "unrecognised_error"
	oauth.error_code("a b") == "unrecognised_error"
	oauth.error_code("érreur") == "unrecognised_error"
}

test_response_not_json if {
	oauth.response({"status": 200, "headers": {"content-type": "text/html"}, "json": null, "body": "not_json"}) == {
		"ok": false, "kind": "not_json", "status": 200, "error": "not_json",
		"detail": "the token endpoint answered without JSON",
	}
	oauth.response(fx.http(200, ["a"])).kind == "not_json"
	oauth.response(fx.http(200, "access_token=x")).kind == "not_json"
}

test_response_no_access_token if {
	oauth.response(fx.http(200, {"access_token": {"$ref": 1}})) == {
		"ok": false, "kind": "no_access_token", "status": 200, "error": "no_access_token",
		"detail": "the token response has no access_token",
	}
}

# A JSON 200 without an access_token, or with one that is not a description, is
# "no_access_token" (the member absent is the case a negated call would miss).
test_response_without_access_token if {
	every j in [{"token_type": "Bearer"}, {"access_token": 42}, {}] {
		oauth.response(fx.http(200, j)).kind == "no_access_token"
	}
}

test_response_transport if {
	oauth.response({"status": 0, "error": "timeout"}) == {"ok": false, "kind": "transport", "status": 0, "error": "timeout", "detail": "no answer in time"}
	oauth.response({"status": 0, "error": "refused"}).detail == "the connection was refused"
	oauth.response({"status": 0, "error": "tls"}).detail == "the TLS handshake failed"
	oauth.response({"status": 0, "error": "canceled"}) == {"ok": false, "kind": "transport", "status": 0, "error": "canceled", "detail": "the request failed"}
	oauth.response({"status": 0, "error": "failed"}).detail == "the request failed"
	oauth.response({"status": 0, "error": "dns: secret.internal"}) == {"ok": false, "kind": "transport", "status": 0, "error": "failed", "detail": "the request failed"}
}

test_response_status if {
	oauth.response(fx.http(500, null)) == {"ok": false, "kind": "status", "status": 500, "error": "http_error", "detail": ""}
	oauth.response(fx.http(401, null)) == {"ok": false, "kind": "status", "status": 401, "error": "http_error", "detail": ""}
	oauth.response(fx.http(503, {"message": "down"})).kind == "status"
	oauth.response(fx.http(302, null)).status == 302
	oauth.response({"status": "x", "json": null}).status == 0
}

# ---------------------------------------------------------------------------------------
# the issuer (RFC 9207)

test_issuer if {
	oauth.issuer("github", _client(false, null)) == "https://github.com" with data.catalog as fx.catalog
	oauth.issuer("google", _client(false, null)) == "https://accounts.google.com" with data.catalog as fx.catalog
	oauth.issuer("microsoft", _client(false, "contoso")) == "https://login.microsoftonline.com" with data.catalog as fx.catalog
	oauth.issuer("local", _client(false, null)) == "http://127.0.0.1:8080" with data.catalog as fx.catalog
	oauth.issuer_required("github") with data.catalog as fx.catalog
	not oauth.issuer_required("google") with data.catalog as fx.catalog
}

test_issuer_problem if {
	not oauth.issuer_problem("github", _client(false, null), {"iss": "https://github.com", "code": "x"}) with data.catalog as fx.catalog
	oauth.issuer_problem("github", _client(false, null), {"iss": "https://evil.example"}) == "names the issuer https://evil.example where github's catalog entry expects https://github.com (a catalog that points github at another server needs that server's issuer; both show in: grantwire catalog github)" with data.catalog as fx.catalog
	oauth.issuer_problem("github", _client(false, null), {"iss": "https://github.com/"}) == "names the issuer https://github.com/ where github's catalog entry expects https://github.com (a catalog that points github at another server needs that server's issuer; both show in: grantwire catalog github)" with data.catalog as fx.catalog
	oauth.issuer_problem("github", _client(false, null), {"iss": "<b>x</b>"}) == "names another issuer than https://github.com, the one github's catalog entry expects" with data.catalog as fx.catalog
	oauth.issuer_problem("github", _client(false, null), {"iss": "https://a.example/x y"}) == "names another issuer than https://github.com, the one github's catalog entry expects" with data.catalog as fx.catalog
	not oauth.issuer_problem("google", _client(false, null), {"iss": "https://accounts.google.com"}) with data.catalog as fx.catalog
	startswith(oauth.issuer_problem("google", _client(false, null), {"iss": "https://accounts.google.com.evil"}), "names the issuer https://accounts.google.com.evil where google's catalog entry expects https://accounts.google.com") with data.catalog as fx.catalog
	not oauth.issuer_problem("google", _client(false, null), {}) with data.catalog as fx.catalog
	oauth.issuer_problem("github", _client(false, null), {"iss": 1}) == "names no issuer although the provider always sends one" with data.catalog as fx.catalog
}

# A provider that promises iss (its catalog entry names an issuer) must send it: a callback
# without iss is refused (RFC 9207 §2.4; an attacker in a mix-up omits it).
test_issuer_problem_missing_iss if {
	oauth.issuer_problem("github", _client(false, null), {"code": "x"}) == "names no issuer although the provider always sends one" with data.catalog as fx.catalog
}
