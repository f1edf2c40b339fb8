package grantwire.forwarded_test

import data.grantwire.fixtures_test as fx

_args := {"provider": "google", "scopes": ["openid", "gmail.readonly"], "account_email": "user@example.com", "grant_agents": ["builtin:chat"]}

_secrets := {"arg": fx.arg({"client_id": fx.id_b, "client_secret": "5ec5ec5ec5ec5ec5", "refresh_token": "4e44e44e4e44e44e"})}

_import(args, f) := fx.decide(fx.q1("import_forwarded", args, f))

_now := 1700000300000

_locked(client, conn, token, state) := object.union(object.union(_secrets, {"agents": fx.no_agents}), {
	"lock": "held", "client@lock": client, "conn@lock": conn, "token@lock": token,
	"now@lock": _now, "state@lock": state,
	"grant|builtin:chat": fx.no_entry(fx.grants_file, ["google", "builtin:chat"]),
})

_fresh := _locked(fx.absent, fx.absent, fx.absent, fx.no_file(fx.state_file, ["google"]))

test_usage if {
	msg := "import_forwarded needs provider, scopes, account_email, grant_agents (and optional account_type), with client_id and refresh_token as secret arguments"
	every args in [
		object.remove(_args, ["provider"]),
		object.remove(_args, ["scopes"]),
		object.remove(_args, ["account_email"]),
		object.remove(_args, ["grant_agents"]),
		fx.patch(_args, {"scopes": "openid"}),
		fx.patch(_args, {"grant_agents": [1]}),
		fx.patch(_args, {"account_email": 5}),
		fx.patch(_args, {"account_type": 5}),
	] {
		_import(args, _secrets) == fx.failed(fx.usage(msg), [])
	}
	_import(fx.patch(_args, {"provider": "nope"}), _secrets).error.code == "UNKNOWN_CONNECTOR"
	_import(fx.patch(_args, {"provider": "mcp-github"}), _secrets) == fx.failed(
		fx.err("CONFIGURATION", "configuration error: mcp-github is not an OAuth provider; only OAuth connections can be forwarded", "", {"connector": "mcp-github"}),
		[],
	)
}

test_secret_arguments if {
	_import(_args, {}) == fx.failed(fx.usage("the forwarded connection needs client_id (the host application's OAuth client id)"), [])
	_import(_args, {"arg": fx.arg({"client_id": fx.id_b})}) == fx.failed(fx.usage("the forwarded connection needs refresh_token"), [])
	_import(fx.patch(_args, {"scopes": []}), _secrets) == fx.failed(fx.usage("the forwarded connection needs the scopes its consent granted (scopes)"), [])
	_import(_args, {"arg": fx.arg({"client_id": fx.id_b, "refresh_token": "4e44e44e4e44e44e"})}) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: google requires a client secret, and none was forwarded",
			"grantwire import google --from-stdin", {"connector": "google", "missing": "client_secret"},
		),
		[],
	)
}

test_agents_are_checked_before_anything_is_locked if {
	_import(_args, _secrets) == fx.need([{"key": "agents", "kind": "ledger.read", "ledger": "agents.json", "path": []}])
	f := object.union(_secrets, {"agents": fx.no_agents})
	_import(fx.patch(_args, {"grant_agents": ["builtin:chat", "installed:ghost"]}), f) == fx.failed(
		fx.err("UNKNOWN_AGENT", "unknown agent(s): installed:ghost; nothing was written", "grantwire agents list", {"agent_ids": ["installed:ghost"]}),
		[],
	)
	bad := object.union(_secrets, {"agents": fx.corrupt(fx.agents_file, [], "bad")})
	_import(_args, bad).error.message == "the agents ledger at /home/u/.grantwire/agents.json is unreadable (bad); nothing was changed; fix: mv /home/u/.grantwire/agents.json /home/u/.grantwire/agents.json.corrupt"
	_import(fx.patch(_args, {"grant_agents": []}), bad).needs[0].key == "lock"
}

test_the_forwarded_scopes_must_cover_what_the_agents_declare if {
	f := object.union(_secrets, {"agents": fx.no_agents})
	_import(fx.patch(_args, {"scopes": ["openid"]}), f) == fx.failed(
		fx.err(
			"SCOPE_MISMATCH",
			"the forwarded google consent lacks gmail.readonly; a refresh can never widen scope, so nothing was written. Re-consent in the host application with all of: gmail.readonly openid",
			"",
			{"connector": "google", "missing_scopes": ["gmail.readonly"], "required_scopes": ["gmail.readonly", "openid"]},
		),
		[],
	)
}

test_the_lock if {
	f := object.union(_secrets, {"agents": fx.no_agents})
	_import(_args, f) == fx.need([
		{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 5000},
		{"key": "client@lock", "kind": "keyring.get", "user": "provider:google", "fresh": true, "after": "lock"},
		{"key": "conn@lock", "kind": "keyring.get", "user": "google:default", "fields": ["refresh_token"], "fresh": true, "after": "lock"},
		{"key": "token@lock", "kind": "keyring.get", "user": "google:access_token", "fresh": true, "after": "lock"},
		{"key": "now@lock", "kind": "clock.now", "after": "lock"},
		{"key": "state@lock", "kind": "ledger.read", "ledger": "connectors/state.json", "path": ["google"], "after": "lock"},
		{"key": "grant|builtin:chat", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["google", "builtin:chat"], "after": "lock"},
	])
	_import(_args, object.union(f, {"lock": "busy"})).error.code == "BUSY"
}

