package grantwire.remote_test

import data.grantwire.fixtures_test as fx

_now := 1800000000000

_url := "https://files.example.com/mcp"

_add_facts := {
	"lock": "held",
	"remote@lock": fx.no_file("mcp_remote.json", []),
	"now@lock": _now,
	"token@lock": fx.absent,
	"client@lock": fx.absent,
}

_add(args, f) := fx.decide(fx.q1("mcp_add", args, f))

_code(d) := d.error.code

# ---------------------------------------------------------------------------------------
# mcp_add

test_add_records_the_server if {
	d := _add({"connector": "files", "url": _url, "scopes": ["b", "a"]}, _add_facts)
	d.result == {"connector": "files", "url": _url, "scopes": ["a", "b"], "preregistered": false, "reset": false, "grant": "authorization_code"}
	fx.kinds(d) == ["keyring.delete", "ledger.write", "event.emit"]
	d.effects[0].user == "files:mcp_preregistered"
	ops := d.effects[1].ops
	ops[0] == {"path": ["version"], "value": 1}
	ops[1].path == ["servers", "files"]
	ops[1].value == {"url": _url, "scopes": ["a", "b"], "added_at": _now, "preregistered": null}
}

test_add_needs_the_lock_first if {
	[n.key | some n in _add({"connector": "files", "url": _url}, {}).needs] == ["lock", "remote@lock", "now@lock", "token@lock", "client@lock"]
	_code(_add({"connector": "files", "url": _url}, fx.patch(_add_facts, {"lock": "busy"}))) == "BUSY"
}

test_add_preregistered_client_with_secret if {
	f := object.union(_add_facts, {"arg": fx.arg({"client_secret": "5ec5ec5ec5ec5ec5"})})
	d := _add({"connector": "files", "url": _url, "client_id": "grantwire", "issuer": "https://auth.example.com"}, f)
	d.result.preregistered == true
	d.effects[0] == {"kind": "keyring.set", "user": "files:mcp_preregistered", "value": {
		"client_id": "grantwire", "issuer": "https://auth.example.com", "source": "preregistered",
		"client_secret": {"$ref": "arg#client_secret"},
	}}
	d.effects[1].ops[1].value.preregistered == {"issuer": "https://auth.example.com"}
}

test_add_client_metadata_document if {
	d := _add({"connector": "files", "url": _url, "client_metadata_url": "https://grantwire.example/client.json"}, _add_facts)
	d.effects[1].ops[1].value.client_metadata_url == "https://grantwire.example/client.json"
}

test_add_refusals if {
	every args in [
		{"connector": "files"}, {"connector": "files", "url": 1}, {"connector": "files", "url": _url, "scopes": [1]},
		{"connector": "files", "url": _url, "client_id": 2},
	] {
		_code(_add(args, _add_facts)) == "USAGE"
	}
	_code(_add({"connector": "-bad", "url": _url}, _add_facts)) == "USAGE"
	_code(_add({"connector": "google", "url": _url}, _add_facts)) == "CONFIGURATION"
	every p in [
		[{"url": "http://files.example.com/mcp"}, "server URL is refused"],
		[{"url": "https://files.example.com/mcp#x"}, "fragment"],
		[{"scopes": [concat("", ["s", format_int(i, 10)]) | some i in numbers.range(1, 65)]}, "at most 64 scopes"],
		[{"issuer": "https://auth.example.com"}, "give --client-id too"],
		[{"client_id": "x", "issuer": "http://auth.example.com"}, "issuer is refused"],
		[{"client_metadata_url": "http://grantwire.example/c.json"}, "must be an https URL"],
		[{"client_metadata_url": "https://grantwire.example/"}, "must have a path"],
		[{"client_metadata_url": "https://grantwire.example/c.json#x"}, "fragment"],
		[{"client_metadata_url": "https://u:p@grantwire.example/c.json"}, "metadata document URL is refused"],
	] {
		d := _add(object.union({"connector": "files", "url": _url}, p[0]), _add_facts)
		_code(d) == "CONFIGURATION"
		contains(d.error.message, p[1])
	}
	s := object.union(_add_facts, {"arg": fx.arg({"client_secret": "5ec5ec5ec5ec5ec5"})})
	contains(_add({"connector": "files", "url": _url}, s).error.message, "needs a client id")
}

_old := {"version": 1, "servers": {"files": {
	"url": "https://old.example.com/mcp", "scopes": [], "added_at": 1,
	"auth": {"issuer": "https://auth.example.com", "scopes": ["read"]},
}}}

