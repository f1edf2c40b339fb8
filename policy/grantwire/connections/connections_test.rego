package grantwire.connections_test

import data.grantwire.connections
import data.grantwire.fixtures_test as fx

_q(op, args, f) := {"op": op, "args": args, "facts": f}

_disconnect(args, f) := d if {
	d := connections.disconnect with input as _q("disconnect", args, f) with data.catalog as fx.catalog
}

_configure(args, f) := d if {
	d := connections.configure_client with input as _q("configure_client", args, f) with data.catalog as fx.catalog
}

_connect(args, f) := d if {
	d := connections.connect with input as _q("connect", args, f) with data.catalog as fx.catalog
}

_status(args, f) := d if {
	d := connections.status with input as _q("status", args, f) with data.catalog as fx.catalog
}

_connections(f) := d if {
	d := connections.connections with input as _q("connections", {}, f) with data.catalog as fx.catalog
}

_fail(err) := {"status": "done", "effects": [], "error": err}

_usage(m) := _fail({"code": "USAGE", "fix": "", "message": m})

_unknown := _fail({
	"code": "UNKNOWN_CONNECTOR", "connector": "nope", "fix": "grantwire catalog",
	"message": "unknown connector nope; fix: grantwire catalog",
})

_busy(c) := _fail({
	"code": "BUSY", "connector": c, "fix": "", "retry_after_ms": 500,
	"message": concat("", ["another grantwire operation holds the ", c, " lock; nothing was changed, retry shortly"]),
})

_no_client := _fail({
	"code": "CONFIGURATION", "connector": "google",
	"fix": "grantwire configure google --client-id <id>",
	"message": "configuration error: no OAuth client is configured for google; fix: grantwire configure google --client-id <id>",
})

# =======================================================================================
# disconnect

test_disconnect_usage if {
	every args in [{}, {"connector": 7}] {
		_disconnect(args, {}) == _usage("usage: disconnect needs connector")
	}
	_disconnect({"connector": "nope"}, {}) == _unknown
}

test_disconnect_reads_everything_under_the_lock if {
	_disconnect({"connector": "google"}, {}) == {"status": "need", "needs": [
		{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 5000},
		{"key": "stored", "kind": "connection.get", "provider": "google", "after": "lock"},
		{"key": "grants", "kind": "ledger.get", "ledger": "grants", "path": ["google"], "after": "lock"},
		{"key": "actives", "kind": "ledger.get", "ledger": "activations", "path": ["google"], "after": "lock"},
	]}
	connections.write_wait_ms == 5000
	_disconnect({"connector": "mcp-github"}, {}).needs[1] == {"key": "stored", "kind": "mcp.get", "connector": "mcp-github", "after": "lock"}
}

test_disconnect_busy_changes_nothing if {
	_disconnect({"connector": "google"}, {"lock": "busy"}) == _busy("google")
	_disconnect({"connector": "google"}, {"lock": false}) == _busy("google")
}

test_disconnect_wipes_secrets_grants_and_activations if {
	grants := {"builtin:mail": ["gmail"], "builtin:chat": ["openid"]}
	actives := {"builtin:chat": true, "builtin:old": false}
	f := {"lock": "held", "stored": fx.conn(fx.hash_a), "grants": fx.entry(grants), "actives": fx.entry(actives)}
	_disconnect({"connector": "google"}, f) == {
		"status": "done",
		"result": {
			"connector": "google", "removed": true,
			"revoked_grants": ["builtin:chat", "builtin:mail"],
			"deactivated": ["builtin:chat"],
		},
		"effects": [
			{"kind": "connection.delete", "provider": "google"},
			{"kind": "token.delete", "provider": "google"},
			{"kind": "ledger.delete", "ledger": "grants", "path": ["google"], "expect": {"found": true, "value": grants}},
			{
				"kind": "event.emit", "type": "connector.grant.changed",
				"payload": {"connector_id": "google", "agent_id": "builtin:chat", "scopes": []},
			},
			{
				"kind": "event.emit", "type": "connector.grant.changed",
				"payload": {"connector_id": "google", "agent_id": "builtin:mail", "scopes": []},
			},
			{"kind": "ledger.delete", "ledger": "activations", "path": ["google"], "expect": {"found": true, "value": actives}},
			{
				"kind": "event.emit", "type": "connector.activation.changed",
				"payload": {"connector_id": "google", "agent_id": "builtin:chat", "active": false},
			},
			{"kind": "event.emit", "type": "connector.disconnected", "payload": {"connector_id": "google"}},
		],
	}
}

