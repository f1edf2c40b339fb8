# METADATA
# title: The two-layer gate
# description: |
#   `get_access_token(provider, scopes, agent)`. In this order, stopping at the first failure:
#   a request of no scope (USAGE: a token carries every scope of its connection), the grant layer (AGENT_NOT_GRANTED), the connection (NOT_CONNECTED), the client-hash
#   tripwire (REAUTH_REQUIRED, TENANT_MISMATCH, BUSY), the connection layer
#   (CONNECTION_MISSING_SCOPES), then a cached access token valid for more than 60 s, else a
#   refresh under the provider's lock. The grant is checked before anything else is read:
#   the first question carries only the grant and the clock, and the credential store is
#   read only once the grant layer has passed, so an ungranted agent learns nothing about the
#   connection and never touches the keyring.
#
#   Phase A judges facts read without the lock (two questions, one round of keyring reads,
#   on the hot path). Phase B takes the provider's lock and judges facts re-read under it: a
#   stale connection is cleared only there, and a refresh happens only there, so two
#   processes never refresh with the same token, and a caller that waited for another's
#   refresh finds the fresh token stored. A refresh, once sent, is committed: its rotated
#   refresh token is saved even if the caller gives up (the server has already rotated).
package grantwire.gate

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.oauth
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store
import data.grantwire.transport
import data.grantwire.tripwire

# METADATA
# title: expiry margin
# description: A cached access token is used only while it stays valid for more than this many milliseconds.
margin_ms := 60000

# METADATA
# title: tripwire lock wait
# description: How long clearing a stale connection waits for the provider's lock before BUSY.
tripwire_wait_ms := 500

# METADATA
# title: refresh lock wait
# description: How long a refresh waits for the provider's lock (another caller may be refreshing).
refresh_wait_ms := 15000

_f := object.get(input, "facts", {})

_p := input.args.provider

_a := input.args.agent

_req := input.args.scopes

_valid_args if {
	is_string(_p)
	is_string(_a)
	_a != ""
	is_array(_req)
	every s in _req {
		is_string(s)
	}
}

# METADATA
# title: prefetch
# description: |
#   The facts read before the first question: the agent's grant and the clock. Nothing from
#   the credential store is read until the grant layer has passed, so an ungranted agent can
#   never make the keyring prompt, fail or even be consulted.
prefetch := [
	facts.ledger("grant", store.grants_file, [_p, _a]),
	facts.now("now"),
]

# METADATA
# title: connection facts
# description: |
#   The facts read once the grant layer has passed: the stored connection, the client
#   configuration and the cached access token (these two may come from the process's memory
#   of their slots; the connection is always read from the store).
connection_needs := array.concat(
	[store.conn_need("conn", _p), store.token_need("token", _p)],
	store.client_needs("client", _p, false),
)

# METADATA
# title: no scope requested
# description: |
#   A request of no scope is refused before anything is read. An access token carries every
#   scope of its connection, so handing one out for no scope would hand out all of them; and
#   because the request must name a scope the grant covers, a grant of no scope (`[]`) hands
#   out nothing either. (GAIA gives a token for `scopes=[]`, grant or none.)
no_scope_error(p) := errors.usage(concat("", [
	"an access token needs at least one scope: it carries every scope of the ", p,
	" connection, so a request of no scope gets none (name the scopes the agent needs, --scopes)",
]))

# Cheaper than building the needs on the hot path (and than facts.has calls).
_prefetched if {
	_ = _f.grant
	_ = _f.now
}

_connection_read if {
	_ = _f.conn
	_ = _f.token
	_ = _f["client@env_secret"]
}

_held := facts.value(_f, "grant", [])

_granted if {
	_f.grant.exists == true
	scopes.covers(_held, _req)
}

_conn := store.connection(_f.conn)

_client := store.client(_f, "client@fresh", _p) if store.client_read(_f, "client@fresh")

else := store.client(_f, "client", _p)

_verdict_a := tripwire.verdict(_conn, _client)

_result(t, conn) := {
	"provider": _p,
	"access_token": {"$ref": t.token["$ref"]},
	"expires_at": t.expires_at,
	"scopes": scopes.sorted(conn.scopes),
}