test_changing_the_url_forgets_tokens_and_registration if {
	f := fx.patch(_add_facts, {"remote@lock": fx.entry("mcp_remote.json", [], _old)})
	d := _add({"connector": "files", "url": _url}, f)
	d.result.reset == true
	[e.user | some e in d.effects; e.kind == "keyring.delete"] == ["files:mcp_preregistered", "files:mcp_token", "files:mcp_client"]
	d.effects[3].ops == [{"path": ["servers", "files"], "value": {"url": _url, "scopes": [], "added_at": 1, "preregistered": null}}]

	# the same URL keeps the authorization's mirror
	same := _add({"connector": "files", "url": "https://old.example.com/mcp"}, f)
	same.result.reset == false
	same.effects[1].ops[0].value.auth == _old.servers.files.auth
}

# ---------------------------------------------------------------------------------------
# mcp_remote_list

_list_facts := {
	"mcp_remote": fx.entry("mcp_remote.json", [], _old),
	"grants": fx.entry(fx.grants_file, [], {"files": {"builtin:coder": ["use"]}}),
	"actives": fx.entry(fx.activations_file, ["activations"], {"files": {"builtin:coder": true}}),
}

test_list_shows_catalog_and_added_servers if {
	d := fx.decide(fx.q1("mcp_remote_list", {}, _list_facts))
	[r.id | some r in d.result.servers] == ["files", "mcp-remote"]
	f := d.result.servers[0]
	f.in_catalog == false
	f.authorized == true
	f.issuer == "https://auth.example.com"
	f.granted_scopes == ["read"]
	f.active_for == ["builtin:coder"]
	r := d.result.servers[1]
	r.in_catalog == true
	r.authorized == false
	r.issuer == null
}

test_list_for_an_agent if {
	d := fx.decide(fx.q1("mcp_remote_list", {"agent": "builtin:coder"}, _list_facts))
	[r.id | some r in d.result.servers] == ["files"]
	[r.id | some r in fx.decide(fx.q1("mcp_remote_list", {"agent": "builtin:plain"}, _list_facts)).result.servers] == []
	_code(fx.decide(fx.q1("mcp_remote_list", {"agent": 1}, _list_facts))) == "USAGE"
	[n.key | some n in fx.decide(fx.q1("mcp_remote_list", {}, {})).needs] == ["grants", "actives"]
}

# ---------------------------------------------------------------------------------------
# mcp_logout

_tok := fx.slot("token@lock", "t1", {
	"access_token": fx.desc("token@lock#access_token", "acce55acce55acce"),
	"refresh_token": fx.desc("token@lock#refresh_token", "7e7e7e7e7e7e7e7e"),
	"issuer": "https://auth.example.com", "resource": _url, "expires_at": _now,
	"token_endpoint": "https://auth.example.com/token", "revocation_endpoint": "https://auth.example.com/revoke",
	"client": "registered", "client_id_hash": fx.hash_a, "scopes": ["read"], "requested": ["read"],
})

_logout_facts := {
	"mcp_remote": fx.entry("mcp_remote.json", [], _old),
	"lock": "held",
	"token@lock": _tok,
	"client@lock": fx.slot("client@lock", "k1", {"client_id": fx.desc("client@lock#client_id", fx.id_a), "issuer": "https://auth.example.com", "source": "dcr", "auth_method": "none"}),
	"prereg@lock": fx.absent,
	"remote@lock": fx.entry("mcp_remote.json", [], _old),
}

_logout(args, f) := fx.decide(fx.q1("mcp_logout", args, f))

test_logout_revokes_and_deletes if {
	d := _logout({"connector": "files"}, _logout_facts)
	d.result == {"connector": "files", "had_tokens": true, "revoked": true}
	fx.kinds(d) == ["http.send", "keyring.delete", "keyring.delete", "ledger.write", "event.emit"]
	r := d.effects[0]
	r.url == "https://auth.example.com/revoke"
	r.form.token["$ref"] == "token@lock#refresh_token"
	r.form.token_type_hint == "refresh_token"
	d.effects[3].ops == [{"path": ["servers", "files", "auth"], "delete": true}]
}

test_logout_without_a_revocation_endpoint_or_refresh_token if {
	no_rt := fx.slot("token@lock", "t1", object.remove(_tok.json, ["refresh_token"]))
	d := _logout({"connector": "files"}, fx.patch(_logout_facts, {"token@lock": no_rt}))
	d.effects[0].form.token_type_hint == "access_token"
	no_rev := fx.slot("token@lock", "t1", object.union(_tok.json, {"revocation_endpoint": null}))
	d2 := _logout({"connector": "files"}, fx.patch(_logout_facts, {"token@lock": no_rev}))
	d2.result.revoked == false
	d3 := _logout({"connector": "files"}, fx.patch(_logout_facts, {"token@lock": fx.absent, "remote@lock": fx.no_file("mcp_remote.json", [])}))
	fx.kinds(d3) == ["keyring.delete", "keyring.delete", "event.emit"]
	d3.result.had_tokens == false
}

