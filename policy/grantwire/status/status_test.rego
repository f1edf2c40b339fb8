package grantwire.status_test

import data.grantwire.fixtures_test as fx

_oauth := ["github", "google", "local", "microsoft"]

_k(kind, c) := concat("|", [kind, c])

_conn_need(k, c) := {"key": k, "kind": "keyring.get", "user": concat("", [c, ":default"]), "fields": ["refresh_token"], "fresh": true}

_client_needs(k, c, fresh) := [
	{"key": k, "kind": "keyring.get", "user": concat("", ["provider:", c]), "fields": ["client_id", "client_secret"], "fresh": fresh},
	{"key": concat("", [k, "@env_id"]), "kind": "env.get", "name": _env[c][0], "secret": true},
	{"key": concat("", [k, "@env_secret"]), "kind": "env.get", "name": _env[c][1], "secret": true},
]

_env := {
	"github": ["GH_CLIENT_ID", "GRANTWIRE_GITHUB_CLIENT_SECRET"],
	"google": ["GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"],
	"local": ["LOCAL_CLIENT_ID", "GRANTWIRE_LOCAL_CLIENT_SECRET"],
	"microsoft": ["MS_CLIENT_ID", "GRANTWIRE_MICROSOFT_CLIENT_SECRET"],
}

_ledgers := {
	"mcp": fx.entry(fx.mcp_file, [], {"mcpServers": {"mcp-github": {"command": "npx", "env": {"GITHUB_HOST": {"$keyring": "s:u"}}}}}),
	"grants": fx.entry(fx.grants_file, [], {"google": {"builtin:chat": ["openid"]}, "mcp-github": {"builtin:coder": ["use"]}}),
	"actives": fx.entry(fx.activations_file, ["activations"], {"mcp-github": {"builtin:coder": true, "builtin:chat": false}}),
}

