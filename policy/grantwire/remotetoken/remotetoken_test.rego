package grantwire.remotetoken_test

import data.grantwire.fixtures_test as fx

_c := "mcp-remote"

_a := "builtin:coder"

_iss := "https://auth.example.com"

_now := 1800000000000

_args := {"connector": _c, "agent": _a}

_blob(k, expires_at, extra) := object.union(
	{
		"access_token": fx.desc(concat("", [k, "#access_token"]), "acce55acce55acce"),
		"refresh_token": fx.desc(concat("", [k, "#refresh_token"]), "7e7e7e7e7e7e7e7e"),
		"issuer": _iss, "resource": "https://mcp.example.com/mcp", "expires_at": expires_at,
		"token_endpoint": "https://auth.example.com/token", "revocation_endpoint": null,
		"client": "registered", "client_id_hash": fx.hash_a,
		"scopes": ["files:read"], "requested": ["files:read"],
	},
	extra,
)

_tok(k, expires_at) := fx.slot(k, "t1", _blob(k, expires_at, {}))

_reg(k) := fx.slot(k, "k1", {"client_id": fx.desc(concat("", [k, "#client_id"]), fx.id_a), "issuer": _iss, "source": "dcr", "auth_method": "none"})

_gate := {
	"grant": fx.entry(fx.grants_file, [_c, _a], ["use"]),
	"active": fx.entry(fx.activations_file, ["activations", _c, _a], true),
	"now": _now,
}

# An expired access token: the refresh happens under the lock.
_world := object.union(_gate, {
	"token": _tok("token", _now),
	"lock": "held", "now@lock": _now,
	"token@lock": _tok("token@lock", _now),
	"client@lock": _reg("client@lock"),
	"prereg@lock": fx.absent,
	"refresh": fx.http(200, fx.token_json("refresh", {"refresh_token": fx.new_refresh("refresh", "9e9e9e9e9e9e9e9e")})),
})

_d(args, f) := fx.decide(fx.q1("mcp_token", args, f))

_with(p) := fx.patch(_world, p)

_code(d) := d.error.code

test_bad_arguments if {
	every args in [{}, {"connector": _c}, {"connector": _c, "agent": ""}, {"connector": _c, "agent": _a, "rejected": 1}] {
		_code(_d(args, _world)) == "USAGE"
	}
}

test_gate_first if {
	[n.key | some n in _d(_args, {}).needs] == ["grant", "active", "now"]
	_code(_d({"connector": "nope", "agent": _a}, _world)) == "UNKNOWN_CONNECTOR"
	_code(_d({"connector": "google", "agent": _a}, _world)) == "CONFIGURATION"
	d := _d(_args, _with({"grant": fx.no_entry(fx.grants_file, [_c, _a])}))
	_code(d) == "AGENT_NOT_GRANTED"
	d.error.fix == "grantwire activations activate mcp-remote builtin:coder --scopes use"
	_code(_d(_args, _with({"active": fx.no_file(fx.activations_file, ["activations", _c, _a])}))) == "AGENT_NOT_ACTIVE"
}

test_the_credential_store_waits_for_the_gate if {
	d := _d(_args, object.remove(_world, ["token"]))
	[n.key | some n in d.needs] == ["token"]
	d.needs[0].fresh == false
	_code(_d(_args, _with({"token": fx.absent}))) == "NOT_CONNECTED"
}

test_a_fresh_token_is_handed_out if {
	d := _d(_args, _with({"token": _tok("token", _now + 3600000)}))
	d.result.access_token == {"$ref": "token#access_token"}
	d.result.digest == "sha256:acce55acce55acce"
	d.result.resource == "https://mcp.example.com/mcp"
	d.effects == []
}

test_a_refused_token_is_refreshed if {
	f := _with({"token": _tok("token", _now + 3600000)})
	d := _d({"connector": _c, "agent": _a, "rejected": "sha256:acce55acce55acce"}, object.remove(f, ["lock", "token@lock", "client@lock", "prereg@lock", "now@lock", "refresh"]))
	[n.key | some n in d.needs] == ["lock", "token@lock", "client@lock", "prereg@lock", "now@lock"]
}

test_refresh_sends_the_resource_and_is_committed if {
	d := _d(_args, object.remove(_world, ["refresh"]))
	r := d.needs[0]
	r.commit == true
	r.url == "https://auth.example.com/token"
	r.form.grant_type == "refresh_token"
	r.form.resource == "https://mcp.example.com/mcp"
	r.form.refresh_token == {"$ref": "token@lock#refresh_token"}
	r.form.client_id["$ref"] == "client@lock#client_id"
}