test_logout_with_a_preregistered_client if {
	pre := fx.slot("prereg@lock", "p1", {
		"client_id": fx.desc("prereg@lock#client_id", fx.id_b),
		"client_secret": fx.desc("prereg@lock#client_secret", "5ec5ec5ec5ec5ec5"),
		"auth_method": "client_secret_basic",
	})
	tok := fx.slot("token@lock", "t1", object.union(_tok.json, {"client": "preregistered", "client_id_hash": fx.hash_b}))
	d := _logout({"connector": "files"}, fx.patch(_logout_facts, {"prereg@lock": pre, "token@lock": tok}))
	[x["$ref"] | some x in d.effects[0].headers.Authorization["$basic"]] == ["prereg@lock#client_id", "prereg@lock#client_secret"]
}

test_logout_refusals if {
	_code(_logout({}, _logout_facts)) == "USAGE"
	_code(_logout({"connector": "nope"}, _logout_facts)) == "UNKNOWN_CONNECTOR"
	_code(_logout({"connector": "google"}, _logout_facts)) == "CONFIGURATION"
	_code(_logout({"connector": "files"}, fx.patch(_logout_facts, {"lock": "busy"}))) == "BUSY"
	[n.key | some n in _logout({"connector": "files"}, {"mcp_remote": fx.entry("mcp_remote.json", [], _old)}).needs] == ["lock", "token@lock", "client@lock", "prereg@lock", "remote@lock"]
}

# ---------------------------------------------------------------------------------------
# mcp_remove (issue 20 §1.5)

_remove_facts := object.union(_logout_facts, {
	"grants@lock": fx.entry(fx.grants_file, ["files"], {"builtin:chat": ["use"], "builtin:coder": ["use"]}),
	"actives@lock": fx.entry(fx.activations_file, ["activations", "files"], {"builtin:chat": true, "builtin:coder": false}),
	"rules@lock": fx.no_entry(fx.activations_file, ["tools", "files"]),
})

_remove(args, f) := fx.decide(fx.q1("mcp_remove", args, f))

test_remove_revokes_and_wipes_everything if {
	d := _remove({"connector": "files"}, _remove_facts)
	d.result == {
		"connector": "files", "had_tokens": true, "revoked": true,
		"revoked_grants": ["builtin:chat", "builtin:coder"], "deactivated": ["builtin:chat"],
	}
	fx.kinds(d) == [
		"http.send", "keyring.delete", "keyring.delete", "keyring.delete", "ledger.write",
		"ledger.write", "event.emit", "event.emit", "ledger.write", "event.emit", "event.emit",
	]
	d.effects[4].ops == [{"path": ["servers", "files"], "delete": true}]
	d.effects[5].ops[0].path == ["files"]
	d.effects[8].ops[0].path == ["activations", "files"]
}

test_remove_deletes_the_tool_rules if {
	rules := {"builtin:chat": ["read"]}
	d := _remove({"connector": "files"}, fx.patch(_remove_facts, {"rules@lock": fx.entry(fx.activations_file, ["tools", "files"], rules)}))
	{"kind": "ledger.write", "ledger": "connectors/activations.json", "ops": [{
		"path": ["tools", "files"], "delete": true, "prune": true,
		"expect": {"value": rules},
	}]} in d.effects
}

test_remove_with_nothing_granted if {
	f := fx.patch(_remove_facts, {
		"token@lock": fx.absent,
		"grants@lock": fx.no_entry(fx.grants_file, ["files"]),
		"actives@lock": fx.no_file(fx.activations_file, ["activations", "files"]),
	})
	d := _remove({"connector": "files"}, f)
	fx.kinds(d) == ["keyring.delete", "keyring.delete", "keyring.delete", "ledger.write", "event.emit"]
	d.result.revoked_grants == []
	d.result.had_tokens == false
}