test_disconnect_an_mcp_server_deletes_its_configuration if {
	d := _disconnect({"connector": "mcp-github"}, {"lock": "held", "stored": {"found": true, "keys": ["GITHUB_TOKEN"]}, "grants": fx.absent, "actives": fx.absent})
	d.effects == [
		{"kind": "mcp.delete", "connector": "mcp-github"},
		{"kind": "event.emit", "type": "connector.disconnected", "payload": {"connector_id": "mcp-github"}},
	]
	d.result.removed == true
}

test_disconnect_a_remote_mcp_server_deletes_its_connection if {
	d := _disconnect({"connector": "mcp-remote"}, {"lock": "held", "stored": fx.absent, "grants": fx.absent, "actives": fx.absent})
	[e.kind | some e in d.effects] == ["connection.delete", "token.delete", "event.emit"]
}

test_disconnect_is_idempotent if {
	_disconnect({"connector": "google"}, {"lock": "held", "stored": fx.absent, "grants": fx.absent, "actives": fx.absent}) == {
		"status": "done",
		"result": {"connector": "google", "removed": false, "revoked_grants": [], "deactivated": []},
		"effects": [
			{"kind": "connection.delete", "provider": "google"},
			{"kind": "token.delete", "provider": "google"},
			{"kind": "event.emit", "type": "connector.disconnected", "payload": {"connector_id": "google"}},
		],
	}
}

# =======================================================================================
# configure_client

_client_args := {"connector": "google", "client_id_hash": fx.hash_b, "has_secret": true}

test_configure_client_usage if {
	usage := _usage("usage: configure_client needs connector, client_id_hash (8 hex digits), has_secret and an optional tenant")
	every args in [
		{},
		object.remove(_client_args, ["connector"]),
		fx.set(_client_args, "client_id_hash", "abc"),
		object.remove(_client_args, ["has_secret"]),
		fx.set(_client_args, "has_secret", "true"),
		fx.set(_client_args, "tenant", 5),
	] {
		_configure(args, {}) == usage
	}
}

test_configure_client_unknown_or_not_oauth if {
	_configure(fx.set(_client_args, "connector", "nope"), {}) == _unknown
	_configure(fx.set(_client_args, "connector", "mcp-github"), {}) == _fail({
		"code": "CONFIGURATION", "connector": "mcp-github", "fix": "",
		"message": "configuration error: mcp-github is not an OAuth connector; it has no OAuth client",
	})
}

test_configure_client_requires_a_secret_where_the_catalog_does if {
	_configure(fx.set(_client_args, "has_secret", false), {}) == _fail({
		"code": "CONFIGURATION", "connector": "google",
		"fix": "grantwire configure google --client-id <id> --client-secret-stdin",
		"message": "configuration error: google requires a client secret; fix: grantwire configure google --client-id <id> --client-secret-stdin",
	})
	_configure({"connector": "microsoft", "client_id_hash": fx.hash_b, "has_secret": false}, {}).status == "need"
}

test_configure_client_reads_the_client_under_the_lock if {
	_configure(_client_args, {}) == {"status": "need", "needs": [
		{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 5000},
		{"key": "client", "kind": "client.get", "provider": "google", "fresh": true, "after": "lock"},
	]}
	_configure(_client_args, {"lock": "busy"}) == _busy("google")
	_configure(_client_args, {"lock": "nope"}) == _busy("google")
}