# METADATA
# title: get_access_token decision
# description: One step of the two-layer gate; see the package description for the order.
# entrypoint: true
decision := step.fail(errors.usage("get_access_token needs provider (connector id), agent (agent id) and scopes (array of strings)"), []) if {
	not _valid_args
} else := step.fail(errors.unknown_connector(_p), []) if {
	not catalog.known(_p)
} else := step.fail(
	errors.configuration(concat("", [_p, " is an MCP connector; access tokens exist only for OAuth connectors"]), "", {"connector": _p}),
	[],
) if {
	not catalog.oauth(_p)
} else := step.fail(no_scope_error(_p), []) if {
	count(_req) == 0
} else := step.need(facts.missing(_f, prefetch)) if {
	not _prefetched
} else := step.fail(errors.agent_not_granted(_p, _a, _req, _held), []) if {
	not _granted
} else := step.need(facts.missing(_f, connection_needs)) if {
	not _connection_read
} else := step.fail(errors.not_connected(_p, _req), []) if {
	not _conn.found == true
} else := _phase_a

# The tripwire verdict "ok" (the hot path) is judged first.
_phase_a := _phase_a_ok if {
	_verdict_a == "ok"
} else := step.need(store.client_needs("client@fresh", _p, true)) if {
	_verdict_a in tripwire.resolvable
	not store.client_read(_f, "client@fresh")
} else := step.fail(_no_client, []) if {
	_verdict_a == "no_client"
} else := _phase_b(tripwire_wait_ms) if {
	_verdict_a != "ok"
}

# Phase A with a valid connection issued under the current client.
_phase_a_ok := step.fail(errors.connection_missing_scopes(_p, _a, _req, _conn.scopes), []) if {
	not scopes.covers(_conn.scopes, _req)
} else := step.done(_result(t, _conn), []) if {
	t := store.token(_f.token, _conn, _f.now, margin_ms)
} else := _phase_b(refresh_wait_ms)

_no_client := errors.configuration(
	concat("", ["no OAuth client is configured for ", _p]),
	store.configure_client_cmd(_p),
	{"connector": _p},
)

_locked_needs(wait) := array.concat(
	[
		facts.lock("lock", _p, wait),
		facts.after(store.conn_need("conn@lock", _p), "lock"),
		facts.after(facts.keyring("token@lock", store.token_user(_p), ["access_token"], true), "lock"),
		facts.after(facts.now("now@lock"), "lock"),
		facts.after(facts.ledger("state@lock", store.state_file, [_p]), "lock"),
	],
	[facts.after(n, "lock") | some n in store.client_needs("client@lock", _p, true)],
)

_phase_b(wait) := step.fail(errors.busy(_p), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _locked_needs(wait))
	count(m) > 0
} else := step.fail(errors.not_connected(_p, _req), []) if {
	not _lconn.found == true
} else := _locked(tripwire.verdict(_lconn, _lclient))

_lconn := store.connection(_f["conn@lock"])

_lclient := store.client(_f, "client@lock", _p)

# METADATA
# title: clear a connection
# description: |
#   The effects that clear a provider's connection read under its lock (only if it is still
#   that version): the connection and its cached access token are deleted, its state.json
#   mirror is removed (unless state.json is unreadable), and connector.connection.cleared
#   says why.
clear(p, conn, state, reason) := array.concat(
	[
		{"kind": "keyring.delete", "user": store.conn_user(p), "expect": {"version": conn.version}},
		store.drop_token(p),
	],
	array.concat(mirror_delete(p, state), [{
		"kind": "event.emit", "type": "connector.connection.cleared",
		"payload": {"connector_id": p, "reason": reason},
	}]),
)

# METADATA
# title: remove the mirror
# description: Remove a provider's entry from state.json (nothing when it has none or state.json is unreadable).
mirror_delete(p, state) := [store.write(store.state_file, [{"path": [p], "delete": true}])] if {
	state.exists == true
	not store.problem(state)
} else := []

_reconnect_scopes := scopes.union(_lconn.scopes, _req) if _lconn.valid == true

else := _req