_conn_blob(account_type) := object.union(
	{
		"account_email": "user@example.com", "client_id_hash": fx.hash_b,
		"connected_at": {"$number": "1700000300.000"},
		"refresh_token": {"$ref": "arg#refresh_token"},
		"scopes": ["gmail.readonly", "openid"],
	},
	account_type,
)

test_import_into_an_empty_store if {
	_import(_args, _fresh) == fx.done(
		{
			"provider": "google", "account_email": "user@example.com", "scopes": ["gmail.readonly", "openid"],
			"connected_at": _now, "grant_agents": ["builtin:chat"], "forwarded": true, "warnings": [],
		},
		[
			{
				"kind": "keyring.set", "user": "provider:google",
				"value": {"client_id": {"$ref": "arg#client_id"}, "client_secret": {"$ref": "arg#client_secret"}},
				"expect": {"found": false},
				"undo": [{"kind": "keyring.delete", "user": "provider:google"}],
			},
			{
				"kind": "keyring.set", "user": "google:default", "value": _conn_blob({}),
				"expect": {"found": false},
				"undo": [{"kind": "keyring.delete", "user": "google:default"}],
			},
			{
				"kind": "keyring.delete", "user": "google:access_token",
				"undo": [{"kind": "keyring.delete", "user": "google:access_token"}],
			},
			{"kind": "ledger.write", "ledger": "connectors/state.json", "ops": [{"path": ["google"], "value": {
				"configured": true, "account": "user@example.com", "scopes": ["gmail.readonly", "openid"],
				"connected_at": _now, "client_id_hash": fx.hash_b, "tenant": null,
			}}]},
			{"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [{"path": ["google", "builtin:chat"], "value": ["gmail.readonly"], "expect": {"exists": false}}]},
			{"kind": "event.emit", "type": "connector.grant.changed", "payload": {"connector_id": "google", "agent_id": "builtin:chat", "scopes": ["gmail.readonly"]}},
			{"kind": "event.emit", "type": "connector.configured", "payload": {"connector_id": "google", "account_id": "user@example.com"}},
		],
	)
}

test_import_over_a_stored_client_and_connection_undoes_to_what_was_read if {
	conn := fx.slot("conn@lock", "c7", object.union(fx.conn_json("conn@lock", fx.hash_a, ["openid"], fx.refresh_d), {"account_type": "work"}))
	f := _locked(fx.slot("client@lock", "k7", {}), conn, fx.slot("token@lock", "t7", {}), fx.state_entry("google"))
	d := _import(_args, f)
	array.slice(d.effects, 0, 3) == [
		{
			"kind": "keyring.set", "user": "provider:google",
			"value": {"client_id": {"$ref": "arg#client_id"}, "client_secret": {"$ref": "arg#client_secret"}},
			"expect": {"version": "k7"},
			"undo": [{"kind": "keyring.set", "user": "provider:google", "value": {"$ref": "client@lock#value"}}],
		},
		{
			"kind": "keyring.set", "user": "google:default", "value": _conn_blob({"account_type": "work"}),
			"expect": {"version": "c7"},
			"undo": [{"kind": "keyring.set", "user": "google:default", "value": {"$ref": "conn@lock#value"}}],
		},
		{
			"kind": "keyring.delete", "user": "google:access_token",
			"undo": [{"kind": "keyring.set", "user": "google:access_token", "value": {"$ref": "token@lock#value"}}],
		},
	]

	# an account type given wins over the stored one
	_import(fx.patch(_args, {"account_type": "personal"}), f).effects[1].value.account_type == "personal"
}

test_import_details if {
	# a provider that needs no secret; agents that declare nothing get the forwarded scopes
	args := {"provider": "github", "scopes": ["repo"], "account_email": "octo@example.com", "grant_agents": ["builtin:plain", "builtin:coder"]}
	f := object.union(
		object.union({"arg": fx.arg({"client_id": fx.id_b, "refresh_token": "4e44e44e4e44e44e"}), "agents": fx.no_agents}, {
			"lock": "held", "client@lock": fx.absent, "conn@lock": fx.absent, "token@lock": fx.absent,
			"now@lock": _now, "state@lock": fx.corrupt(fx.state_file, ["github"], "bad"),
		}),
		{
			"grant|builtin:coder": fx.no_entry(fx.grants_file, ["github", "builtin:coder"]),
			"grant|builtin:plain": fx.entry(fx.grants_file, ["github", "builtin:plain"], ["x"]),
		},
	)
	d := _import(args, f)
	d.effects[0].value == {"client_id": {"$ref": "arg#client_id"}, "client_secret": ""}
	d.result.grant_agents == ["builtin:coder", "builtin:plain"]
	d.result.warnings == ["/home/u/.grantwire/connectors/state.json is unreadable, so it was not updated (it only mirrors connections for listings): mv /home/u/.grantwire/connectors/state.json /home/u/.grantwire/connectors/state.json.corrupt"]
	d.effects[3] == {"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [
		{"path": ["github", "builtin:coder"], "value": ["repo"], "expect": {"exists": false}},
		{"path": ["github", "builtin:plain"], "value": ["repo"], "expect": {"value": ["x"]}},
	]}
	fx.kinds(d) == ["keyring.set", "keyring.set", "keyring.delete", "ledger.write", "event.emit", "event.emit", "event.emit"]
}