test_configure_client_replaces_the_client_it_read if {
	_configure(_client_args, {"lock": "held", "client": fx.client(fx.hash_a)}) == {
		"status": "done",
		"result": {"connector": "google", "client_id_hash": fx.hash_b, "has_secret": true, "tenant": null},
		"effects": [
			{
				"kind": "client.put", "provider": "google",
				"client_id": {"$ref": "arg#client_id"}, "client_secret": {"$ref": "arg#client_secret"},
				"client_id_hash": fx.hash_b, "tenant": null, "expect": {"version": "k1"},
			},
			{"kind": "token.delete", "provider": "google"},
			{
				"kind": "event.emit", "type": "connector.client.changed",
				"payload": {"connector_id": "google", "client_id_hash": fx.hash_b},
			},
		],
	}
}

test_configure_client_over_nothing_or_the_environment_expects_an_empty_slot if {
	env := fx.patch(fx.client(fx.hash_a), {"source": "env", "version": "env:aaaa0001"})
	every c in [fx.absent, env] {
		_configure(_client_args, {"lock": "held", "client": c}).effects[0].expect == {"found": false}
	}
}

test_configure_client_tenant if {
	ms := {"connector": "microsoft", "client_id_hash": fx.hash_b, "has_secret": false}
	d := _configure(ms, {"lock": "held", "client": fx.absent})
	d.result.tenant == "consumers"
	d.effects[0].tenant == "consumers"
	d.effects[0].client_secret == null
	_configure(fx.set(ms, "tenant", "organizations"), {"lock": "held", "client": fx.absent}).result.tenant == "organizations"
}

# =======================================================================================
# connect

_connect_args := {"connector": "google", "scopes": [], "grant_agents": []}

_nothing_stored := {"client": fx.client(fx.hash_a), "conn": fx.absent, "grants": fx.absent}

_mail := {"found": true, "connectors": {"google": ["gmail.send", "gmail.modify"]}}

_with_agents := fx.patch(_nothing_stored, {
	"agent|builtin:mail": _mail,
	"agent|builtin:chat": {"found": true, "connectors": {"google": ["openid"]}},
})

_agents_args := fx.set(_connect_args, "grant_agents", ["builtin:mail", "builtin:chat"])

_authorize(list) := {"status": "need", "needs": [{"key": "authorize", "kind": "oauth.authorize", "provider": "google", "scopes": list}]}

_ok := {"status": "ok", "account": "user@example.com", "scopes": [], "expires_in": 1800, "error": "", "http_status": 200}

test_connect_usage if {
	usage := _usage("usage: connect needs connector, scopes and grant_agents (arrays of strings)")
	every args in [
		{},
		object.remove(_connect_args, ["scopes"]),
		object.remove(_connect_args, ["grant_agents"]),
		fx.set(_connect_args, "scopes", [1]),
		fx.set(_connect_args, "grant_agents", "builtin:chat"),
		fx.set(_connect_args, "connector", 7),
	] {
		_connect(args, {}) == usage
	}
}

test_connect_unknown_or_not_oauth if {
	_connect(fx.set(_connect_args, "connector", "nope"), {}) == _unknown
	_connect(fx.set(_connect_args, "connector", "mcp-github"), {}) == _fail({
		"code": "CONFIGURATION", "connector": "mcp-github", "fix": "grantwire configure mcp-github",
		"message": "configuration error: mcp-github is not an OAuth provider; configure it instead; fix: grantwire configure mcp-github",
	})
}

test_connect_reads_state_and_agents_first if {
	_connect(_agents_args, {}) == {"status": "need", "needs": [
		{"key": "client", "kind": "client.get", "provider": "google", "fresh": true},
		{"key": "conn", "kind": "connection.get", "provider": "google"},
		{"key": "grants", "kind": "ledger.get", "ledger": "grants", "path": ["google"]},
		{"key": "agent|builtin:chat", "kind": "agent.get", "agent": "builtin:chat"},
		{"key": "agent|builtin:mail", "kind": "agent.get", "agent": "builtin:mail"},
	]}
}