_ledger_needs := [
	{"key": "mcp", "kind": "ledger.read", "ledger": "mcp_servers.json", "path": []},
	{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": []},
	{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations"]},
]

# The facts of one provider read under keys "<kind>|<c>".
_provider(c, conn, client) := object.union({_k("conn", c): conn}, client)

_conn(c, h, s) := fx.conn(_k("conn", c), h, s)

_client(c, id) := fx.client(_k("client", c), id)

# Every OAuth provider: google connected under client a, the others not connected.
_round1(google_conn, google_client) := object.union(
	object.union(_provider("google", google_conn, google_client), object.union(
		_provider("github", fx.absent, fx.no_client(_k("client", "github"))),
		object.union(
			_provider("local", fx.absent, _client("local", fx.id_a)),
			_provider("microsoft", fx.absent, fx.no_client(_k("client", "microsoft"))),
		),
	)),
	_ledgers,
)

# ---------------------------------------------------------------------------------------
# status

_status(args, f) := fx.decide(fx.q1("status", args, f))

test_status_needs if {
	_status({}, {}) == fx.need(array.concat(
		array.concat([_conn_need(_k("conn", c), c) | some c in _oauth], [n | some c in _oauth; some n in _client_needs(_k("client", c), c, false)]),
		_ledger_needs,
	))
	_status({"connector": "google"}, {}) == fx.need(array.concat(
		array.concat([_conn_need("conn|google", "google")], _client_needs("client|google", "google", false)),
		_ledger_needs,
	))
	_status({"connector": "mcp-github"}, {}) == fx.need(_ledger_needs)
	_status({"connector": "nope"}, {}) == fx.need(_ledger_needs)
	_status({"connector": "nope"}, _ledgers).error.code == "UNKNOWN_CONNECTOR"
	_status({"connector": "notes"}, _ledgers).error.code == "UNKNOWN_CONNECTOR"
}

# Remote MCP servers, the catalog's and those a person added, say whether they are
# authorized, at which issuer and with which scopes (issue 20 §1.3).
_remote_file(servers) := fx.entry("mcp_remote.json", [], {"version": 1, "servers": servers})

test_status_of_remote_mcp_servers if {
	f := fx.patch(_round1(_conn("google", fx.hash_a, ["openid"]), _client("google", fx.id_a)), {"mcp_remote": _remote_file({
		"notes": {"url": "https://notes.example.com/mcp", "scopes": [], "auth": {
			"issuer": "https://auth.example.com", "scopes": ["notes:write", "notes:read"], "authorized_at": 1800000000000,
		}},
		"todo": {"url": "https://todo.example.com/mcp", "scopes": []},
	})})
	notes := _status({"connector": "notes"}, f).result.connectors[0]
	notes.type == "mcp_remote"
	notes.configured == true
	notes.url == "https://notes.example.com/mcp"
	notes.issuer == "https://auth.example.com"
	notes.scopes == ["notes:read", "notes:write"]
	notes.connected_at == 1800000000000
	todo := _status({"connector": "todo"}, f).result.connectors[0]
	todo.configured == false
	todo.url == "https://todo.example.com/mcp"
	not todo.issuer
	ids := [e.id | some e in _status({}, f).result.connectors]
	"notes" in ids
	"todo" in ids
	"mcp-remote" in ids
}

test_status_of_every_connector if {
	d := _status({}, _round1(_conn("google", fx.hash_a, ["openid", "email"]), _client("google", fx.id_a)))
	d.status == "done"
	d.effects == []
	[[e.id, e.type, e.configured] | some e in d.result.connectors] == [
		["github", "oauth_pkce", false], ["google", "oauth_pkce", true], ["local", "oauth_pkce", false],
		["mcp-github", "mcp_server", true], ["mcp-memory", "mcp_server", false], ["mcp-remote", "mcp_remote", false],
		["microsoft", "oauth_pkce", false],
	]
	d.result.connectors[1] == {
		"id": "google", "type": "oauth_pkce", "display_name": "Google", "category": "productivity", "tier": "core",
		"grants": {"builtin:chat": ["openid"]}, "activations": [],
		"configured": true, "client_configured": true, "account": "user@example.com",
		"scopes": ["email", "openid"], "connected_at": fx.connected_ms, "tripwire": "ok",
	}
	d.result.connectors[0] == {
		"id": "github", "type": "oauth_pkce", "display_name": "GitHub", "category": "", "tier": "core",
		"grants": {}, "activations": [], "configured": false, "client_configured": false,
	}
	d.result.connectors[2].client_configured == true
	d.result.connectors[3] == {
		"id": "mcp-github", "type": "mcp_server", "display_name": "GitHub (MCP)", "category": "dev", "tier": "community",
		"grants": {"builtin:coder": ["use"]}, "activations": ["builtin:coder"],
		"configured": true, "env_keys": ["GITHUB_HOST"], "missing_keys": ["GITHUB_TOKEN"],
	}
	d.result.connectors[4].configured == false
	d.result.connectors[5] == {
		"id": "mcp-remote", "type": "mcp_remote", "display_name": "Remote (MCP)", "category": "", "tier": "community",
		"grants": {}, "activations": [], "configured": false, "url": "https://mcp.example.com/mcp",
	}
}

# An unconfigured local MCP server says which keys it needs, as a configured one does.
test_status_of_an_unconfigured_mcp_server if {
	f := fx.patch(_ledgers, {"mcp": fx.no_file(fx.mcp_file, [])})
	e := _status({"connector": "mcp-github"}, f).result.connectors[0]
	e.configured == false
	e.env_keys == []
	e.missing_keys == ["GITHUB_TOKEN"]
	_status({"connector": "mcp-memory"}, f).result.connectors[0].missing_keys == []
}

test_status_rereads_a_mismatched_client_and_reports_without_clearing if {
	f := _round1(_conn("google", fx.hash_a, ["openid"]), _client("google", fx.id_b))
	_status({}, f) == fx.need(_client_needs("client@fresh|google", "google", true))
	_status({"connector": "google"}, f) == fx.need(_client_needs("client@fresh|google", "google", true))

	# still another client: reported, nothing cleared
	g := object.union(f, fx.client("client@fresh|google", fx.id_b))
	d := _status({"connector": "google"}, g)
	d.effects == []
	d.result.connectors[0].tripwire == "client_rotated"
	d.result.connectors[0].configured == true

	# the fresh read matches
	h := object.union(f, fx.client("client@fresh|google", fx.id_a))
	_status({"connector": "google"}, h).result.connectors[0].tripwire == "ok"

	# no client anywhere; a corrupt connection
	n := object.union(_round1(_conn("google", fx.hash_a, []), fx.no_client("client|google")), fx.no_client("client@fresh|google"))
	_status({"connector": "google"}, n).result.connectors[0].tripwire == "no_client"
	_status({"connector": "google"}, n).result.connectors[0].client_configured == false
	c := _status({"connector": "google"}, _round1(fx.not_json("conn|google", "c1"), _client("google", fx.id_a))).result.connectors[0]
	c.tripwire == "corrupt"
	c.scopes == []
	c.connected_at == null
	c.account == ""
}

# ---------------------------------------------------------------------------------------
# connections

_connections(f) := fx.decide(fx.q1("connections", {}, f))

_row(c, s) := {"provider": c, "account_email": "user@example.com", "scopes": s, "connected_at": fx.connected_ms}

test_connections_reads_every_provider if {
	_connections({}) == fx.need(array.concat(
		[_conn_need(_k("conn", c), c) | some c in _oauth],
		[n | some c in _oauth; some n in _client_needs(_k("client", c), c, false)],
	))
	d := _connections(_round1(_conn("google", fx.hash_a, ["openid", "email"]), _client("google", fx.id_a)))
	d == fx.done({"connections": [_row("google", ["email", "openid"])], "cleared": []}, [])
}

_lock_needs(c) := array.concat(
	[
		{"key": _k("lock", c), "kind": "lock.acquire", "name": c, "wait_ms": 500},
		object.union(_conn_need(_k("conn@lock", c), c), {"after": _k("lock", c)}),
		{"key": _k("state@lock", c), "kind": "ledger.read", "ledger": "connectors/state.json", "path": [c], "after": _k("lock", c)},
	],
	[object.union(n, {"after": _k("lock", c)}) | some n in _client_needs(_k("client@lock", c), c, true)],
)

_rotated := object.union(_round1(_conn("google", fx.hash_a, ["openid"]), _client("google", fx.id_b)), fx.client("client@fresh|google", fx.id_b))

test_connections_clears_a_stale_connection_under_its_lock if {
	_connections(_round1(_conn("google", fx.hash_a, ["openid"]), _client("google", fx.id_b))) == fx.need(_client_needs("client@fresh|google", "google", true))
	_connections(_rotated) == fx.need(_lock_needs("google"))
	f := object.union(
		object.union(_rotated, {"lock|google": "held", "conn@lock|google": fx.conn("conn@lock|google", fx.hash_a, ["openid"]), "state@lock|google": fx.state_entry("google")}),
		fx.client("client@lock|google", fx.id_b),
	)
	_connections(f) == fx.done(
		{"connections": [], "cleared": [{"provider": "google", "reason": "client_rotated"}]},
		[
			{"kind": "keyring.delete", "user": "google:default", "expect": {"version": "c1"}},
			{"kind": "keyring.delete", "user": "google:access_token"},
			{"kind": "ledger.write", "ledger": "connectors/state.json", "ops": [{"path": ["google"], "delete": true}]},
			{"kind": "event.emit", "type": "connector.connection.cleared", "payload": {"connector_id": "google", "reason": "client_rotated"}},
		],
	)
}

test_connections_keeps_a_busy_row if {
	# the needs read under a lock that was not taken are not asked for
	f := object.union(_rotated, {"lock|google": "busy"})
	_connections(f) == fx.done({"connections": [{"provider": "google", "error": "busy", "scopes": []}], "cleared": []}, [])
}

test_connections_under_the_lock_may_find_it_fixed_or_gone if {
	base := object.union(_rotated, {"lock|google": "held", "state@lock|google": fx.no_entry(fx.state_file, ["google"])})

	# reconnected meanwhile under the new client
	ok := object.union(object.union(base, {"conn@lock|google": fx.conn("conn@lock|google", fx.hash_b, ["calendar"])}), fx.client("client@lock|google", fx.id_b))
	_connections(ok) == fx.done({"connections": [_row("google", ["calendar"])], "cleared": []}, [])

	# disconnected meanwhile
	gone := object.union(object.union(base, {"conn@lock|google": fx.absent}), fx.client("client@lock|google", fx.id_b))
	_connections(gone) == fx.done({"connections": [], "cleared": []}, [])

	# the client vanished meanwhile
	none := object.union(object.union(base, {"conn@lock|google": fx.conn("conn@lock|google", fx.hash_a, ["openid"])}), fx.no_client("client@lock|google"))
	_connections(none) == fx.done({"connections": [{"provider": "google", "error": "configuration", "scopes": []}], "cleared": []}, [])
}

test_connections_without_a_client if {
	f := object.union(_round1(_conn("google", fx.hash_a, ["openid"]), fx.no_client("client|google")), fx.no_client("client@fresh|google"))
	_connections(f) == fx.done({"connections": [{"provider": "google", "error": "configuration", "scopes": []}], "cleared": []}, [])
}

test_connections_clears_a_corrupt_connection if {
	f := _round1(fx.not_json("conn|google", "c1"), _client("google", fx.id_a))
	_connections(f) == fx.need(_lock_needs("google"))
	g := object.union(
		object.union(f, {"lock|google": "held", "conn@lock|google": fx.not_json("conn@lock|google", "c2"), "state@lock|google": fx.corrupt(fx.state_file, ["google"], "bad")}),
		fx.client("client@lock|google", fx.id_a),
	)
	_connections(g) == fx.done(
		{"connections": [], "cleared": [{"provider": "google", "reason": "corrupt"}]},
		[
			{"kind": "keyring.delete", "user": "google:default", "expect": {"version": "c2"}},
			{"kind": "keyring.delete", "user": "google:access_token"},
			{"kind": "event.emit", "type": "connector.connection.cleared", "payload": {"connector_id": "google", "reason": "corrupt"}},
		],
	)
}

# ---------------------------------------------------------------------------------------
# test_connector

_test(c, f) := fx.decide(fx.q1("test_connector", {"connector": c}, f))

_one(c, conn, client) := object.union(_provider(c, conn, client), _ledgers)

test_test_connector_usage if {
	fx.decide(fx.q1("test_connector", {"connector": 5}, {})) == fx.failed(fx.usage("test_connector needs connector"), [])
	_test("nope", _ledgers).error.code == "UNKNOWN_CONNECTOR"
	_test("google", {}) == fx.need(array.concat(array.concat([_conn_need("conn|google", "google")], _client_needs("client|google", "google", false)), _ledger_needs))
}

# Without a connector, test_connector is a usage error.
test_test_connector_without_a_connector if {
	fx.decide(fx.q1("test_connector", {}, {})) == fx.failed(fx.usage("test_connector needs connector"), [])
}

test_test_an_oauth_connector if {
	_test("google", _one("google", _conn("google", fx.hash_a, ["openid", "email"]), _client("google", fx.id_a))) == fx.done(
		{
			"connector": "google", "ok": true, "type": "oauth_pkce", "account": "user@example.com",
			"scopes": ["email", "openid"], "detail": "connected as user@example.com with 2 scope(s)",
		},
		[],
	)
	j := object.remove(fx.conn_json("conn|local", fx.hash_a, [], fx.refresh_d), ["account_email"])
	_test("local", _one("local", fx.slot("conn|local", "c1", j), _client("local", fx.id_a))).result.detail == "connected as (account unknown) with 0 scope(s)"
}

test_test_an_unusable_oauth_connector if {
	_test("google", _one("google", fx.absent, _client("google", fx.id_a))) == fx.failed(
		fx.err("NOT_CONNECTED", "google is not connected", "grantwire connect google --scopes email,openid", {"connector": "google"}),
		[],
	)
	f := object.union(_one("google", _conn("google", fx.hash_a, ["openid"]), _client("google", fx.id_b)), fx.client("client@fresh|google", fx.id_b))
	_test("google", f) == fx.failed(
		fx.err(
			"REAUTH_REQUIRED",
			"the google connection must be authorized again (the connection does not match the configured client (client_rotated); it is cleared on its next use)",
			"grantwire connect google --scopes openid",
			{"connector": "google", "cause": "the connection does not match the configured client (client_rotated); it is cleared on its next use"},
		),
		[],
	)
	_test("google", object.union(_one("google", _conn("google", fx.hash_a, ["openid"]), _client("google", fx.id_b)), {})).status == "need"
}

# A connection with no client configured is not cleared on its next use (the gate answers
# CONFIGURATION "no OAuth client is configured", fix `grantwire configure google
# --client-id <id>`), so test_connector must say that, not REAUTH_REQUIRED with a connect
# command that would fail for want of a client (policy bug; see the report).
test_test_a_connection_without_a_client if {
	f := object.union(_one("google", _conn("google", fx.hash_a, ["openid"]), fx.no_client("client|google")), fx.no_client("client@fresh|google"))
	_test("google", f) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: no OAuth client is configured for google",
			"grantwire configure google --client-id <id> --client-secret-stdin", {"connector": "google"},
		),
		[],
	)
}

