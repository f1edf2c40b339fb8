# METADATA
# title: Disconnect
# description: |
#   Delete a connector's secrets and metadata and wipe its grants and activations, so that
#   connecting the same id again inherits nothing. The OAuth client configuration is kept (it
#   is the application's registration, not the user's connection). Idempotent. Revoking
#   access must always be possible: a ledger that cannot be read is left as it is (the
#   result says which, and how to move it aside) and everything else is still wiped; an
#   MCP server whose mcp_servers.json is unreadable has every key its catalog entry names
#   deleted. When
#   the catalog names a revocation endpoint, the refresh token is also revoked at the
#   provider (RFC 7009), best effort, after the local wipe.
package grantwire.disconnect

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.gate
import data.grantwire.grants
import data.grantwire.mcp
import data.grantwire.oauth
import data.grantwire.step
import data.grantwire.store

# METADATA
# title: disconnect lock wait
# description: How long disconnect waits for the connector's lock.
lock_wait_ms := 5000

_f := object.get(input, "facts", {})

_c := input.args.connector

# A positive helper: `not is_string(_c)` is undefined (not true) when _c is undefined.
_connector_arg if is_string(_c)

_type := catalog.type_of(_c)

_mcp_server if _type == "mcp_server"

_needs := array.concat(
	[
		facts.lock("lock", _c, lock_wait_ms),
		facts.after(facts.ledger("grants", store.grants_file, [_c]), "lock"),
		facts.after(facts.ledger("actives", store.activations_file, ["activations", _c]), "lock"),
		facts.after(store.tool_rules_need("rules", _c), "lock"),
	],
	[facts.after(n, "lock") | some n in _stored_needs],
)

_stored_needs := [facts.ledger("mcp", store.mcp_file, [])] if {
	_mcp_server
} else := array.concat(
	[store.conn_need("conn", _c), facts.ledger("state", store.state_file, [_c])],
	store.client_needs("client", _c, true),
)

_usable(k) if {
	facts.has(_f, k)
	not store.problem(_f[k])
}

_conn := store.connection(_f.conn)

_client := store.client(_f, "client", _c)

# The stored values to delete: the keys the server's mcp_servers.json entry lists, or,
# when that file cannot be read, every key the catalog says the server takes (deleting an
# absent slot is fine), so its secrets are deleted all the same.
_mcp_keys := mcp.keys(_f.mcp, _c) if _usable("mcp")

else := sort([e.key | some e in mcp.env_spec(_c)])

_removed if _conn.found == true

_removed if mcp.entry(_f.mcp, _c)

_removed_bool if _removed

else := false

_delete_stored := array.concat(
	[{"kind": "keyring.delete", "user": store.mcp_user(_c, k)} | some k in _mcp_keys],
	[store.write(store.mcp_file, [{"path": [store.mcp_key(_f.mcp.value), _c], "delete": true}]) |
		_usable("mcp")
		mcp.entry(_f.mcp, _c)
	],
) if {
	_mcp_server
} else := array.concat(
	[
		{"kind": "keyring.delete", "user": store.conn_user(_c)},
		store.drop_token(_c),
	],
	gate.mirror_delete(_c, _f.state),
)

_granted_agents := sort(object.keys(facts.value(_f, "grants", {}))) if _usable("grants")

else := []

_active_agents := sort([a | some a, v in facts.value(_f, "actives", {}); v == true]) if _usable("actives")

else := []

_wipe_grants := array.concat(
	[store.write(store.grants_file, [{"path": [_c], "delete": true, "expect": store.expect(_f.grants)}])],
	[grants.changed_event(_c, a, []) | some a in _granted_agents],
) if {
	_usable("grants")
	_f.grants.exists == true
} else := []

_wipe_actives := array.concat(
	[store.write(store.activations_file, [{"path": ["activations", _c], "delete": true, "expect": store.expect(_f.actives)}])],
	[grants.activation_event(_c, a, false) | some a in _active_agents],
) if {
	_usable("actives")
	_f.actives.exists == true
} else := []

_unclean := [k | some k in ["grants", "actives", "mcp", "state"]; facts.has(_f, k); store.problem(_f[k])]

_warnings := [concat("", [
	"could not clean ", _f[k].file, " (", store.problem(_f[k]), "); ",
	"everything else was removed; move it aside: ", errors.move_aside(_f[k].file),
]) |
	some k in _unclean
]

_revoke := [e |
	not _mcp_server
	_conn.valid == true
	e := oauth.revoke_effect(_c, _client, {"$ref": _conn.refresh["$ref"]})
]

# METADATA
# title: disconnect decision
# description: Wipe a connector; see the package description.
# entrypoint: true
decision := step.fail(errors.usage("disconnect needs connector"), []) if {
	not _connector_arg
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.need([store.probe_need(_c)]) if {
	not store.probed(_f)
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _needs)
	count(m) > 0
} else := step.done(
	{
		"connector": _c,
		"removed": _removed_bool,
		"revoked_grants": _granted_agents,
		"deactivated": _active_agents,
		"revoked_at_provider": count(_revoke) > 0,
		"warnings": _warnings,
	},
	array.concat(
		array.concat(_delete_stored, array.concat(_wipe_grants, array.concat(_wipe_actives, store.wipe_tool_rules(_f.rules, _c)))),
		array.concat(
			[{"kind": "event.emit", "type": "connector.disconnected", "payload": {"connector_id": _c}}],
			_revoke,
		),
	),
)