test_connect_refuses_unknown_agents_before_the_consent if {
	_connect(_agents_args, fx.set(_with_agents, "agent|builtin:chat", fx.absent)) == _fail({
		"code": "UNKNOWN_AGENT", "agent_ids": ["builtin:chat"], "fix": "grantwire agents list",
		"message": "unknown agent(s): builtin:chat; nothing was written; fix: grantwire agents list",
	})
}

test_connect_needs_a_client if {
	_connect(_connect_args, fx.set(_nothing_stored, "client", fx.absent)) == _no_client
}

test_connect_agents_that_declare_nothing_need_explicit_scopes if {
	f := fx.set(_with_agents, "agent|builtin:chat", {"found": true, "connectors": {"google": []}})
	_connect(_agents_args, f) == _fail({
		"code": "CONFIGURATION", "connector": "google", "agent_ids": ["builtin:chat"],
		"fix": "grantwire connect google --scopes <scopes> --grant-agent builtin:chat --grant-agent builtin:mail",
		"message": "configuration error: agent(s) builtin:chat declare no scopes for google; pass the scopes to grant; fix: grantwire connect google --scopes <scopes> --grant-agent builtin:chat --grant-agent builtin:mail",
	})
	_connect(fx.set(_agents_args, "scopes", ["drive"]), f) == _authorize(["drive"])
}

test_reconnecting_with_no_scopes_is_refused_with_the_command_that_keeps_them if {
	f := fx.patch(_nothing_stored, {"conn": fx.conn(fx.hash_a), "grants": fx.entry({"builtin:x": ["drive"]})})
	_connect(_connect_args, f) == _fail({
		"code": "CONFIGURATION", "connector": "google", "scopes": ["drive", "gmail", "openid"],
		"fix": "grantwire connect google --scopes drive,gmail,openid",
		"message": "configuration error: reconnecting google with no scopes would drop the 3 scope(s) it holds or grants; fix: grantwire connect google --scopes drive,gmail,openid",
	})

	# Grants alone are prior state too.
	_connect(_connect_args, fx.set(_nothing_stored, "grants", fx.entry({"builtin:x": ["drive"]}))).error.scopes == ["drive"]

	# A corrupt blob holds no scopes, but is prior state.
	_connect(_connect_args, fx.set(_nothing_stored, "conn", fx.corrupt)).error.scopes == []
}

test_connect_scopes if {
	# Nothing stored, nothing asked: the catalog defaults.
	_connect(_connect_args, _nothing_stored) == _authorize(["email", "openid"])

	# Explicit scopes win.
	_connect(fx.set(_agents_args, "scopes", ["b", "a", "b"]), _with_agents) == _authorize(["a", "b"])

	# Agents without explicit scopes: what they declare plus the defaults.
	_connect(_agents_args, _with_agents) == _authorize(["email", "gmail.modify", "gmail.send", "openid"])

	# Explicit scopes over prior state are not refused.
	_connect(fx.set(_connect_args, "scopes", ["drive"]), fx.set(_nothing_stored, "conn", fx.conn(fx.hash_a))) == _authorize(["drive"])
}

test_connect_authorization_failures if {
	_connect(_connect_args, fx.set(_nothing_stored, "authorize", {"status": "interactive_required"})) == _fail({
		"code": "INTERACTIVE_AUTH_REQUIRED", "connector": "google",
		"fix": "grantwire connect google --scopes email,openid --no-browser",
		"message": "authorizing google needs a browser and this session has none; fix: grantwire connect google --scopes email,openid --no-browser",
	})
	_connect(_connect_args, fx.set(_nothing_stored, "authorize", {"status": "denied", "error": "consent_required"})) == _fail({
		"code": "CONSENT_DENIED", "connector": "google", "oauth_error": "consent_required", "fix": "",
		"message": "the google authorization was refused (consent_required)",
	})
	_connect(_connect_args, fx.set(_nothing_stored, "authorize", {"status": "denied"})).error.oauth_error == "access_denied"
	_connect(_connect_args, fx.set(_nothing_stored, "authorize", {"status": "error", "error": "invalid_client", "http_status": 401})) == _fail({
		"code": "PROVIDER_ERROR", "connector": "google", "http_status": 401, "oauth_error": "invalid_client", "fix": "",
		"message": "the google token endpoint failed (status 401 invalid_client)",
	})
	_connect(_connect_args, fx.set(_nothing_stored, "authorize", {})).error == {
		"code": "PROVIDER_ERROR", "connector": "google", "http_status": 0, "oauth_error": "", "fix": "",
		"message": "the google token endpoint failed (status 0 )",
	}
}