test_test_a_local_mcp_server if {
	_test("mcp-github", _ledgers) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: mcp-github lacks GITHUB_TOKEN",
			"grantwire configure mcp-github --from-stdin", {"connector": "mcp-github", "missing_keys": ["GITHUB_TOKEN"]},
		),
		[],
	)
	unconfigured := fx.patch(_ledgers, {"mcp": fx.no_file(fx.mcp_file, [])})
	_test("mcp-github", unconfigured) == fx.failed(
		fx.err(
			"NOT_CONNECTED", "mcp-github is not configured", "grantwire configure mcp-github --from-stdin",
			{"connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"]},
		),
		[],
	)
	_test("mcp-memory", unconfigured).error.fix == "grantwire configure mcp-memory"
	configured := fx.patch(_ledgers, {"mcp": fx.entry(fx.mcp_file, [], {"mcpServers": {
		"mcp-github": {"command": "npx", "env": {"GITHUB_TOKEN": {"$keyring": "s:u"}}},
		"mcp-memory": {"command": "npx"},
	}})})
	_test("mcp-github", configured) == fx.done(
		{
			"connector": "mcp-github", "ok": true, "type": "mcp_server", "env_keys": ["GITHUB_TOKEN"],
			"command": "npx", "detail": "configured (GITHUB_TOKEN)",
		},
		[],
	)
	_test("mcp-memory", configured).result.detail == "configured (no keys)"
}

