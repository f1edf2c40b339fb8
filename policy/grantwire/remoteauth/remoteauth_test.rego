package grantwire.remoteauth_test

import data.grantwire.fixtures_test as fx

# ---------------------------------------------------------------------------------------
# a world: the catalog's mcp-remote (https://mcp.example.com/mcp) behind an authorization
# server https://auth.example.com that publishes metadata and takes dynamic registration

_c := "mcp-remote"

_iss := "https://auth.example.com"

_prm_path := "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

_prm_root := "https://mcp.example.com/.well-known/oauth-protected-resource"

_challenge := concat("", [`Bearer resource_metadata="`, _prm_path, `", scope="files:read"`])

_prm := {
	"resource": "https://mcp.example.com/mcp", "authorization_servers": [_iss],
	"scopes_supported": ["files:read", "files:write"],
}

_as := {
	"issuer": _iss,
	"authorization_endpoint": "https://auth.example.com/authorize",
	"token_endpoint": "https://auth.example.com/token",
	"registration_endpoint": "https://auth.example.com/register",
	"revocation_endpoint": "https://auth.example.com/revoke",
	"code_challenge_methods_supported": ["S256"],
	"response_types_supported": ["code"],
	"scopes_supported": ["files:read", "files:write", "offline_access"],
	"authorization_response_iss_parameter_supported": true,
}

_dcr_json := {"client_id": fx.desc("dcr#client_id", fx.id_a), "redirect_uris": [fx.redirect_uri]}

_now := 1800000000000

_world := {
	"token": fx.absent, "client": fx.absent, "prereg": fx.absent,
	"loopback": {"redirect_uri": fx.redirect_uri},
	"probe": {"status": 401, "headers": {"www-authenticate": _challenge}},
	"prm|0": fx.http(200, _prm),
	"as|0": fx.http(200, _as),
	"dcr": fx.http(201, _dcr_json),
	"verifier": {"value": fx.desc("verifier#value", "0123456789abcdef")},
	"state": {"value": fx.desc("state#value", "fedcba9876543210")},
	"callback": {"status": "callback", "params": {"code": fx.desc("callback#code", "c0dec0dec0dec0de"), "iss": _iss}},
	"exchange": fx.http(200, fx.token_json("exchange", {
		"refresh_token": fx.new_refresh("exchange", "7e7e0000000000aa"),
		"scope": "files:read offline_access",
	})),
	"authlock": "held", "token@auth": fx.absent, "now@auth": _now,
	"remote@auth": fx.no_file("mcp_remote.json", []),
	"lock": "held", "now@lock": _now,
	"remote@lock": fx.no_file("mcp_remote.json", []),
}

_args := {"connector": _c}

_d(args, f) := fx.decide(fx.q1("mcp_auth", args, f))

_without(ks) := object.remove(_world, ks)

_with(p) := fx.patch(_world, p)

_code(d) := d.error.code

# ---------------------------------------------------------------------------------------
# the happy path, step by step