test_connect_stores_under_the_lock_after_the_consent if {
	f := fx.set(_with_agents, "authorize", _ok)
	_connect(_agents_args, f) == {"status": "need", "needs": [
		{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 30000},
		{"key": "now@lock", "kind": "clock.now", "after": "lock"},
		{"key": "grant|builtin:chat", "kind": "ledger.get", "ledger": "grants", "path": ["google", "builtin:chat"], "after": "lock"},
		{"key": "grant|builtin:mail", "kind": "ledger.get", "ledger": "grants", "path": ["google", "builtin:mail"], "after": "lock"},
	]}
	connections.connect_wait_ms == 30000
	_connect(_agents_args, fx.set(f, "lock", "busy")) == _busy("google")
	_connect(_agents_args, fx.set(f, "lock", "timeout")) == _busy("google")
}

test_connect_stores_the_connection_and_grants_what_agents_declare if {
	f := fx.patch(_with_agents, {
		"authorize": fx.set(_ok, "scopes", ["openid", "gmail.send", "gmail.modify", "email", "extra"]),
		"lock": "held", "now@lock": 7000,
		"grant|builtin:chat": fx.absent, "grant|builtin:mail": fx.entry(["old"]),
	})
	stored := ["email", "gmail.modify", "gmail.send", "openid"]
	_connect(_agents_args, f) == {
		"status": "done",
		"result": {
			"connector": "google", "account": "user@example.com", "scopes": stored,
			"granted": {"builtin:chat": ["openid"], "builtin:mail": ["gmail.modify", "gmail.send"]},
		},
		"effects": [
			{
				"kind": "connection.put", "provider": "google", "account": "user@example.com",
				"scopes": stored, "connected_at": 7000, "client_id_hash": fx.hash_a, "tenant": null,
				"refresh": {"$ref": "authorize#refresh_token"},
			},
			{
				"kind": "token.put", "provider": "google", "access": {"$ref": "authorize#access_token"},
				"expires_at": 7000 + 1800000, "client_id_hash": fx.hash_a, "connected_at": 7000,
			},
			{
				"kind": "ledger.put", "ledger": "grants", "path": ["google", "builtin:chat"],
				"value": ["openid"], "expect": {"found": false},
			},
			{
				"kind": "event.emit", "type": "connector.grant.changed",
				"payload": {"connector_id": "google", "agent_id": "builtin:chat", "scopes": ["openid"]},
			},
			{
				"kind": "ledger.put", "ledger": "grants", "path": ["google", "builtin:mail"],
				"value": ["gmail.modify", "gmail.send"], "expect": {"found": true, "value": ["old"]},
			},
			{
				"kind": "event.emit", "type": "connector.grant.changed",
				"payload": {"connector_id": "google", "agent_id": "builtin:mail", "scopes": ["gmail.modify", "gmail.send"]},
			},
			{
				"kind": "event.emit", "type": "connector.connected",
				"payload": {"connector_id": "google", "account": "user@example.com"},
			},
		],
	}
}

_connected_with(auth) := _connect(
	fx.set(_connect_args, "scopes", ["a", "b"]),
	fx.patch(_nothing_stored, {"authorize": auth, "lock": "held", "now@lock": 7000}),
)