test_test_a_remote_mcp_server if {
	_test("mcp-remote", _ledgers) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: mcp-remote is a remote MCP server; test it with grantwire mcp list",
			"grantwire mcp list", {"connector": "mcp-remote"},
		),
		[],
	)
}

# ---------------------------------------------------------------------------------------
# connector_view (the page of grantwire serve)

_view(args, f) := fx.decide(fx.q1("connector_view", args, f))

_agents_need := {"key": "agents", "kind": "ledger.read", "ledger": "agents.json", "path": []}

_state_need := {"key": "state", "kind": "ledger.read", "ledger": "connectors/state.json", "path": []}

_view_facts(agents_fact) := object.union(
	_round1(_conn("google", fx.hash_a, ["openid", "email"]), _client("google", fx.id_a)),
	{"agents": agents_fact, "state": fx.no_file(fx.state_file, [])},
)

_vrow(d, id) := r if {
	some r in d.result.connectors
	r.id == id
}

test_view_needs_the_status_facts_and_the_agent_registry if {
	_view({"connector": "mcp-github"}, {}) == fx.need(array.concat(_ledger_needs, [_state_need, _agents_need]))
	_view({"connector": "nope"}, {}) == fx.need(array.concat(_ledger_needs, [_state_need, _agents_need]))
	f := _round1(_conn("google", fx.hash_a, ["openid"]), _client("google", fx.id_b))
	_view({}, object.union(f, {"agents": fx.no_agents, "state": fx.no_file(fx.state_file, [])})) == fx.need(_client_needs("client@fresh|google", "google", true))
}