_locked(v) := step.fail(
	errors.reauth_required(_p, "the stored connection was not valid and has been cleared", _req),
	clear(_p, _lconn, _f["state@lock"], "corrupt"),
) if {
	v == "corrupt"
} else := step.fail(_no_client, []) if {
	v == "no_client"
} else := step.fail(
	errors.reauth_required(_p, "the OAuth client was rotated; the stale connection has been cleared", _reconnect_scopes),
	clear(_p, _lconn, _f["state@lock"], "client_rotated"),
) if {
	v == "client"
} else := step.fail(
	errors.tenant_mismatch(_p, _lconn.tenant, _lclient.tenant, _reconnect_scopes),
	clear(_p, _lconn, _f["state@lock"], "tenant_mismatch"),
) if {
	v == "tenant"
} else := step.fail(errors.connection_missing_scopes(_p, _a, _req, _lconn.scopes), []) if {
	not scopes.covers(_lconn.scopes, _req)
} else := step.done(_result(t, _lconn), []) if {
	t := store.token(_f["token@lock"], _lconn, _f["now@lock"], margin_ms)
} else := step.fail(errors.insecure_transport(oauth.endpoint_problem(_p, "token_url", _lclient.tenant)), []) if {
	not _token_endpoint_ok
} else := step.need([oauth.refresh_need("refresh", _p, _lclient, {"$ref": _lconn.refresh["$ref"]})]) if {
	not facts.has(_f, "refresh")
} else := _refreshed(oauth.response(_f.refresh))

# A positive rule: a negated call on an undefined argument is false in Rego, not true.
_token_endpoint_ok if transport.allowed(oauth.endpoint(_p, "token_url", _lclient.tenant))

_expires_at(r) := _f["now@lock"] + (r.expires_in * 1000)

# The scopes the connection holds after a refresh: those stored that the server says it
# granted (a refresh never widens scope), or what was stored when it said nothing.
_held_after(r) := [s | some s in _lconn.scopes; s in scopes.set(r.scope)] if {
	is_array(r.scope)
} else := _lconn.scopes

_rotated(r) if {
	is_object(r.refresh)
	r.refresh.digest != _lconn.refresh.digest
}

# The connection blob is rewritten (only if it is still the version read under the lock)
# when the server rotated the refresh token or changed the granted scopes.
_save(r) := [{
	"kind": "keyring.set", "user": store.conn_user(_p),
	"value": object.union(_lconn.blob, {
		"refresh_token": _new_refresh(r),
		"scopes": _held_after(r),
	}),
	"expect": {"version": _lconn.version},
}] if {
	_changed(r)
} else := []

_changed(r) if _rotated(r)

_changed(r) if scopes.sorted(_held_after(r)) != scopes.sorted(_lconn.scopes)

_new_refresh(r) := {"$ref": r.refresh["$ref"]} if _rotated(r)

else := {"$ref": _lconn.refresh["$ref"]}

_token_effect(r) := store.put_token(
	_p, {"$ref": r.access["$ref"]}, _expires_at(r),
	_lconn.client_id_hash, _lconn.connected_at,
)

_refreshed(r) := step.fail(
	errors.connection_missing_scopes(_p, _a, _req, _held_after(r)),
	array.concat(_save(r), [_token_effect(r)]),
) if {
	r.ok == true
	not scopes.covers(_held_after(r), _req)
} else := step.done(
	{
		"provider": _p,
		"access_token": {"$ref": r.access["$ref"]},
		"expires_at": _expires_at(r),
		"scopes": scopes.sorted(_held_after(r)),
	},
	array.concat(_save(r), [_token_effect(r)]),
) if {
	r.ok == true
} else := step.fail(
	errors.reauth_required(_p, "the token endpoint answered 401 (invalid_grant); nothing was deleted", _reconnect_scopes),
	[],
) if {
	r.kind == "oauth"
	r.error == "invalid_grant"
	r.status == 401
} else := step.fail(
	errors.connection_revoked(_p, _reconnect_scopes),
	clear(_p, _lconn, _f["state@lock"], "invalid_grant"),
) if {
	r.kind == "oauth"
	r.error == "invalid_grant"
} else := step.fail(
	errors.reauth_required(_p, "the token endpoint refused the public client (invalid_client); nothing was deleted", _reconnect_scopes),
	[],
) if {
	r.kind == "oauth"
	r.error == "invalid_client"
	oauth.public_client(_p, _lclient)
} else := step.fail(oauth.invalid_client(_p, _lclient), []) if {
	r.kind == "oauth"
	r.error == "invalid_client"
} else := step.fail(
	errors.reauth_required(_p, "the token endpoint answered 401; nothing was deleted", _reconnect_scopes),
	[],
) if {
	r.status == 401
} else := step.fail(errors.token_failure(_p, r), [])