test_connect_stores_only_granted_scopes_among_those_requested if {
	_connected_with(fx.set(_ok, "scopes", ["b", "z"])).result.scopes == ["b"]
	_connected_with(fx.set(_ok, "scopes", [])).result.scopes == ["a", "b"]
	_connected_with(object.remove(_ok, ["scopes"])).result.scopes == ["a", "b"]
	_connected_with(fx.set(_ok, "scopes", "a b")).result.scopes == ["a", "b"]
}

test_connect_explicit_scopes_are_granted_to_every_agent if {
	f := fx.patch(_with_agents, {
		"authorize": _ok, "lock": "held", "now@lock": 7000,
		"grant|builtin:chat": fx.absent, "grant|builtin:mail": fx.absent,
	})
	_connect(fx.set(_agents_args, "scopes", ["drive"]), f).result.granted == {"builtin:chat": ["drive"], "builtin:mail": ["drive"]}
}

test_connect_defaults_for_a_sparse_token_answer if {
	f := fx.patch(_nothing_stored, {
		"client": fx.set(fx.client(fx.hash_a), "tenant", "consumers"),
		"authorize": {"status": "ok"}, "lock": "held", "now@lock": 7000,
	})
	d := _connect(_connect_args, f)
	d.result == {"connector": "google", "account": "", "scopes": ["email", "openid"], "granted": {}}
	d.effects[0].tenant == "consumers"
	d.effects[1].expires_at == 7000 + 3600000
	every e in [0, -1, 1.5, "60"] {
		_connect(_connect_args, fx.set(f, "authorize", {"status": "ok", "expires_in": e})).effects[1].expires_at == 7000 + 3600000
	}
}

# =======================================================================================
# status: read-only

_status_all := {
	"conn|google": fx.conn(fx.hash_a), "client|google": fx.client(fx.hash_a),
	"conn|microsoft": fx.absent, "client|microsoft": fx.absent,
	"conn|mcp-remote": fx.absent, "client|mcp-remote": fx.absent,
	"mcp|mcp-github": {"found": true, "keys": ["GITHUB_TOKEN"]}, "mcp|mcp-memory": fx.absent,
	"grants": fx.entry({"google": {"builtin:chat": ["gmail"]}, "mcp-github": {"builtin:dev": ["use"]}}),
	"actives": fx.entry({"mcp-github": {"builtin:dev": true, "builtin:off": false}}),
}

test_status_unknown_connector if {
	_status({"connector": "nope"}, {}) == _unknown
}

test_status_reads_every_connector if {
	_status({}, {}) == {"status": "need", "needs": [
		{"key": "conn|google", "kind": "connection.get", "provider": "google"},
		{"key": "conn|mcp-remote", "kind": "connection.get", "provider": "mcp-remote"},
		{"key": "conn|microsoft", "kind": "connection.get", "provider": "microsoft"},
		{"key": "client|google", "kind": "client.get", "provider": "google", "fresh": false},
		{"key": "client|mcp-remote", "kind": "client.get", "provider": "mcp-remote", "fresh": false},
		{"key": "client|microsoft", "kind": "client.get", "provider": "microsoft", "fresh": false},
		{"key": "mcp|mcp-github", "kind": "mcp.get", "connector": "mcp-github"},
		{"key": "mcp|mcp-memory", "kind": "mcp.get", "connector": "mcp-memory"},
		{"key": "grants", "kind": "ledger.get", "ledger": "grants", "path": []},
		{"key": "actives", "kind": "ledger.get", "ledger": "activations", "path": []},
	]}
}

