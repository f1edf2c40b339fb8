package grantwire.disconnect_test

import data.grantwire.fixtures_test as fx

_disconnect(c, f) := fx.decide(fx.q1("disconnect", {"connector": c}, object.union({"probe": fx.absent}, f)))

_ledgers(grants, actives) := {
	"lock": "held",
	"grants": grants,
	"actives": actives,
	"rules": fx.no_entry(fx.activations_file, ["tools"]),
}

_grants(c, v) := fx.entry(fx.grants_file, [c], v)

_actives(c, v) := fx.entry(fx.activations_file, ["activations", c], v)

# An OAuth provider with everything stored.
_google := object.union(
	object.union(_ledgers(_grants("google", {"builtin:chat": ["openid"], "builtin:coder": []}), _actives("google", {"builtin:chat": true, "builtin:coder": false})), {
		"conn": fx.conn("conn", fx.hash_a, ["openid"]),
		"state": fx.state_entry("google"),
	}),
	fx.client("client", fx.id_a),
)

_wipe_conn(c) := [
	{"kind": "keyring.delete", "user": concat("", [c, ":default"])},
	{"kind": "keyring.delete", "user": concat("", [c, ":access_token"])},
]

_disconnected(c) := {"kind": "event.emit", "type": "connector.disconnected", "payload": {"connector_id": c}}

test_usage if {
	fx.decide(fx.q1("disconnect", {}, {})) == fx.failed(fx.usage("disconnect needs connector"), [])
	fx.decide(fx.q1("disconnect", {"connector": 5}, {})) == fx.failed(fx.usage("disconnect needs connector"), [])
	_disconnect("nope", {}).error.code == "UNKNOWN_CONNECTOR"
}

test_needs_under_the_lock if {
	# the credential store is probed before the lock: unreachable, nothing is written
	fx.decide(fx.q("disconnect", {"connector": "google"}, {})) == fx.need([{"key": "probe", "kind": "keyring.get", "user": "google:default", "fresh": true}])
	fx.decide(fx.q("disconnect", {"connector": "google"}, {"probe": fx.absent})) == fx.need([
		{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 5000},
		{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["google"], "after": "lock"},
		{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "google"], "after": "lock"},
		{"key": "rules", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["tools", "google"], "after": "lock"},
		{"key": "conn", "kind": "keyring.get", "user": "google:default", "fields": ["refresh_token"], "fresh": true, "after": "lock"},
		{"key": "state", "kind": "ledger.read", "ledger": "connectors/state.json", "path": ["google"], "after": "lock"},
		{"key": "client", "kind": "keyring.get", "user": "provider:google", "fields": ["client_id", "client_secret"], "fresh": true, "after": "lock"},
		{"key": "client@env_id", "kind": "env.get", "name": "GOOGLE_CLIENT_ID", "secret": true, "after": "lock"},
		{"key": "client@env_secret", "kind": "env.get", "name": "GOOGLE_CLIENT_SECRET", "secret": true, "after": "lock"},
	])
	fx.decide(fx.q("disconnect", {"connector": "mcp-github"}, {"probe": fx.absent})) == fx.need([
		{"key": "lock", "kind": "lock.acquire", "name": "mcp-github", "wait_ms": 5000},
		{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["mcp-github"], "after": "lock"},
		{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "mcp-github"], "after": "lock"},
		{"key": "rules", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["tools", "mcp-github"], "after": "lock"},
		{"key": "mcp", "kind": "ledger.read", "ledger": "mcp_servers.json", "path": [], "after": "lock"},
	])
}

test_busy if {
	_disconnect("google", {"lock": "busy"}) == fx.failed(
		fx.err("BUSY", "another grantwire operation holds the google lock; nothing was changed, retry shortly", "", {"connector": "google", "retry_after_ms": 500}),
		[],
	)
}

