# METADATA
# title: Connections
# description: |
#   Connecting (OAuth 2.0 + PKCE through the shell's loopback), configuring a provider's
#   OAuth client, disconnecting, and the two views of what is connected: `status`, which is
#   read-only and reports a client-hash mismatch without clearing anything, and
#   `connections`, which enforces the tripwire (clearing stale connections under each
#   provider's lock, and keeping a row with "error": "busy" when the lock is held elsewhere).
package grantwire.connections

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.tripwire

_f := object.get(input, "facts", {})

_c := input.args.connector

# METADATA
# title: disconnect lock wait
# description: How long disconnect and client configuration wait for the provider's lock.
write_wait_ms := 5000

# METADATA
# title: connect lock wait
# description: How long storing a fresh authorization waits for the lock (the consent is lost on BUSY).
connect_wait_ms := 30000

_str_list(xs) if {
	is_array(xs)
	every s in xs {
		is_string(s)
	}
}

# ---------------------------------------------------------------------------------------
# disconnect

# A positive helper: `not is_string(_c)` is undefined (not true) when _c is undefined.
_connector_arg if is_string(_c)

_stored_kind := "mcp" if catalog.connectors[_c].type == "mcp_server"

else := "connection"

_disconnect_needs := [
	facts.lock("lock", _c, write_wait_ms),
	facts.after(_stored_need, "lock"),
	facts.after(facts.ledger("grants", "grants", [_c]), "lock"),
	facts.after(facts.ledger("actives", "activations", [_c]), "lock"),
]

_stored_need := facts.mcp("stored", _c) if _stored_kind == "mcp"

else := facts.connection("stored", _c)

_delete_stored := [{"kind": "mcp.delete", "connector": _c}] if {
	_stored_kind == "mcp"
} else := [
	{"kind": "connection.delete", "provider": _c},
	{"kind": "token.delete", "provider": _c},
]

_granted_agents := sort(object.keys(facts.value(_f, "grants", {})))

_active_agents := sort([a | some a, v in facts.value(_f, "actives", {}); v == true])

_wipe_grants := [] if {
	not _f.grants.found == true
} else := array.concat(
	[{"kind": "ledger.delete", "ledger": "grants", "path": [_c], "expect": grants.expect(_f.grants)}],
	[grants.changed_event(_c, a, []) | some a in _granted_agents],
)

_wipe_actives := [] if {
	not _f.actives.found == true
} else := array.concat(
	[{"kind": "ledger.delete", "ledger": "activations", "path": [_c], "expect": grants.expect(_f.actives)}],
	[grants.activation_event(_c, a, false) | some a in _active_agents],
)

# METADATA
# title: disconnect decision
# description: |
#   Delete a connector's secrets and metadata and wipe its grants and activations, so that
#   connecting the same id again inherits nothing. The OAuth client configuration is kept
#   (it is the application's registration, not the user's connection). Idempotent.
# entrypoint: true
disconnect := step.fail(errors.usage("disconnect needs connector"), []) if {
	not _connector_arg
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _disconnect_needs)
	count(m) > 0
} else := step.done(
	{
		"connector": _c,
		"removed": _f.stored.found == true,
		"revoked_grants": _granted_agents,
		"deactivated": _active_agents,
	},
	array.concat(
		array.concat(_delete_stored, array.concat(_wipe_grants, _wipe_actives)),
		[{"kind": "event.emit", "type": "connector.disconnected", "payload": {"connector_id": _c}}],
	),
)

# ---------------------------------------------------------------------------------------
# configure_client

_client_args if {
	is_string(_c)
	is_string(input.args.client_id_hash)
	count(input.args.client_id_hash) == 8
	is_boolean(input.args.has_secret)
	_tenant_arg_ok
}

_tenant_arg_ok if not input.args.tenant

_tenant_arg_ok if is_string(input.args.tenant)

_tenant := input.args.tenant if is_string(input.args.tenant)

else := t if {
	t := catalog.connectors[_c].tenant
	is_string(t)
} else := null