test_view_shows_the_client_without_its_id_or_secret if {
	d := _view({}, _view_facts(fx.no_agents))
	d.status == "done"
	d.effects == []
	d.result.agents_problem == null
	g := _vrow(d, "google")
	g.client == {"configured": true, "has_secret": true, "tenant": null, "source": "keyring"}
	g.configured == true
	g.account == "user@example.com"
	_vrow(d, "github").client == {"configured": false, "has_secret": false, "tenant": null, "source": null}
	_vrow(d, "microsoft").client.tenant == "common"
	_vrow(d, "mcp-github").client == null
	not contains(json.marshal(d.result), "#client_id")
	g.health == null
}

test_view_shows_the_stored_health_after_a_reload if {
	failing := {"google": {"configured": true, "health": {"state": "failing", "failures": 1, "failed_at": 7, "error": "temporarily_unavailable"}}}
	f := fx.patch(_view_facts(fx.no_agents), {"state": fx.entry(fx.state_file, [], failing)})
	g := _vrow(_view({"connector": "google"}, f), "google")
	g.health.state == "failing"
	g.health.reason == "temporarily_unavailable"
	g.health.fix == "grantwire connect google --scopes email,openid"
	_vrow(_view({"connector": "mcp-github"}, f), "mcp-github").health == null
}