test_status_lists_every_connector_without_side_effects if {
	_status({}, _status_all) == {"status": "done", "effects": [], "result": {"connectors": [
		{
			"id": "google", "type": "oauth_pkce", "display_name": "Google", "category": "productivity", "tier": "core",
			"grants": {"builtin:chat": ["gmail"]}, "activations": [],
			"configured": true, "client_configured": true, "account": "user@example.com",
			"scopes": ["gmail", "openid"], "connected_at": 1000, "tripwire": "ok",
		},
		{
			"id": "mcp-github", "type": "mcp_server", "display_name": "GitHub (MCP)", "category": "", "tier": "",
			"grants": {"builtin:dev": ["use"]}, "activations": ["builtin:dev"],
			"configured": true, "env_keys": ["GITHUB_TOKEN"],
		},
		{
			"id": "mcp-memory", "type": "mcp_server", "display_name": "mcp-memory", "category": "", "tier": "",
			"grants": {}, "activations": [], "configured": false, "env_keys": [],
		},
		{
			"id": "mcp-remote", "type": "mcp_remote", "display_name": "Remote (MCP)", "category": "", "tier": "",
			"grants": {}, "activations": [], "configured": false, "client_configured": false,
		},
		{
			"id": "microsoft", "type": "oauth_pkce", "display_name": "microsoft", "category": "", "tier": "",
			"grants": {}, "activations": [], "configured": false, "client_configured": false,
		},
	]}}
}

test_status_rereads_the_client_on_a_mismatch if {
	stale := fx.set(_status_all, "client|google", fx.client(fx.hash_b))
	_status({}, stale) == {"status": "need", "needs": [
		{"key": "client@fresh|google", "kind": "client.get", "provider": "google", "fresh": true},
	]}
	_status({"connector": "google"}, fx.set(stale, "client@fresh|google", fx.client(fx.hash_a))).result.connectors[0].tripwire == "ok"
}

test_status_reports_the_tripwire_without_clearing if {
	every case in [
		["client_rotated", fx.conn(fx.hash_a), fx.client(fx.hash_b)],
		["no_client", fx.conn(fx.hash_a), fx.absent],
		["corrupt", fx.corrupt, fx.client(fx.hash_a)],
		["tenant_mismatch", fx.set(fx.conn(fx.hash_a), "tenant", "t1"), fx.set(fx.client(fx.hash_a), "tenant", "t2")],
	] {
		f := fx.patch(_status_all, {"conn|google": case[1], "client|google": case[2], "client@fresh|google": case[2]})
		d := _status({"connector": "google"}, f)
		d.effects == []
		d.result.connectors[0].tripwire == case[0]
	}
}

test_status_of_a_corrupt_blob_shows_no_metadata if {
	f := fx.patch(_status_all, {"conn|google": fx.corrupt})
	e := _status({"connector": "google"}, f).result.connectors[0]
	[e.configured, e.account, e.scopes, e.connected_at] == [true, "", [], null]
}

# =======================================================================================
# connections: the tripwire enforced

_round1 := {
	"conn|google": fx.conn(fx.hash_a), "client|google": fx.client(fx.hash_a),
	"conn|microsoft": fx.absent, "client|microsoft": fx.absent,
}

_row_google := {"provider": "google", "account_email": "user@example.com", "scopes": ["gmail", "openid"], "connected_at": 1000}

_clear(reason, version) := [
	{"kind": "connection.delete", "provider": "google", "expect": {"version": version}},
	{"kind": "token.delete", "provider": "google"},
	{
		"kind": "event.emit", "type": "connector.connection.cleared",
		"payload": {"connector_id": "google", "reason": reason},
	},
]

_lock_round := [
	{"key": "lock|google", "kind": "lock.acquire", "name": "google", "wait_ms": 500},
	{"key": "conn@lock|google", "kind": "connection.get", "provider": "google", "after": "lock|google"},
	{"key": "client@lock|google", "kind": "client.get", "provider": "google", "fresh": true, "after": "lock|google"},
]

test_connections_first_round if {
	_connections({}) == {"status": "need", "needs": [
		{"key": "conn|google", "kind": "connection.get", "provider": "google"},
		{"key": "conn|microsoft", "kind": "connection.get", "provider": "microsoft"},
		{"key": "client|google", "kind": "client.get", "provider": "google", "fresh": false},
		{"key": "client|microsoft", "kind": "client.get", "provider": "microsoft", "fresh": false},
	]}
}