test_needs_in_order if {
	keys := [k | some n in _d(_args, {}).needs; k := n.key]
	keys == ["token", "client", "prereg"]
	[n.kind | some n in _d(_args, _without(["loopback", "probe", "prm|0", "as|0", "dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"])).needs] == ["loopback.open"]
	probe := _d(_args, _without(["probe", "prm|0", "as|0", "dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	probe.key == "probe"
	probe.url == "https://mcp.example.com/mcp"
	probe.json.method == "initialize"
	prm := _d(_args, _without(["prm|0", "as|0", "dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	prm.url == _prm_path
	asm := _d(_args, _without(["as|0", "dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	asm.url == "https://auth.example.com/.well-known/oauth-authorization-server"
	dcr := _d(_args, _without(["dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	dcr.url == "https://auth.example.com/register"
	dcr.json.application_type == "native"
	dcr.json.redirect_uris == [fx.redirect_uri]
	dcr.json.token_endpoint_auth_method == "none"
	[n.key | some n in _d(_args, _without(["verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"])).needs] == ["verifier", "state"]
}

test_authorization_url_has_pkce_state_resource_and_scopes if {
	w := _d(_args, _without(["callback", "exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	w.kind == "loopback.wait"
	w.timeout_ms == 300000
	w.url["$url"] == "https://auth.example.com/authorize"
	q := w.url.query
	q.code_challenge_method == "S256"
	q.code_challenge == {"$s256": {"$ref": "verifier#value"}}
	q.state == {"$ref": "state#value"}
	q.resource == "https://mcp.example.com/mcp"
	q.client_id == {"$ref": "dcr#client_id"}
	q.redirect_uri == fx.redirect_uri

	# the challenge's scope, and offline_access because the server lists it
	q.scope == "files:read offline_access"
}

test_code_exchange_sends_the_resource_and_verifier if {
	x := _d(_args, _without(["exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	x.key == "exchange"
	x.commit == true
	x.url == "https://auth.example.com/token"
	x.form.resource == "https://mcp.example.com/mcp"
	x.form.code_verifier == {"$ref": "verifier#value"}
	x.form.grant_type == "authorization_code"
	x.form.client_id == {"$ref": "dcr#client_id"}
}

test_stores_under_the_lock if {
	[n.key | some n in _d(_args, _without(["lock", "now@lock", "remote@lock"])).needs] == ["lock", "now@lock", "remote@lock"]
	_code(_d(_args, _with({"lock": "busy"}))) == "BUSY"
}

# Racing instances (issue 21 §3): the authorization lock is taken after discovery and
# before the registration, and read under it are the tokens another process may have
# stored meanwhile.
test_registers_and_authorizes_under_the_authorization_lock if {
	ks := ["authlock", "token@auth", "now@auth", "remote@auth", "dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"]
	l := _d(_args, _without(ks)).needs
	[n.key | some n in l] == ["authlock"]
	l[0].kind == "lock.acquire"
	l[0].name == "mcp-remote.authorize"
	l[0].wait_ms == 300000 + 60000
	[[n.key, n.after] | some n in _d(_args, _without(array.slice(ks, 1, count(ks)))).needs] == [["token@auth", "authlock"], ["now@auth", "authlock"], ["remote@auth", "authlock"]]
	_d(_args, _without(array.slice(ks, 4, count(ks)))).needs[0].key == "dcr"
	_code(_d(_args, _with({"authlock": "busy"}))) == "BUSY"
	_d({"connector": _c, "timeout_ms": 5000}, _without(ks)).needs[0].wait_ms == 65000
}

_fresh := fx.slot("token@auth", "t2", {
	"access_token": fx.desc("token@auth#access_token", "f7e5f7e5f7e5f7e5"),
	"issuer": _iss, "resource": "https://mcp.example.com/mcp", "expires_at": _now + 3600000,
	"token_endpoint": "https://auth.example.com/token", "client": "registered", "client_id_hash": fx.hash_a,
	"scopes": ["files:read"], "requested": ["files:read", "offline_access"],
	"refresh_token": fx.desc("token@auth#refresh_token", "5e5e5e5e5e5e5e5e"),
})

_stored_meanwhile := object.union(object.remove(_world, ["dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"]), {"token@auth": _fresh})

test_proxy_uses_what_another_process_authorized_meanwhile if {
	d := _d({"connector": _c, "www_authenticate": base64url.encode(_challenge), "status": 401}, _stored_meanwhile)
	d.status == "done"
	d.effects == []
	d.result.scopes == ["files:read"]
	d.result.issuer == _iss
	d.result.refresh_token == true
	d.result.registration == "dynamic"

	# with the digest of the token the server refused, another one is used too
	_d({"connector": _c, "www_authenticate": base64url.encode(_challenge), "status": 401, "rejected": "sha256:acce55acce55acce"}, _stored_meanwhile).status == "done"
}

_proxy_401 := {"connector": _c, "www_authenticate": base64url.encode(_challenge), "status": 401}

_registers_with(f) if _d(_proxy_401, object.union(_stored_meanwhile, f)).needs[0].key == "dcr"

test_proxy_authorizes_when_nothing_usable_was_stored_meanwhile if {
	a := _proxy_401

	# the refused token itself
	_d(object.union(a, {"rejected": "sha256:f7e5f7e5f7e5f7e5"}), _stored_meanwhile).needs[0].key == "dcr"

	# expiring, for another issuer, or another resource
	_registers_with({"token@auth": fx.slot("token@auth", "t2", object.union(_fresh.json, {"expires_at": _now + 30000}))})
	_registers_with({"token@auth": fx.slot("token@auth", "t2", object.union(_fresh.json, {"issuer": "https://other.example.com"}))})
	_registers_with({"token@auth": fx.slot("token@auth", "t2", object.union(_fresh.json, {"resource": "https://other.example.com/mcp"}))})

	# a person's mcp auth always authorizes
	_d(_args, _stored_meanwhile).needs[0].key == "dcr"
}

test_step_up_uses_a_token_stored_meanwhile_only_with_the_scopes if {
	h := base64url.encode(`Bearer error="insufficient_scope", scope="files:write"`)
	a := {"connector": _c, "www_authenticate": h, "status": 403, "step_up": 1}
	f := object.union(_stored_meanwhile, {"token": _held})
	_d(a, f).needs[0].key == "dcr"
	wide := fx.slot("token@auth", "t3", object.union(_fresh.json, {"scopes": ["files:read", "files:write"]}))
	_d(a, object.union(f, {"token@auth": wide})).status == "done"
}

test_done_stores_tokens_registration_and_mirror if {
	d := _d(_args, _world)
	d.status == "done"
	d.result == {
		"connector": _c, "issuer": _iss, "resource": "https://mcp.example.com/mcp",
		"scopes": ["files:read", "offline_access"], "requested": ["files:read", "offline_access"],
		"not_granted": [], "registration": "dynamic", "refresh_token": true, "grant": "authorization_code",
	}
	fx.kinds(d) == ["keyring.set", "keyring.set", "ledger.write", "event.emit"]
	reg := d.effects[0]
	reg.user == "mcp-remote:mcp_client"
	reg.value.issuer == _iss
	reg.value.source == "dcr"
	reg.value.redirect_uri == fx.redirect_uri
	tok := d.effects[1].value
	tok.issuer == _iss
	tok.resource == "https://mcp.example.com/mcp"
	tok.expires_at == _now + 3599000
	tok.refresh_token == {"$ref": "exchange#refresh_token"}
	tok.client == "registered"
	tok.client_id_hash == fx.hash_a
	tok.revocation_endpoint == "https://auth.example.com/revoke"
}

# ---------------------------------------------------------------------------------------
# arguments and the server

test_bad_arguments if {
	every args in [
		{}, {"connector": 1}, {"connector": _c, "scopes": "x"}, {"connector": _c, "timeout_ms": 5},
		{"connector": _c, "step_up": -1}, {"connector": _c, "step_up": 1.5}, {"connector": _c, "status": 500},
		{"connector": _c, "www_authenticate": 7},
	] {
		_code(_d(args, _world)) == "USAGE"
	}
}

test_unknown_and_not_remote if {
	_code(_d({"connector": "nope"}, _world)) == "UNKNOWN_CONNECTOR"
	_code(_d({"connector": "google"}, _world)) == "CONFIGURATION"
}

test_http_server_url_refused if {
	cat := {"connectors": {"r": {"type": "mcp_remote", "display_name": "R", "tier": "test", "url": "http://mcp.example.com/mcp"}}}
	d := fx.decide_with(fx.q1("mcp_auth", {"connector": "r"}, _world), cat)
	d.error.code == "INSECURE_TRANSPORT"
}

test_headless_is_refused_before_anything_is_sent if {
	d := _d(_args, _with({"loopback": {"status": "unavailable"}}))
	_code(d) == "INTERACTIVE_AUTH_REQUIRED"
	d.effects == []
}

# --no-browser: the loopback opens in paste mode, so the redirect address pasted back is
# read (issue 20 §1.1); without standard input the fix is the browser authorization.
test_paste_flow_opens_the_loopback_in_paste_mode if {
	n := _d({"connector": _c, "flow": "paste"}, _without(["loopback", "probe", "prm|0", "as|0", "dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	n.kind == "loopback.open"
	n.mode == "paste"
	not _d(_args, _without(["loopback", "probe", "prm|0", "as|0", "dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"])).needs[0].mode
	d := _d({"connector": _c, "flow": "paste"}, _with({"loopback": {"status": "unavailable"}}))
	_code(d) == "INTERACTIVE_AUTH_REQUIRED"
	contains(d.error.message, "needs standard input")
	d.error.fix == "grantwire mcp auth mcp-remote"
	_d({"connector": _c, "flow": "paste"}, _world).result.connector == _c
	_code(_d({"connector": _c, "flow": "device"}, _world)) == "USAGE"
}

test_step_up_limit if {
	_code(_d({"connector": _c, "step_up": 3}, _world)) == "CONNECTION_MISSING_SCOPES"
}

# ---------------------------------------------------------------------------------------
# the challenge

test_probe_failures if {
	_code(_d(_args, _with({"probe": {"status": 0, "error": "refused"}}))) == "PROVIDER_ERROR"
	contains(_d(_args, _with({"probe": {"status": 302, "headers": {}}})).error.message, "redirect")
}

test_given_challenge_skips_the_probe if {
	h := base64url.encode(_challenge)
	d := _d({"connector": _c, "www_authenticate": h, "status": 401}, object.remove(_world, ["probe"]))
	d.status == "done"
}

test_403_without_insufficient_scope if {
	h := base64url.encode(`Bearer error="invalid_token"`)
	d := _d({"connector": _c, "www_authenticate": h, "status": 403}, _world)
	contains(d.error.message, "without asking for more scopes")
}

test_hostile_resource_metadata_url if {
	h := base64url.encode(`Bearer resource_metadata="http://evil.example.com/prm"`)
	_code(_d({"connector": _c, "www_authenticate": h}, _world)) == "INSECURE_TRANSPORT"
}

# ---------------------------------------------------------------------------------------
# step-up

_held := fx.slot("token", "t1", {
	"access_token": fx.desc("token#access_token", "acce55acce55acce"),
	"issuer": _iss, "resource": "https://mcp.example.com/mcp", "expires_at": _now,
	"token_endpoint": "https://auth.example.com/token", "client": "registered", "client_id_hash": fx.hash_a,
	"scopes": ["files:read"], "requested": ["files:read"],
})

test_step_up_asks_for_the_union if {
	h := base64url.encode(`Bearer error="insufficient_scope", scope="files:write"`)
	f := _with({"token": _held})
	w := _d({"connector": _c, "www_authenticate": h, "status": 403, "step_up": 1}, object.remove(f, ["callback", "exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	w.url.query.scope == "files:read files:write offline_access"
}

# Headless, a step-up's fix names the union of the scopes (without the challenge, an
# authorization would ask for fewer); any other authorization's fix names none.
test_headless_step_up_fix_names_the_scopes if {
	h := base64url.encode(`Bearer error="insufficient_scope", scope="files:write"`)
	f := _with({"token": _held, "loopback": {"status": "unavailable"}})
	d := _d({"connector": _c, "www_authenticate": h, "status": 403, "step_up": 1}, f)
	_code(d) == "INTERACTIVE_AUTH_REQUIRED"
	d.error.fix == "grantwire mcp auth mcp-remote --scopes files:read,files:write --no-browser"
	g := _d({"connector": _c, "www_authenticate": h, "status": 403, "step_up": 1}, _with({"token": _held, "callback": {"status": "unavailable"}}))
	g.error.fix == "grantwire mcp auth mcp-remote --scopes files:read,files:write --no-browser"
	_d(_args, _with({"loopback": {"status": "unavailable"}})).error.fix == "grantwire mcp auth mcp-remote --no-browser"
}

test_futile_step_up if {
	h := base64url.encode(`Bearer error="insufficient_scope", scope="files:read"`)
	d := _d({"connector": _c, "www_authenticate": h, "status": 403}, _with({"token": _held}))
	_code(d) == "CONNECTION_MISSING_SCOPES"
	contains(d.error.message, "already holds them")
}

# ---------------------------------------------------------------------------------------
# protected resource metadata

test_prm_wrong_resource_is_refused if {
	d := _d(_args, _with({"prm|0": fx.http(200, fx.patch(_prm, {"resource": "https://other.example.com/mcp"}))}))
	_code(d) == "PROVIDER_ERROR"
	contains(d.error.message, "its resource is not this server")
}

test_prm_failure_and_next if {
	contains(_d(_args, _with({"prm|0": {"status": 500, "headers": {}}})).error.message, "protected resource metadata")
	d := _d(_args, _with({"prm|0": {"status": 404, "headers": {}}}))
	d.needs[0].url == _prm_root
}

test_legacy_fallback_without_metadata if {
	f := fx.patch(_world, {
		"probe": {"status": 401, "headers": {"www-authenticate": "Bearer"}},
		"prm|0": {"status": 404, "headers": {}}, "prm|1": {"status": 404, "headers": {}},
		"as|0": {"status": 404, "headers": {}}, "as|1": {"status": 404, "headers": {}},
		"callback": {"status": "callback", "params": {"code": fx.desc("callback#code", "c0dec0dec0dec0de")}},
	})
	d := _d(_args, object.remove(f, ["dcr", "verifier", "state", "callback", "exchange", "lock", "now@lock", "remote@lock"]))
	d.needs[0].url == "https://mcp.example.com/register"
	done := _d(_args, f)
	done.result.issuer == "https://mcp.example.com"
	done.result.resource == "https://mcp.example.com/mcp"
	done.result.requested == []
}

# ---------------------------------------------------------------------------------------
# authorization server metadata

test_as_metadata_refusals if {
	every p in [{"issuer": "https://evil.example.com"}, {"code_challenge_methods_supported": ["plain"]}, {"token_endpoint": "http://auth.example.com/token"}] {
		_code(_d(_args, _with({"as|0": fx.http(200, fx.patch(_as, p))}))) == "PROVIDER_ERROR"
	}
	contains(_d(_args, _with({"as|0": {"status": 200, "body": "too_large", "headers": {}}})).error.message, "1 MiB")
}

test_as_without_metadata_is_refused if {
	d := _d(_args, _with({"as|0": {"status": 404, "headers": {}}, "as|1": {"status": 404, "headers": {}}}))
	contains(d.error.message, "publishes no metadata")
}

test_too_many_scopes if {
	s := [concat("", ["s", format_int(i, 10)]) | some i in numbers.range(1, 70)]
	_code(_d({"connector": _c, "scopes": s}, _with({"probe": {"status": 401, "headers": {"www-authenticate": "Bearer"}}}))) == "CONFIGURATION"
}

# ---------------------------------------------------------------------------------------
# the client

_pre(iss, sec) := fx.slot("prereg", "p1", object.union(
	{"client_id": fx.desc("prereg#client_id", fx.id_b), "issuer": iss, "source": "preregistered"},
	_pre_secret(sec),
))

_pre_secret(true) := {"client_secret": fx.desc("prereg#client_secret", "5ec5ec5ec5ec5ec5")}

_pre_secret(false) := {}

test_preregistered_client_first if {
	d := _d(_args, _with({"prereg": _pre(_iss, true)}))
	d.result.registration == "preregistered"
	fx.kinds(d) == ["keyring.set", "ledger.write", "event.emit"]
	d.effects[0].value.client == "preregistered"
	d.effects[0].value.client_id_hash == fx.hash_b
	x := _d(_args, object.remove(_with({"prereg": _pre(_iss, true)}), ["exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	[r | some v in x.headers.Authorization["$basic"]; r := v["$ref"]] == ["prereg#client_id", "prereg#client_secret"]
}

test_preregistered_for_another_issuer_is_not_sent if {
	d := _d(_args, _with({"prereg": _pre("https://other.example.com", false)}))
	_code(d) == "CONFIGURATION"
	contains(d.error.message, "it was not sent there")
}

test_post_auth_method if {
	f := _with({"prereg": _pre(null, true), "as|0": fx.http(200, object.union(_as, {"token_endpoint_auth_methods_supported": ["client_secret_post"]}))})
	x := _d(_args, object.remove(f, ["exchange", "lock", "now@lock", "remote@lock"])).needs[0]
	x.form.client_secret["$ref"] == "prereg#client_secret"
	not x.headers.Authorization
}

test_client_id_metadata_document if {
	doc := {"version": 1, "servers": {_c: {"url": "https://mcp.example.com/mcp", "client_metadata_url": "https://grantwire.example/client.json"}}}
	f := _with({
		"mcp_remote": fx.entry("mcp_remote.json", [], doc),
		"as|0": fx.http(200, object.union(_as, {"client_id_metadata_document_supported": true})),
	})
	d := _d(_args, f)
	d.result.registration == "client_id_metadata_document"
	d.effects[0].value.source == "cimd"
	d.effects[0].value.client_id == "https://grantwire.example/client.json"
}

test_stored_registration_is_reused if {
	reg := fx.slot("client", "k1", {
		"client_id": fx.desc("client#client_id", fx.id_a), "issuer": _iss, "source": "dcr",
		"redirect_uri": fx.redirect_uri, "auth_method": "none",
	})
	d := _d(_args, object.remove(_with({"client": reg}), ["dcr"]))
	d.status == "done"
	fx.kinds(d) == ["keyring.set", "ledger.write", "event.emit"]
}

test_no_registration_path if {
	d := _d(_args, _with({"as|0": fx.http(200, object.remove(_as, ["registration_endpoint"]))}))
	_code(d) == "CONFIGURATION"
	contains(d.error.fix, "--client-id")
}

test_registration_refusals if {
	every dcr in [
		{"status": 0, "error": "refused"},
		{"status": 500, "headers": {}},
		fx.http(400, {"error": "invalid_redirect_uri"}),
		fx.http(400, {}),
		{"status": 201, "headers": {}, "json": [1]},
		fx.http(201, {}),
		fx.http(201, object.union(_dcr_json, {"logo_uri": "javascript:alert(1)"})),
		fx.http(201, object.union(_dcr_json, {"redirect_uris": ["javascript:alert(1)"]})),
		fx.http(201, object.union(_dcr_json, {"redirect_uris": ["http://127.0.0.1:9/other"]})),
	] {
		contains(_d(_args, _with({"dcr": dcr})).error.message, "registration endpoint")
	}
}

# Several refused members: the first is named, never a conflict (found by FuzzRemoteDCR).
test_registration_several_refusals if {
	d := _d(_args, _with({"dcr": fx.http(201, object.union(_dcr_json, {"tos_uri": 7, "client_uri": "javascript:x", "redirect_uris": ["javascript:y", 5]}))}))
	contains(d.error.message, "its answer's client_uri is refused")
	d.effects == []
	d2 := _d(_args, _with({"dcr": fx.http(201, object.union(_dcr_json, {"redirect_uris": ["javascript:y", 5]}))}))
	contains(d2.error.message, "its answer's redirect_uris are refused: only https URLs")
}

test_dcr_with_a_secret if {
	j := object.union(_dcr_json, {"client_secret": fx.desc("dcr#client_secret", "5ec5ec5ec5ec5ec5"), "token_endpoint_auth_method": "client_secret_post"})
	d := _d(_args, _with({"dcr": fx.http(201, j)}))
	d.effects[0].value.client_secret == {"$ref": "dcr#client_secret"}
	d.effects[0].value.auth_method == "client_secret_post"
	j2 := object.union(_dcr_json, {"client_secret": fx.desc("dcr#client_secret", "5ec5ec5ec5ec5ec5")})
	_d(_args, _with({"dcr": fx.http(201, j2)})).effects[0].value.auth_method == "client_secret_basic"
}

# ---------------------------------------------------------------------------------------
# the callback and the exchange

_cb(params) := {"callback": {"status": "callback", "params": params}}

_code_param := {"code": fx.desc("callback#code", "c0dec0dec0dec0de")}

test_callback_outcomes if {
	_code(_d(_args, _with({"callback": {"status": "unavailable"}}))) == "INTERACTIVE_AUTH_REQUIRED"
	_code(_d(_args, _with({"callback": {"status": "timeout"}}))) == "AUTHORIZATION_TIMEOUT"
	_code(_d(_args, _with(_cb(object.union(_code_param, {"iss": "https://evil.example.com"}))))) == "ISSUER_MISMATCH"
	_code(_d(_args, _with(_cb(_code_param)))) == "ISSUER_MISMATCH"
	_code(_d(_args, _with(_cb({"error": "access_denied", "iss": _iss})))) == "CONSENT_DENIED"
	contains(_d(_args, _with(_cb({"error": "server_error", "iss": _iss}))).error.message, "server_error")
	contains(_d(_args, _with(_cb({"iss": _iss}))).error.message, "no code")
}

test_exchange_failures if {
	_d(_args, _with({"exchange": fx.http(400, {"error": "invalid_grant"})})).status == "done"
	_d(_args, _with({"exchange": fx.http(400, {"error": "invalid_grant"})})).effects == []
	d := _d(_args, _with({"exchange": fx.http(200, fx.token_json("exchange", {"token_type": "mac"}))}))
	contains(d.error.message, "neither a Bearer nor a DPoP token")
}

test_granted_scopes_default_to_requested if {
	d := _d(_args, _with({"exchange": fx.http(200, fx.token_json("exchange", {}))}))
	d.result.scopes == ["files:read", "offline_access"]
	d.result.refresh_token == false
}

# Metadata announcing the server under another address: both named, and the fix adds it
# under the announced one (issue 20 §1.6).
test_metadata_of_another_address_names_both if {
	d := _d(_args, _with({"prm|0": fx.http(200, object.union(_prm, {"resource": "https://mcp2.example.com/mcp"}))}))
	_code(d) == "PROVIDER_ERROR"
	contains(d.error.message, "announces the resource https://mcp2.example.com/mcp, not https://mcp.example.com/mcp")
	d.error.fix == "grantwire mcp add mcp-remote --url https://mcp2.example.com/mcp"
	d2 := _d(_args, _with({"prm|0": fx.http(200, object.union(_prm, {"resource": "http://mcp2.example.com/mcp"}))}))
	d2.error.fix == ""
}

# A server that answers without a challenge and publishes no metadata needs no
# authorization: said so, before any authorization server is asked (issue 20 §1.7).
test_a_server_without_authorization_is_told_so if {
	f := _with({"probe": {"status": 200, "headers": {}}, "prm|0": {"status": 404, "headers": {}}, "prm|1": {"status": 404, "headers": {}}})
	d := _d(_args, f)
	_code(d) == "CONFIGURATION"
	contains(d.error.message, "needs no authorization")
	d.effects == []
}

# The timeout is said as it was given (issue 20 §1.11: 15 s is not "0m").
test_timeout_names_the_duration if {
	d := _d({"connector": _c, "timeout_ms": 15000}, _with({"callback": {"status": "timeout"}}))
	_code(d) == "AUTHORIZATION_TIMEOUT"
	contains(d.error.message, "no answer from the browser in 15s")
}