_secret_ref := facts.ref("arg", "client_secret") if input.args.has_secret == true

else := null

_client_expect := facts.client_expect(_f.client)

# METADATA
# title: configure_client decision
# description: |
#   Store a provider's OAuth client (id and secret, in the credential store) under the
#   provider's lock. A connection issued under another client trips the tripwire on its next
#   use; the in-process access token is dropped at once.
# entrypoint: true
configure_client := step.fail(
	errors.usage("configure_client needs connector, client_id_hash (8 hex digits), has_secret and an optional tenant"),
	[],
) if {
	not _client_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(concat("", [_c, " is not an OAuth connector; it has no OAuth client"]), "", {"connector": _c}),
	[],
) if {
	not catalog.oauth(_c)
} else := step.fail(
	errors.configuration(
		concat("", [_c, " requires a client secret"]),
		concat("", ["grantwire configure ", _c, " --client-id <id> --client-secret-stdin"]),
		{"connector": _c},
	),
	[],
) if {
	catalog.connectors[_c].client_secret_required == true
	input.args.has_secret != true
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, [
		facts.lock("lock", _c, write_wait_ms),
		facts.after(facts.client("client", _c, true), "lock"),
	])
	count(m) > 0
} else := step.done(
	{
		"connector": _c, "client_id_hash": input.args.client_id_hash,
		"has_secret": input.args.has_secret, "tenant": _tenant,
	},
	[
		{
			"kind": "client.put", "provider": _c,
			"client_id": facts.ref("arg", "client_id"), "client_secret": _secret_ref,
			"client_id_hash": input.args.client_id_hash, "tenant": _tenant,
			"expect": _client_expect,
		},
		{"kind": "token.delete", "provider": _c},
		{
			"kind": "event.emit", "type": "connector.client.changed",
			"payload": {"connector_id": _c, "client_id_hash": input.args.client_id_hash},
		},
	],
)

# ---------------------------------------------------------------------------------------
# connect

_connect_args if {
	is_string(_c)
	_str_list(input.args.scopes)
	_str_list(input.args.grant_agents)
}

_explicit := scopes.sorted(input.args.scopes)

_agents := scopes.sorted(input.args.grant_agents)

_agent_key(a) := facts.key(["agent", a])

_grant_key(a) := facts.key(["grant", a])

_connect_needs := array.concat(
	[facts.client("client", _c, true), facts.connection("conn", _c), facts.ledger("grants", "grants", [_c])],
	[facts.agent(_agent_key(a), a) | some a in _agents],
)

# The entries the grants replace are read under the lock, just before the writes: read
# before the consent (which may take minutes), a concurrent change would fail their
# preconditions, and the restart would ask for the consent again.
_connect_locked_needs := array.concat(
	[facts.lock("lock", _c, connect_wait_ms), facts.after(facts.now("now@lock"), "lock")],
	[facts.after(facts.ledger(_grant_key(a), "grants", [_c, a]), "lock") | some a in _agents],
)

_unknown_agents := [a | some a in _agents; not _f[_agent_key(a)].found == true]

_declared(a) := s if {
	s := _f[_agent_key(a)].connectors[_c]
	is_array(s)
	count(s) > 0
}

_undeclaring := [a | some a in _agents; not _declared(a)]

_prior if _f.conn.found == true

_prior if count(facts.value(_f, "grants", {})) > 0

_prior_scopes := scopes.union(
	object.get(_f.conn, "scopes", []),
	[s | some _, list in facts.value(_f, "grants", {}); some s in list],
)

# The scopes to authorize, and the scopes each listed agent is granted.
_authorize_scopes := _explicit if {
	count(_explicit) > 0
} else := scopes.union(
	[s | some a in _agents; some s in _declared(a)],
	catalog.default_scopes(_c),
) if {
	count(_agents) > 0
} else := scopes.sorted(catalog.default_scopes(_c))

_agent_scopes(a) := _explicit if count(_explicit) > 0

else := scopes.sorted(_declared(a))

_auth := _f.authorize