test_disconnect_an_oauth_provider if {
	_disconnect("google", _google) == fx.done(
		{
			"connector": "google", "removed": true,
			"revoked_grants": ["builtin:chat", "builtin:coder"], "deactivated": ["builtin:chat"],
			"revoked_at_provider": true, "warnings": [],
		},
		array.concat(_wipe_conn("google"), [
			{"kind": "ledger.write", "ledger": "connectors/state.json", "ops": [{"path": ["google"], "delete": true}]},
			{"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [{"path": ["google"], "delete": true, "expect": {"value": {"builtin:chat": ["openid"], "builtin:coder": []}}}]},
			{"kind": "event.emit", "type": "connector.grant.changed", "payload": {"connector_id": "google", "agent_id": "builtin:chat", "scopes": []}},
			{"kind": "event.emit", "type": "connector.grant.changed", "payload": {"connector_id": "google", "agent_id": "builtin:coder", "scopes": []}},
			{"kind": "ledger.write", "ledger": "connectors/activations.json", "ops": [{"path": ["activations", "google"], "delete": true, "expect": {"value": {"builtin:chat": true, "builtin:coder": false}}}]},
			{"kind": "event.emit", "type": "connector.activation.changed", "payload": {"connector_id": "google", "agent_id": "builtin:chat", "active": false}},
			_disconnected("google"),
			{
				"kind": "http.send", "method": "POST", "url": "https://oauth2.googleapis.com/revoke",
				"headers": {"Authorization": {"$basic": [fx.desc("client#client_id", fx.id_a), fx.desc("client#client_secret", "5ec5ec5ec5ec5ec5")]}},
				"form": {"token": {"$ref": "conn#refresh_token"}, "token_type_hint": "refresh_token"},
				"timeout_ms": 5000,
			},
		]),
	)
}

test_disconnecting_nothing_is_idempotent if {
	f := object.union(
		object.union(_ledgers(fx.no_entry(fx.grants_file, ["google"]), fx.no_file(fx.activations_file, ["activations", "google"])), {
			"conn": fx.absent, "state": fx.no_entry(fx.state_file, ["google"]),
		}),
		fx.client("client", fx.id_a),
	)
	_disconnect("google", f) == fx.done(
		{
			"connector": "google", "removed": false, "revoked_grants": [], "deactivated": [],
			"revoked_at_provider": false, "warnings": [],
		},
		array.concat(_wipe_conn("google"), [_disconnected("google")]),
	)
}

test_no_revocation_without_an_endpoint_a_client_or_a_valid_connection if {
	g := fx.patch(_google, {"grants": fx.no_entry(fx.grants_file, ["github"]), "actives": fx.no_entry(fx.activations_file, ["activations", "github"])})
	d := _disconnect("github", g)
	d.result.revoked_at_provider == false
	d.result.removed == true
	not "http.send" in fx.kinds(d)

	e := _disconnect("google", fx.patch(_google, fx.no_client("client")))
	e.result.revoked_at_provider == false
	not "http.send" in fx.kinds(e)

	i := _disconnect("google", fx.patch(_google, {"conn": fx.not_json("conn", "c1")}))
	i.result.removed == true
	i.result.revoked_at_provider == false

	# client_secret_post with a tenant
	m := fx.patch(_google, {"state": fx.no_file(fx.state_file, ["microsoft"])})
	r := _disconnect("microsoft", m)
	r.result.revoked_at_provider == true
	last := r.effects[count(r.effects) - 1]
	last.url == "https://login.microsoftonline.com/common/oauth2/v2.0/revoke"
	last.headers == {}
	last.form.client_secret == fx.desc("client#client_secret", "5ec5ec5ec5ec5ec5")
}

test_corrupt_ledgers_are_left_alone_with_warnings if {
	f := fx.patch(_google, {
		"grants": fx.corrupt(fx.grants_file, ["google"], "invalid JSON"),
		"actives": fx.entry(fx.activations_file, ["activations", "google"], {"builtin:chat": "yes"}),
		"state": fx.corrupt(fx.state_file, ["google"], "not UTF-8"),
	})
	d := _disconnect("google", f)
	d.status == "done"
	d.result.removed == true
	d.result.revoked_grants == []
	d.result.deactivated == []
	d.result.revoked_at_provider == true
	d.result.warnings == [
		"could not clean /home/u/.grantwire/connectors/grants.json (invalid JSON); everything else was removed; move it aside: mv /home/u/.grantwire/connectors/grants.json /home/u/.grantwire/connectors/grants.json.corrupt",
		"could not clean /home/u/.grantwire/connectors/activations.json (it does not have the shape of that ledger); everything else was removed; move it aside: mv /home/u/.grantwire/connectors/activations.json /home/u/.grantwire/connectors/activations.json.corrupt",
		"could not clean /home/u/.grantwire/connectors/state.json (not UTF-8); everything else was removed; move it aside: mv /home/u/.grantwire/connectors/state.json /home/u/.grantwire/connectors/state.json.corrupt",
	]
	fx.kinds(d) == ["keyring.delete", "keyring.delete", "event.emit", "http.send"]
}

_mcp_doc(key, servers) := fx.entry(fx.mcp_file, [], {key: servers, "other": 1})

test_disconnect_a_local_mcp_server if {
	f := object.union(
		_ledgers(_grants("mcp-github", {"builtin:coder": ["use"]}), _actives("mcp-github", {"builtin:coder": true})),
		{"mcp": _mcp_doc("mcpServers", {"mcp-github": {"command": "npx", "env": {
			"GITHUB_TOKEN": {"$keyring": "grantwire.connections:mcp-github:GITHUB_TOKEN"},
			"GITHUB_HOST": {"$keyring": "grantwire.connections:mcp-github:GITHUB_HOST"},
		}}})},
	)
	_disconnect("mcp-github", f) == fx.done(
		{
			"connector": "mcp-github", "removed": true, "revoked_grants": ["builtin:coder"],
			"deactivated": ["builtin:coder"], "revoked_at_provider": false, "warnings": [],
		},
		[
			{"kind": "keyring.delete", "user": "mcp-github:GITHUB_HOST"},
			{"kind": "keyring.delete", "user": "mcp-github:GITHUB_TOKEN"},
			{"kind": "ledger.write", "ledger": "mcp_servers.json", "ops": [{"path": ["mcpServers", "mcp-github"], "delete": true}]},
			{"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [{"path": ["mcp-github"], "delete": true, "expect": {"value": {"builtin:coder": ["use"]}}}]},
			{"kind": "event.emit", "type": "connector.grant.changed", "payload": {"connector_id": "mcp-github", "agent_id": "builtin:coder", "scopes": []}},
			{"kind": "ledger.write", "ledger": "connectors/activations.json", "ops": [{"path": ["activations", "mcp-github"], "delete": true, "expect": {"value": {"builtin:coder": true}}}]},
			{"kind": "event.emit", "type": "connector.activation.changed", "payload": {"connector_id": "mcp-github", "agent_id": "builtin:coder", "active": false}},
			_disconnected("mcp-github"),
		],
	)
}

test_a_legacy_servers_file_and_a_server_without_env if {
	f := object.union(
		_ledgers(fx.no_file(fx.grants_file, ["mcp-memory"]), fx.no_file(fx.activations_file, ["activations", "mcp-memory"])),
		{"mcp": _mcp_doc("servers", {"mcp-memory": {"command": "npx"}})},
	)
	_disconnect("mcp-memory", f) == fx.done(
		{"connector": "mcp-memory", "removed": true, "revoked_grants": [], "deactivated": [], "revoked_at_provider": false, "warnings": []},
		[
			{"kind": "ledger.write", "ledger": "mcp_servers.json", "ops": [{"path": ["servers", "mcp-memory"], "delete": true}]},
			_disconnected("mcp-memory"),
		],
	)
}

test_an_unconfigured_or_unreadable_mcp_server if {
	base := _ledgers(fx.no_file(fx.grants_file, ["mcp-github"]), fx.no_file(fx.activations_file, ["activations", "mcp-github"]))
	_disconnect("mcp-github", object.union(base, {"mcp": fx.no_file(fx.mcp_file, [])})) == fx.done(
		{"connector": "mcp-github", "removed": false, "revoked_grants": [], "deactivated": [], "revoked_at_provider": false, "warnings": []},
		[_disconnected("mcp-github")],
	)

	# an unreadable mcp_servers.json: every key the catalog names is deleted all the same
	d := _disconnect("mcp-github", object.union(base, {"mcp": fx.corrupt(fx.mcp_file, [], "duplicate key")}))
	d.effects == [
		{"kind": "keyring.delete", "user": "mcp-github:GITHUB_HOST"},
		{"kind": "keyring.delete", "user": "mcp-github:GITHUB_TOKEN"},
		_disconnected("mcp-github"),
	]
	d.result.removed == false
	d.result.warnings == ["could not clean /home/u/.grantwire/mcp_servers.json (duplicate key); everything else was removed; move it aside: mv /home/u/.grantwire/mcp_servers.json /home/u/.grantwire/mcp_servers.json.corrupt"]
}

test_a_remote_mcp_server if {
	f := object.union(
		object.union(_ledgers(fx.no_file(fx.grants_file, ["mcp-remote"]), _actives("mcp-remote", {"builtin:chat": true})), {
			"conn": fx.absent, "state": fx.no_file(fx.state_file, ["mcp-remote"]),
		}),
		fx.no_client("client"),
	)
	d := _disconnect("mcp-remote", f)
	d.result.deactivated == ["builtin:chat"]
	fx.kinds(d) == ["keyring.delete", "keyring.delete", "ledger.write", "event.emit", "event.emit"]
}

# A connector's tool rules go with it (docs/behaviour.md#tools), even when no agent is
# active any more (deactivating keeps a pair's rule), so that connecting again inherits none.
test_disconnect_deletes_the_tool_rules if {
	rules := {"builtin:chat": ["get_file"], "builtin:coder": []}
	wipe := {"kind": "ledger.write", "ledger": "connectors/activations.json", "ops": [{
		"path": ["tools", "mcp-github"], "delete": true, "prune": true,
		"expect": {"value": rules},
	}]}
	f := object.union(
		_ledgers(_grants("mcp-github", {"builtin:coder": ["use"]}), fx.no_entry(fx.activations_file, ["activations", "mcp-github"])),
		{"mcp": fx.entry("mcp_servers.json", [], {}), "rules": fx.entry(fx.activations_file, ["tools", "mcp-github"], rules)},
	)
	d := _disconnect("mcp-github", f)
	d.status == "done"
	wipe in d.effects
	d.result.deactivated == []

	# none, or an unreadable file: no write of the rules
	plain := _disconnect("mcp-github", object.union(f, {"rules": fx.no_entry(fx.activations_file, ["tools", "mcp-github"])}))
	not wipe in plain.effects
	count([e | some e in plain.effects; e.kind == "ledger.write"; e.ledger == "connectors/activations.json"]) == 0
	bad := _disconnect("mcp-github", object.union(f, {"rules": fx.corrupt(fx.activations_file, ["tools", "mcp-github"], "not JSON")}))
	count([e | some e in bad.effects; e.kind == "ledger.write"; e.ledger == "connectors/activations.json"]) == 0
}