test_view_lists_the_agents_that_concern_a_connector if {
	d := _view({}, _view_facts(fx.no_agents))

	# google: declared by chat (which also holds a grant)
	_vrow(d, "google").agents == [{
		"id": "builtin:chat", "name": "Chat", "registered": true, "declared_scopes": ["gmail.readonly"],
		"reason": "mail", "consumes_mcp_servers": false, "granted_scopes": ["openid"], "active": false,
	}]

	# mcp-github: declared by chat, consumed by coder (granted and active)
	_vrow(d, "mcp-github").agents == [
		{
			"id": "builtin:chat", "name": "Chat", "registered": true, "declared_scopes": ["repo:read"],
			"reason": "", "consumes_mcp_servers": false, "granted_scopes": null, "active": false,
		},
		{
			"id": "builtin:coder", "name": "Coder", "registered": true, "declared_scopes": null,
			"reason": "", "consumes_mcp_servers": true, "granted_scopes": ["use"], "active": true,
		},
	]

	# a provider nobody declares: the MCP consumer is not offered it
	_vrow(d, "github").agents == []
	[a.id | some a in _vrow(d, "mcp-memory").agents] == ["builtin:coder"]
}

test_view_shows_agents_the_registry_does_not_know if {
	f := fx.patch(_view_facts(fx.no_agents), {"grants": fx.entry(fx.grants_file, [], {"github": {"installed:gone": ["repo"]}})})
	_vrow(_view({"connector": "github"}, f), "github").agents == [{
		"id": "installed:gone", "name": "", "registered": false, "declared_scopes": null, "reason": "",
		"consumes_mcp_servers": false, "granted_scopes": ["repo"], "active": false,
	}]
}

test_view_reads_agents_json_and_survives_a_broken_one if {
	file := fx.entry(fx.agents_file, [], {"version": 1, "agents": [{"id": "installed:triage", "name": "Triage", "required_connectors": [{"connector": "github", "scopes": ["repo"]}]}]})
	d := _view({"connector": "github"}, _view_facts(file))
	[a.id | some a in _vrow(d, "github").agents] == ["installed:triage"]
	d.result.agents_problem == null

	broken := fx.corrupt(fx.agents_file, [], "not JSON")
	e := _view({"connector": "google"}, _view_facts(broken))
	e.status == "done"
	e.result.agents_problem.code == "CORRUPT_LEDGER"
	[a.id | some a in _vrow(e, "google").agents] == ["builtin:chat"]
}

test_view_publishes_the_setup_fields if {
	d := _view({}, _view_facts(fx.no_agents))
	_vrow(d, "google").setup_fields == [
		{"key": "client_id", "label": "Client ID", "kind": "text", "required": true, "configured": true},
		{"key": "client_secret", "label": "Client secret", "kind": "secret", "required": true, "configured": true},
	]
	_vrow(d, "microsoft").setup_fields == [
		{"key": "client_id", "label": "Client ID", "kind": "text", "required": true, "configured": false},
		{"key": "client_secret", "label": "Client secret", "kind": "secret", "required": false, "configured": false},
		{"key": "tenant", "label": "Tenant", "kind": "text", "required": false, "configured": false, "description": "default common"},
	]
	_vrow(d, "mcp-github").setup_fields == [
		{"key": "GITHUB_TOKEN", "label": "GITHUB_TOKEN", "kind": "secret", "required": true, "configured": false, "description": "a token"},
		{"key": "GITHUB_HOST", "label": "GITHUB_HOST", "kind": "text", "required": false, "configured": true, "description": "the host"},
	]
	_vrow(d, "mcp-memory").setup_fields == []
}