# The scopes the token endpoint granted, among those requested (all requested when it did
# not say).
_stored_scopes := sort([s | some s in _auth.scopes; s in scopes.set(_authorize_scopes)]) if {
	_str_list(_auth.scopes)
	count(_auth.scopes) > 0
} else := _authorize_scopes

_connect_expires_at := _f["now@lock"] + (_auth.expires_in * 1000) if {
	is_number(_auth.expires_in)
	_auth.expires_in > 0
	_auth.expires_in == floor(_auth.expires_in)
} else := _f["now@lock"] + 3600000

_account := _auth.account if is_string(_auth.account)

else := ""

_connect_effects := array.concat(
	[
		{
			"kind": "connection.put", "provider": _c, "account": _account,
			"scopes": _stored_scopes, "connected_at": _f["now@lock"],
			"client_id_hash": _f.client.client_id_hash,
			"tenant": object.get(_f.client, "tenant", null),
			"refresh": facts.ref("authorize", "refresh_token"),
		},
		{
			"kind": "token.put", "provider": _c,
			"access": facts.ref("authorize", "access_token"),
			"expires_at": _connect_expires_at,
			"client_id_hash": _f.client.client_id_hash,
			"connected_at": _f["now@lock"],
		},
	],
	array.concat(
		[e |
			some a in _agents
			some e in [
				grants.put(_c, a, _agent_scopes(a), _f[_grant_key(a)]),
				grants.changed_event(_c, a, _agent_scopes(a)),
			]
		],
		[{
			"kind": "event.emit", "type": "connector.connected",
			"payload": {"connector_id": _c, "account": _account},
		}],
	),
)

# METADATA
# title: connect decision
# description: |
#   Authorize a provider with PKCE and store the connection. With no scopes: the union of
#   the listed agents' declared scopes and the catalog defaults (agents are granted what they
#   declare), or the catalog defaults when nothing is stored yet; reconnecting with no scopes
#   over an existing connection or grants is refused with the command that keeps them.
# entrypoint: true
connect := step.fail(errors.usage("connect needs connector, scopes and grant_agents (arrays of strings)"), []) if {
	not _connect_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(
		concat("", [_c, " is not an OAuth provider; configure it instead"]),
		concat("", ["grantwire configure ", _c]), {"connector": _c},
	),
	[],
) if {
	not catalog.oauth(_c)
} else := step.need(m) if {
	m := facts.missing(_f, _connect_needs)
	count(m) > 0
} else := step.fail(errors.unknown_agents(_unknown_agents), []) if {
	count(_unknown_agents) > 0
} else := step.fail(
	errors.configuration(
		concat("", ["no OAuth client is configured for ", _c]),
		concat("", ["grantwire configure ", _c, " --client-id <id>"]),
		{"connector": _c},
	),
	[],
) if {
	not _f.client.found == true
} else := step.fail(
	errors.configuration(
		concat("", [
			"agent(s) ", concat(", ", _undeclaring), " declare no scopes for ", _c,
			"; pass the scopes to grant",
		]),
		concat("", [
			"grantwire connect ", _c, " --scopes <scopes>",
			concat("", [concat("", [" --grant-agent ", scopes.quote(a)]) | some a in _agents]),
		]),
		{"connector": _c, "agent_ids": _undeclaring},
	),
	[],
) if {
	count(_explicit) == 0
	count(_undeclaring) > 0
} else := step.fail(
	errors.configuration(
		concat("", [
			"reconnecting ", _c, " with no scopes would drop the ", format_int(count(_prior_scopes), 10),
			" scope(s) it holds or grants",
		]),
		scopes.connect_cmd(_c, _prior_scopes),
		{"connector": _c, "scopes": _prior_scopes},
	),
	[],
) if {
	count(_explicit) == 0
	count(_agents) == 0
	_prior
} else := step.need([facts.authorize("authorize", _c, _authorize_scopes)]) if {
	not facts.has(_f, "authorize")
} else := step.fail(errors.interactive_required(_c, _authorize_scopes), []) if {
	_auth.status == "interactive_required"
} else := step.fail(errors.consent_denied(_c, object.get(_auth, "error", "access_denied")), []) if {
	_auth.status == "denied"
} else := step.fail(errors.provider_error(_c, object.get(_auth, "http_status", 0), object.get(_auth, "error", "")), []) if {
	not _auth.status == "ok"
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _connect_locked_needs)
	count(m) > 0
} else := step.done(
	{
		"connector": _c, "account": _account, "scopes": _stored_scopes,
		"granted": {a: _agent_scopes(a) | some a in _agents},
	},
	_connect_effects,
)