test_refreshed_tokens_are_saved if {
	d := _d(_args, _world)
	d.result.access_token == {"$ref": "refresh#access_token"}
	d.result.expires_at == _now + 3599000
	d.result.scopes == ["files:read"]
	[e.kind | some e in d.effects] == ["keyring.set"]
	v := d.effects[0].value
	v.refresh_token == {"$ref": "refresh#refresh_token"}
	v.issuer == _iss
	d.effects[0].expect == {"version": "t1"}

	# without a rotated refresh token the old one stays; a granted scope list is kept
	d2 := _d(_args, _with({"refresh": fx.http(200, fx.token_json("refresh", {"scope": "files:read files:write"}))}))
	d2.effects[0].value.refresh_token == {"$ref": "token@lock#refresh_token"}
	d2.result.scopes == ["files:read", "files:write"]
}

test_another_process_refreshed_first if {
	d := _d(_args, _with({"token@lock": _tok("token@lock", _now + 3600000)}))
	d.result.access_token == {"$ref": "token@lock#access_token"}
	d.effects == []
}

test_refresh_refusals if {
	_code(_d(_args, _with({"lock": "busy"}))) == "BUSY"
	_code(_d(_args, _with({"token@lock": fx.absent}))) == "NOT_CONNECTED"
	bad := _d(_args, _with({"token@lock": fx.not_json("token@lock", "t9")}))
	_code(bad) == "REAUTH_REQUIRED"
	bad.effects == [{"kind": "keyring.delete", "user": "mcp-remote:mcp_token", "expect": {"version": "t9"}}]
	no_rt := fx.slot("token@lock", "t1", object.remove(_blob("token@lock", _now, {}), ["refresh_token"]))
	contains(_d(_args, _with({"token@lock": no_rt})).error.message, "no refresh token")
	contains(_d(_args, _with({"client@lock": fx.absent})).error.message, "no longer stored")
	http_te := fx.slot("token@lock", "t1", _blob("token@lock", _now, {"token_endpoint": "http://auth.example.com/token"}))
	_code(_d(_args, _with({"token@lock": http_te}))) == "INSECURE_TRANSPORT"
}

test_preregistered_client_refreshes if {
	pre := fx.slot("prereg@lock", "p1", {
		"client_id": fx.desc("prereg@lock#client_id", fx.id_b),
		"client_secret": fx.desc("prereg@lock#client_secret", "5ec5ec5ec5ec5ec5"),
		"issuer": null, "auth_method": "client_secret_post", "source": "preregistered",
	})
	tok := fx.slot("token@lock", "t1", _blob("token@lock", _now, {"client": "preregistered", "client_id_hash": fx.hash_b}))
	d := _d(_args, object.remove(_with({"prereg@lock": pre, "token@lock": tok}), ["refresh"]))
	d.needs[0].form.client_secret["$ref"] == "prereg@lock#client_secret"
}

test_refresh_answers if {
	d := _d(_args, _with({"refresh": fx.http(400, {"error": "invalid_grant"})}))
	_code(d) == "REAUTH_REQUIRED"
	d.effects == [{"kind": "keyring.delete", "user": "mcp-remote:mcp_token", "expect": {"version": "t1"}}]
	c := _d(_args, _with({"refresh": fx.http(401, {"error": "invalid_client"})}))
	[e.user | some e in c.effects] == ["mcp-remote:mcp_token", "mcp-remote:mcp_client"]
	contains(_d(_args, _with({"refresh": {"status": 401, "headers": {}}})).error.message, "answered 401")
	_d(_args, _with({"refresh": {"status": 500, "headers": {}}})).error.code != "REAUTH_REQUIRED"
	contains(_d(_args, _with({"refresh": fx.http(200, fx.token_json("refresh", {"token_type": "mac"}))})).error.message, "neither a Bearer nor a DPoP")
}

# A local MCP server is not proxied: the fix is mcp run for the same agent (issue 20 §1.4).
test_a_local_server_points_at_mcp_run if {
	d := fx.decide(fx.q1("mcp_token", {"connector": "mcp-github", "agent": _a}, _gate))
	d.error.code == "CONFIGURATION"
	d.error.fix == "grantwire mcp run mcp-github --agent builtin:coder"
	d2 := fx.decide(fx.q1("mcp_token", {"connector": "google", "agent": _a}, _gate))
	d2.error.fix == "grantwire mcp list"
}