test_remove_refusals if {
	_code(_remove({}, _remove_facts)) == "USAGE"
	_code(_remove({"connector": "nope"}, _remove_facts)) == "UNKNOWN_CONNECTOR"
	_code(_remove({"connector": "google"}, _remove_facts)) == "CONFIGURATION"
	_remove({"connector": "mcp-remote"}, _remove_facts).error.fix == "grantwire mcp logout mcp-remote"
	_code(_remove({"connector": "files"}, fx.patch(_remove_facts, {"lock": "busy"}))) == "BUSY"
	[n.key | some n in _remove({"connector": "files"}, {"mcp_remote": fx.entry("mcp_remote.json", [], _old)}).needs] == ["lock", "token@lock", "client@lock", "prereg@lock", "remote@lock", "grants@lock", "actives@lock", "rules@lock"]
}

# ---------------------------------------------------------------------------------------
# mcp_add with a machine grant (issue 21 §1)

_machine_add(args, secrets) := _add(
	object.union({"connector": "files", "url": _url, "client_id": "bot"}, args),
	object.union(_add_facts, {"arg": fx.arg(secrets)}),
)

test_add_client_credentials_with_a_secret if {
	d := _machine_add({"grant": "client_credentials"}, {"client_secret": "5ec5ec5ec5ec5ec5"})
	d.result.grant == "client_credentials"
	d.effects[0].value.client_secret == {"$ref": "arg#client_secret"}
	d.effects[1].ops[1].value.grant == "client_credentials"
	not d.effects[1].ops[1].value.idp
}

test_add_client_credentials_with_a_private_key if {
	d := _machine_add({"grant": "client_credentials"}, {"private_key": "4e94e94e94e94e94"})
	d.effects[0].value.private_key == {"$ref": "arg#private_key"}
	not d.effects[0].value.client_secret
}

test_add_jwt_bearer_keeps_the_assertion if {
	d := _machine_add({"grant": "jwt_bearer"}, {"assertion": "a55e47a55e47a55e"})
	d.effects[0].value.assertion == {"$ref": "arg#assertion"}
	d.effects[1].ops[1].value.grant == "jwt_bearer"
}

test_add_id_jag_records_the_identity_provider if {
	d := _machine_add(
		{"grant": "id_jag", "idp_token_endpoint": "https://idp.example.com/token", "idp_client_id": "idp-client"},
		{"assertion": "a55e47a55e47a55e", "client_secret": "5ec5ec5ec5ec5ec5"},
	)
	d.effects[1].ops[1].value.idp == {"token_endpoint": "https://idp.example.com/token", "client_id": "idp-client"}
	d2 := _machine_add({"grant": "id_jag", "idp_token_endpoint": "https://idp.example.com/token"}, {"assertion": "a55e47a55e47a55e"})
	d2.effects[1].ops[1].value.idp.client_id == null
}

test_add_machine_grant_refusals if {
	cases := [
		[{"grant": "password"}, {"client_secret": "5ec5ec5ec5ec5ec5"}, "is not one of"],
		[{"grant": "client_credentials"}, {}, "needs the client's secret or private key"],
		[{"grant": "client_credentials"}, {"client_secret": "5ec5ec5ec5ec5ec5", "private_key": "4e94e94e94e94e94"}, "not both"],
		[{"grant": "jwt_bearer"}, {}, "needs the assertion (the workload's JWT)"],
		[{"grant": "id_jag", "idp_token_endpoint": "https://idp.example.com/token"}, {}, "needs the assertion (the identity provider's ID token)"],
		[{"grant": "client_credentials"}, {"client_secret": "5ec5ec5ec5ec5ec5", "assertion": "a55e47a55e47a55e"}, "an assertion goes with"],
		[{}, {"private_key": "4e94e94e94e94e94"}, "a private key goes with a machine grant"],
		[{"grant": "id_jag"}, {"assertion": "a55e47a55e47a55e"}, "needs the identity provider's token endpoint"],
		[{"grant": "jwt_bearer", "idp_client_id": "x"}, {"assertion": "a55e47a55e47a55e"}, "goes with the id_jag grant"],
		[{"grant": "id_jag", "idp_token_endpoint": "http://idp.example.com/token"}, {"assertion": "a55e47a55e47a55e"}, "token endpoint is refused"],
		[{"grant": "id_jag", "idp_token_endpoint": "https://idp.example.com/token#x"}, {"assertion": "a55e47a55e47a55e"}, "must not have a fragment"],
	]
	every c in cases {
		d := _machine_add(c[0], c[1])
		d.error.code == "CONFIGURATION"
		contains(d.error.message, c[2])
	}
	d := _add({"connector": "files", "url": _url, "grant": "jwt_bearer"}, object.union(_add_facts, {"arg": fx.arg({"assertion": "a55e47a55e47a55e"})}))
	contains(d.error.message, "needs --client-id")
}
