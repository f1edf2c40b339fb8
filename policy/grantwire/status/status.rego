# METADATA
# title: What is connected
# description: |
#   Three read views. `status` lists every catalog connector (or one) with its connection
#   state, grants and activations; it is read-only and reports a client-hash mismatch
#   without clearing anything. `connections` lists the OAuth connections and enforces the
#   tripwire (clearing stale connections under each provider's lock, and keeping a row with
#   "error": "busy" when the lock is held elsewhere). `test_connector` says whether one
#   connector is usable, as an error with its fix when it is not.
package grantwire.status

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.gate
import data.grantwire.mcp
import data.grantwire.remote
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store
import data.grantwire.tripwire

_f := object.get(input, "facts", {})

_c := input.args.connector

_ck(kind, c) := facts.key([kind, c])

# ---------------------------------------------------------------------------------------
# status (read-only)

_ids := [_c] if is_string(_c)

else := catalog.ids

_oauth_ids := [c | some c in _ids; catalog.oauth(c)]

_status_needs := array.concat(
	array.concat(
		[store.conn_need(_ck("conn", c), c) | some c in _oauth_ids],
		[n | some c in _oauth_ids; some n in store.client_needs(_ck("client", c), c, false)],
	),
	[
		facts.ledger("mcp", store.mcp_file, []),
		remote.ledger_need,
		facts.ledger("grants", store.grants_file, []),
		facts.ledger("actives", store.activations_file, ["activations"]),
	],
)

_conn(c) := store.connection(_f[_ck("conn", c)])

# A mismatch under the (possibly remembered) client is re-checked against a fresh read of
# the credential store, as every load of a connection is: another process may just have
# forwarded or reconnected under a new client. Nothing is locked or cleared.
_status_fresh := [n |
	some c in _oauth_ids
	_conn(c).found == true
	tripwire.verdict(_conn(c), store.client(_f, _ck("client", c), c)) in tripwire.resolvable
	some n in store.client_needs(_ck("client@fresh", c), c, true)
]

_client(c) := store.client(_f, _ck("client@fresh", c), c) if {
	store.client_read(_f, _ck("client@fresh", c))
} else := store.client(_f, _ck("client", c), c)

_all_grants := facts.value(_f, "grants", {})

_all_actives := facts.value(_f, "actives", {})

_bool(x) if x == true

else := false

_entry(c) := object.union(
	{
		"id": c,
		"type": catalog.type_of(c),
		"display_name": object.get(catalog.connectors[c], "display_name", c),
		"category": object.get(catalog.connectors[c], "category", ""),
		"tier": object.get(catalog.connectors[c], "tier", ""),
		"grants": object.get(_all_grants, c, {}),
		"activations": sort([a | some a, v in object.get(_all_actives, c, {}); v == true]),
	},
	_state(c),
)

_state(c) := {
	"configured": _configured_mcp_bool(c),
	"env_keys": mcp.keys(_f.mcp, c),
	"missing_keys": mcp.missing_keys(c, _f.mcp),
} if {
	catalog.type_of(c) == "mcp_server"
} else := _remote_state(c) if {
	catalog.type_of(c) == "mcp_remote"
} else := {"configured": false} if {
	not catalog.oauth(c)
} else := {"configured": false, "client_configured": _bool(_client(c).found)} if {
	not _conn(c).found == true
} else := {
	"configured": true,
	"client_configured": _bool(_client(c).found),
	"account": object.get(_conn(c), "account", ""),
	"scopes": scopes.sorted(object.get(_conn(c), "scopes", [])),
	"connected_at": object.get(_conn(c), "connected_at", null),
	"tripwire": tripwire.reason[tripwire.verdict(_conn(c), _client(c))],
}

# A remote MCP server (the catalog's or one a person added): authorized when
# mcp_remote.json mirrors an authorization, with its issuer, scopes and time.
_remote_state(c) := {
	"configured": true, "url": s.url, "issuer": s.auth.issuer,
	"scopes": scopes.sorted(object.get(s.auth, "scopes", [])),
	"connected_at": object.get(s.auth, "authorized_at", null),
} if {
	s := remote.server(_f, c)
	is_string(s.auth.issuer)
} else := {"configured": false, "url": s.url} if {
	s := remote.server(_f, c)
} else := {"configured": false}

_configured_mcp(c) if mcp.entry(_f.mcp, c)

_configured_mcp_bool(c) if _configured_mcp(c)

else := false

# METADATA
# title: status decision
# description: |
#   Every catalog connector (or one) with its connection state, grants and activations. A
#   client-hash mismatch is re-checked against a fresh read of the client configuration,
#   then reported ("tripwire"); nothing is cleared or locked.
# entrypoint: true
status := step.need(m) if {
	# first: the remote servers a person added (mcp_remote.json) are connectors too
	m := facts.missing(_f, _status_needs)
	count(m) > 0
} else := step.fail(errors.unknown_connector(_c), []) if {
	is_string(_c)
	not catalog.known(_c)
} else := step.need(m) if {
	m := facts.missing(_f, _status_fresh)
	count(m) > 0
} else := step.done({"connectors": [_entry(c) | some c in _ids]}, [])