test_connections_lists_good_connections if {
	_connections(_round1) == {"status": "done", "effects": [], "result": {"connections": [_row_google], "cleared": []}}
}

test_connections_rereads_the_client_on_a_mismatch if {
	_connections(fx.set(_round1, "client|google", fx.client(fx.hash_b))) == {"status": "need", "needs": [
		{"key": "client@fresh|google", "kind": "client.get", "provider": "google", "fresh": true},
	]}
	_connections(fx.patch(_round1, {"client|google": fx.client(fx.hash_b), "client@fresh|google": fx.client(fx.hash_a)})).result == {
		"connections": [_row_google], "cleared": [],
	}
}

test_connections_without_a_client_is_a_configuration_row if {
	_connections(fx.patch(_round1, {"client|google": fx.absent, "client@fresh|google": fx.absent})).result == {
		"connections": [{"provider": "google", "error": "configuration", "scopes": []}], "cleared": [],
	}
}

_suspect := fx.patch(_round1, {"client|google": fx.client(fx.hash_b), "client@fresh|google": fx.client(fx.hash_b)})

test_a_mismatch_is_cleared_only_under_the_lock if {
	_connections(_suspect) == {"status": "need", "needs": _lock_round}
	_connections(fx.set(_round1, "conn|google", fx.corrupt)) == {"status": "need", "needs": _lock_round}
}

test_busy_lock_keeps_the_row_without_scopes if {
	every v in ["busy", "timeout"] {
		_connections(fx.set(_suspect, "lock|google", v)) == {"status": "done", "effects": [], "result": {
			"connections": [{"provider": "google", "error": "busy", "scopes": []}], "cleared": [],
		}}
	}
}

_locked_suspect := fx.patch(_suspect, {"lock|google": "held", "conn@lock|google": fx.conn(fx.hash_a), "client@lock|google": fx.client(fx.hash_b)})

test_stale_connection_is_cleared_under_the_lock if {
	_connections(_locked_suspect) == {
		"status": "done",
		"result": {"connections": [], "cleared": [{"provider": "google", "reason": "client_rotated"}]},
		"effects": _clear("client_rotated", "v1"),
	}
}

test_tenant_and_corrupt_connections_are_cleared_too if {
	t := fx.patch(_locked_suspect, {
		"conn@lock|google": fx.set(fx.conn(fx.hash_b), "tenant", "t1"),
		"client@lock|google": fx.set(fx.client(fx.hash_b), "tenant", "t2"),
	})
	_connections(t).result.cleared == [{"provider": "google", "reason": "tenant_mismatch"}]
	c := fx.patch(_locked_suspect, {"conn|google": fx.corrupt, "conn@lock|google": fx.corrupt})
	_connections(c).effects == _clear("corrupt", "v9")
}

test_connection_fixed_meanwhile_is_listed_as_read_under_the_lock if {
	fixed := fx.set(fx.conn(fx.hash_b), "account", "new@example.com")
	_connections(fx.set(_locked_suspect, "conn@lock|google", fixed)).result == {
		"connections": [fx.set(_row_google, "account_email", "new@example.com")], "cleared": [],
	}
}

test_connection_gone_under_the_lock_is_neither_listed_nor_cleared if {
	_connections(fx.set(_locked_suspect, "conn@lock|google", fx.absent)) == {
		"status": "done", "effects": [],
		"result": {"connections": [], "cleared": []},
	}
}

test_client_removed_under_the_lock_is_a_configuration_row if {
	_connections(fx.set(_locked_suspect, "client@lock|google", fx.absent)).result.connections == [{"provider": "google", "error": "configuration", "scopes": []}]
}

test_needs_under_a_lock_not_taken_are_not_asked_again if {
	# A shell that fetched the lock round stops at a busy lock; the core must not ask for
	# the reads under it again.
	_connections(fx.set(_suspect, "lock|google", "busy")).status == "done"
	_connections(fx.set(_suspect, "lock|google", "held")) == {"status": "need", "needs": array.slice(_lock_round, 1, 3)}
}