# ---------------------------------------------------------------------------------------
# status (read-only)

_oauth_ids := [c | some c in catalog.ids; catalog.connectors[c].type != "mcp_server"]

_status_needs := array.concat(
	array.concat(
		[facts.connection(facts.key(["conn", c]), c) | some c in _oauth_ids],
		[facts.client(facts.key(["client", c]), c, false) | some c in _oauth_ids],
	),
	array.concat(
		[facts.mcp(facts.key(["mcp", c]), c) | some c in catalog.ids; catalog.connectors[c].type == "mcp_server"],
		[facts.ledger("grants", "grants", []), facts.ledger("actives", "activations", [])],
	),
)

# A mismatch under the (possibly cached) client is re-checked against a fresh read of the
# credential store, as every load of a connection is: another process may just have
# forwarded or reconnected under a new client. Nothing is locked or cleared.
_status_fresh := [facts.client(facts.key(["client@fresh", c]), c, true) |
	some c in _oauth_ids
	conn := _f[facts.key(["conn", c])]
	conn.found == true
	tripwire.verdict(conn, _f[facts.key(["client", c])]) in tripwire.resolvable
]

_status_client(c) := _f[k] if {
	k := facts.key(["client@fresh", c])
	facts.has(_f, k)
} else := _f[facts.key(["client", c])]

_all_grants := facts.value(_f, "grants", {})

_all_actives := facts.value(_f, "actives", {})

_entry(c) := object.union(
	{
		"id": c,
		"type": catalog.connectors[c].type,
		"display_name": object.get(catalog.connectors[c], "display_name", c),
		"category": object.get(catalog.connectors[c], "category", ""),
		"tier": object.get(catalog.connectors[c], "tier", ""),
		"grants": object.get(_all_grants, c, {}),
		"activations": sort([a | some a, v in object.get(_all_actives, c, {}); v == true]),
	},
	_state(c),
)

_state(c) := {"configured": _f[k].found == true, "env_keys": object.get(_f[k], "keys", [])} if {
	catalog.connectors[c].type == "mcp_server"
	k := facts.key(["mcp", c])
} else := {"configured": false, "client_configured": _status_client(c).found == true} if {
	not _f[facts.key(["conn", c])].found == true
} else := {
	"configured": true,
	"client_configured": _status_client(c).found == true,
	"account": object.get(conn, "account", ""),
	"scopes": scopes.sorted(object.get(conn, "scopes", [])),
	"connected_at": object.get(conn, "connected_at", null),
	"tripwire": tripwire.reason[tripwire.verdict(conn, _status_client(c))],
} if {
	conn := _f[facts.key(["conn", c])]
}

_status_ids := [_c] if is_string(_c)

else := catalog.ids

# METADATA
# title: status decision
# description: |
#   Every catalog connector (or one) with its connection state, grants and activations. A
#   client-hash mismatch is re-checked against a fresh read of the client configuration,
#   then reported ("tripwire"); nothing is cleared or locked.
# entrypoint: true
status := step.fail(errors.unknown_connector(_c), []) if {
	is_string(_c)
	not catalog.known(_c)
} else := step.need(m) if {
	m := facts.missing(_f, _status_needs)
	count(m) > 0
} else := step.need(m) if {
	m := facts.missing(_f, _status_fresh)
	count(m) > 0
} else := step.done({"connectors": [_entry(c) | some c in _status_ids]}, [])

# ---------------------------------------------------------------------------------------
# connections (tripwire enforced)