# ---------------------------------------------------------------------------------------
# connections (tripwire enforced)

_all_oauth := [c | some c in catalog.ids; catalog.oauth(c)]

_round1 := array.concat(
	[store.conn_need(_ck("conn", c), c) | some c in _all_oauth],
	[n | some c in _all_oauth; some n in store.client_needs(_ck("client", c), c, false)],
)

_connected := [c | some c in _all_oauth; _conn(c).found == true]

_v1(c) := tripwire.verdict(_conn(c), _client(c))

_round2 := [n |
	some c in _connected
	_v1(c) in tripwire.resolvable
	some n in store.client_needs(_ck("client@fresh", c), c, true)
]

# Providers that still mismatch after the fresh read (and so need their lock).
_suspect := [c | some c in _connected; _v1(c) != "ok"; _v1(c) != "no_client"]

_round3 := [n |
	some c in _suspect
	some n in array.concat(
		[
			facts.lock(_ck("lock", c), c, gate.tripwire_wait_ms),
			facts.after(store.conn_need(_ck("conn@lock", c), c), _ck("lock", c)),
			facts.after(facts.ledger(_ck("state@lock", c), store.state_file, [c]), _ck("lock", c)),
		],
		[facts.after(x, _ck("lock", c)) | some x in store.client_needs(_ck("client@lock", c), c, true)],
	)
]

_busy(c) if facts.not_held(_f, _ck("lock", c))

_lconn(c) := store.connection(_f[_ck("conn@lock", c)])

_v2(c) := tripwire.verdict(_lconn(c), store.client(_f, _ck("client@lock", c), c)) if {
	_lconn(c).found == true
} else := "gone"

_final_conn(c) := _lconn(c) if c in _suspect

else := _conn(c)

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
	some e in gate.clear(c, _lconn(c), _f[_ck("state@lock", c)], tripwire.reason[_v2(c)])
]

# A need read under a lock that was not taken is never fetched.
_skipped(n) if facts.not_held(_f, n.after)

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

# ---------------------------------------------------------------------------------------
# test_connector

_t := _entry(_c)

# A positive rule: a negated call on an undefined argument is false in Rego, not true.
_connector_arg if is_string(_c)

# METADATA
# title: test_connector decision
# description: |
#   Whether one connector is usable (read-only): an OAuth connection exists and matches the
#   configured client; a local MCP server is configured with every required key. The
#   result describes it; a failure is the error that says why, with its fix. (A shell then
#   checks what only it can: that the server's command can be started.)
# entrypoint: true
test := step.fail(errors.usage("test_connector needs connector"), []) if {
	not _connector_arg
} else := status if {
	status.status == "need"
} else := status if {
	status.error
} else := step.fail(errors.not_connected(_c, catalog.default_scopes(_c)), []) if {
	catalog.oauth(_c)
	not _t.configured == true
} else := step.fail(
	errors.configuration(
		concat("", ["no OAuth client is configured for ", _c]),
		store.configure_client_cmd(_c),
		{"connector": _c},
	),
	[],
) if {
	catalog.oauth(_c)
	_t.tripwire == "no_client"
} else := step.fail(
	errors.reauth_required(
		_c,
		concat("", ["the connection does not match the configured client (", _t.tripwire, "); it is cleared on its next use"]),
		_t.scopes,
	),
	[],
) if {
	catalog.oauth(_c)
	_t.tripwire != "ok"
} else := step.done(
	{
		"connector": _c, "ok": true, "type": _t.type,
		"account": _t.account, "scopes": _t.scopes,
		"detail": concat("", ["connected as ", _or(_t.account, "(account unknown)"), " with ", format_int(count(_t.scopes), 10), " scope(s)"]),
	},
	[],
) if {
	catalog.oauth(_c)
} else := step.fail(errors.not_connected_mcp(_c, sort([e.key | some e in mcp.env_spec(_c)])), []) if {
	_t.type == "mcp_server"
	not _t.configured == true
} else := step.fail(
	errors.configuration(concat("", [_c, " lacks ", concat(", ", _t.missing_keys)]), mcp.configure_fix(_c), {"connector": _c, "missing_keys": _t.missing_keys}),
	[],
) if {
	_t.type == "mcp_server"
	count(_t.missing_keys) > 0
} else := step.done(
	{
		"connector": _c, "ok": true, "type": _t.type,
		"env_keys": _t.env_keys,
		"command": object.get(catalog.connectors[_c], "command", ""),
		"detail": concat("", ["configured (", _or(concat(", ", _t.env_keys), "no keys"), ")"]),
	},
	[],
) if {
	_t.type == "mcp_server"
} else := step.fail(
	errors.configuration(concat("", [_c, " is a remote MCP server; test it with grantwire mcp list"]), "grantwire mcp list", {"connector": _c}),
	[],
)

_or(s, d) := s if s != ""

else := d