_oauth_only := [c | some c in catalog.ids; catalog.oauth(c)]

_ck(kind, c) := facts.key([kind, c])

_round1 := array.concat(
	[facts.connection(_ck("conn", c), c) | some c in _oauth_only],
	[facts.client(_ck("client", c), c, false) | some c in _oauth_only],
)

_connected := [c | some c in _oauth_only; _f[_ck("conn", c)].found == true]

_client_of(c) := _f[_ck("client@fresh", c)] if facts.has(_f, _ck("client@fresh", c))

else := _f[_ck("client", c)]

_v1(c) := tripwire.verdict(_f[_ck("conn", c)], _client_of(c))

_round2 := [facts.client(_ck("client@fresh", c), c, true) |
	some c in _connected
	_v1(c) in tripwire.resolvable
]

# Providers that still mismatch after the fresh read (and so need their lock).
_suspect := [c | some c in _connected; _v1(c) != "ok"; _v1(c) != "no_client"]

_round3 := [n |
	some c in _suspect
	some n in [
		facts.lock(_ck("lock", c), c, 500),
		facts.after(facts.connection(_ck("conn@lock", c), c), _ck("lock", c)),
		facts.after(facts.client(_ck("client@lock", c), c, true), _ck("lock", c)),
	]
]

_busy(c) if facts.not_held(_f, _ck("lock", c))

_v2(c) := tripwire.verdict(_f[_ck("conn@lock", c)], _f[_ck("client@lock", c)]) if {
	_f[_ck("conn@lock", c)].found == true
} else := "gone"

_final_conn(c) := _f[_ck("conn@lock", c)] if c in _suspect

else := _f[_ck("conn", c)]

_row_ok(c) := {
	"provider": c,
	"account_email": object.get(_final_conn(c), "account", ""),
	"scopes": scopes.sorted(object.get(_final_conn(c), "scopes", [])),
	"connected_at": object.get(_final_conn(c), "connected_at", null),
}

_listed := [r |
	some c in _connected
	r := _row(c)
]

_row(c) := {"provider": c, "error": "busy", "scopes": []} if {
	c in _suspect
	_busy(c)
} else := {"provider": c, "error": "configuration", "scopes": []} if {
	_v1(c) == "no_client"
} else := _row_ok(c) if {
	not c in _suspect
} else := _row_ok(c) if {
	_v2(c) == "ok"
} else := {"provider": c, "error": "configuration", "scopes": []} if {
	_v2(c) == "no_client"
}

_cleared := [c |
	some c in _suspect
	not _busy(c)
	_v2(c) in tripwire.clearing
]

_clear_effects := [e |
	some c in _cleared
	some e in [
		{"kind": "connection.delete", "provider": c, "expect": {"version": _f[_ck("conn@lock", c)].version}},
		{"kind": "token.delete", "provider": c},
		{
			"kind": "event.emit", "type": "connector.connection.cleared",
			"payload": {"connector_id": c, "reason": tripwire.reason[_v2(c)]},
		},
	]
]

# METADATA
# title: connections decision
# description: |
#   The OAuth connections, each judged by the tripwire: a mismatch is re-checked against a
#   fresh read of the client configuration, and a connection that still mismatches is
#   cleared under its provider's lock (listed under "cleared"), or kept as a row with
#   "error": "busy" and no scopes when another operation holds the lock.
# entrypoint: true
connections := step.need(m) if {
	m := facts.missing(_f, _round1)
	count(m) > 0
} else := step.need(m) if {
	m := facts.missing(_f, _round2)
	count(m) > 0
} else := step.need(m) if {
	m := [n | some n in facts.missing(_f, _round3); not _skipped(n)]
	count(m) > 0
} else := step.done(
	{
		"connections": _listed,
		"cleared": [{"provider": c, "reason": tripwire.reason[_v2(c)]} | some c in _cleared],
	},
	_clear_effects,
)

# A need read under a lock that was not taken is never fetched.
_skipped(n) if facts.not_held(_f, n.after)
