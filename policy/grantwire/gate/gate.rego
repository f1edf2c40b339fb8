# METADATA
# title: The two-layer gate
# description: |
#   `get_access_token(provider, scopes, agent)`. In this order, stopping at the first failure:
#   the grant layer (AGENT_NOT_GRANTED), the connection (NOT_CONNECTED), the client-hash
#   tripwire (REAUTH_REQUIRED, TENANT_MISMATCH, BUSY), the connection layer
#   (CONNECTION_MISSING_SCOPES), then a cached access token valid for more than 60 s, else a
#   refresh under the provider's lock. The grant is checked before anything else is read:
#   the first question carries only the grant, the token cache and the clock, and the
#   connection and client are asked for only once the grant layer has passed, so an
#   ungranted agent learns nothing about the connection and never touches the keyring.
#
#   Phase A judges facts read without the lock (two questions, one keyring round, on the
#   hot path). Phase B takes the
#   provider's lock and judges facts re-read under it: a stale connection is cleared only
#   there, and a refresh happens only there, so two processes never refresh with the same
#   token and a caller that waited for another's refresh finds the fresh token cached.
package grantwire.gate

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.scopes
import data.grantwire.step
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

# METADATA
# title: default token lifetime
# description: The lifetime assumed when the token endpoint gives no positive expires_in (seconds).
default_expires_in := 3600

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
#   The facts read before the first question: the agent's grant, and the process's token
#   cache and clock (memory only). Nothing from the credential store is read until the
#   grant layer has passed, so an ungranted agent can never make the keyring prompt, fail
#   or even be consulted.
prefetch := [
	facts.ledger("grant", "grants", [_p, _a]),
	facts.token("token", _p),
	facts.now("now"),
]

# METADATA
# title: connection facts
# description: The facts read once the grant layer has passed (the stored connection and the client configuration).
connection_needs := [
	facts.connection("conn", _p),
	facts.client("client", _p, false),
]

# Cheaper than building the needs on the hot path (and than facts.has calls).
_prefetched if {
	_ = _f.grant
	_ = _f.token
	_ = _f.now
}

_connection_read if {
	_ = _f.conn
	_ = _f.client
}

_held := facts.value(_f, "grant", [])

_granted if {
	_f.grant.found == true
	scopes.covers(_held, _req)
}

_conn := _f.conn

_scopes_of(c) := c.scopes if is_array(c.scopes)

else := []

# The client configuration phase A is judged against: the fresh read when one was asked
# for, the shell's (possibly cached) configuration otherwise.
_client := _f["client@fresh"] if facts.has(_f, "client@fresh")

else := _f.client

_verdict_a := tripwire.verdict(_conn, _client)

_token_valid(t, conn, now) if {
	t.found == true
	t.expires_at - now > margin_ms
	t.client_id_hash == conn.client_id_hash
	t.connected_at == conn.connected_at
}

_cached(k, conn) := {
	"provider": _p,
	"access_token": facts.ref(k, "access_token"),
	"expires_at": _f[k].expires_at,
	"scopes": scopes.sorted(_scopes_of(conn)),
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
	errors.configuration(
		concat("", [_p, " is an MCP connector; access tokens exist only for OAuth connectors"]),
		concat("", ["grantwire mcp credential ", _p, " --agent ", scopes.quote(_a)]), {"connector": _p},
	),
	[],
) if {
	not catalog.oauth(_p)
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
} else := step.need([facts.client("client@fresh", _p, true)]) if {
	_verdict_a in tripwire.resolvable
	not facts.has(_f, "client@fresh")
} else := step.fail(_no_client, []) if {
	_verdict_a == "no_client"
} else := _phase_b(tripwire_wait_ms) if {
	_verdict_a != "ok"
}

# Phase A with a valid connection issued under the current client.
_phase_a_ok := step.fail(errors.connection_missing_scopes(_p, _a, _req, _scopes_of(_conn)), []) if {
	not scopes.covers(_scopes_of(_conn), _req)
} else := step.done(_cached("token", _conn), []) if {
	_token_valid(_f.token, _conn, _f.now)
} else := _phase_b(refresh_wait_ms)

_no_client := errors.configuration(
	concat("", ["no OAuth client is configured for ", _p]),
	concat("", ["grantwire configure ", _p, " --client-id <id>"]),
	{"connector": _p},
)

_locked_needs(wait) := [
	facts.lock("lock", _p, wait),
	facts.after(facts.connection("conn@lock", _p), "lock"),
	facts.after(facts.client("client@lock", _p, true), "lock"),
	facts.after(facts.token("token@lock", _p), "lock"),
	facts.after(facts.now("now@lock"), "lock"),
]

_phase_b(wait) := step.fail(errors.busy(_p), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _locked_needs(wait))
	count(m) > 0
} else := step.fail(errors.not_connected(_p, _req), []) if {
	not _lconn.found == true
} else := _locked(tripwire.verdict(_lconn, _f["client@lock"]))

_lconn := _f["conn@lock"]

_clear(reason) := [
	{"kind": "connection.delete", "provider": _p, "expect": {"version": _lconn.version}},
	{"kind": "token.delete", "provider": _p},
	{
		"kind": "event.emit", "type": "connector.connection.cleared",
		"payload": {"connector_id": _p, "reason": reason},
	},
]

_reconnect_scopes := scopes.union(_scopes_of(_lconn), _req)

_locked(v) := step.fail(
	errors.reauth_required(_p, "the stored connection was not valid JSON and has been cleared", _req),
	_clear("corrupt"),
) if {
	v == "corrupt"
} else := step.fail(_no_client, []) if {
	v == "no_client"
} else := step.fail(
	errors.reauth_required(_p, "the OAuth client was rotated; the stale connection has been cleared", _reconnect_scopes),
	_clear("client_rotated"),
) if {
	v == "client"
} else := step.fail(
	errors.tenant_mismatch(_p, _lconn.tenant, _f["client@lock"].tenant, _reconnect_scopes),
	_clear("tenant_mismatch"),
) if {
	v == "tenant"
} else := step.fail(errors.connection_missing_scopes(_p, _a, _req, _scopes_of(_lconn)), []) if {
	not scopes.covers(_scopes_of(_lconn), _req)
} else := step.done(_cached("token@lock", _lconn), []) if {
	_token_valid(_f["token@lock"], _lconn, _f["now@lock"])
} else := step.need([facts.refresh("refresh", _p, _lconn.refresh)]) if {
	not facts.has(_f, "refresh")
} else := _refreshed(_f.refresh)

_expires_in(r) := r.expires_in if {
	is_number(r.expires_in)
	r.expires_in > 0
	r.expires_in == floor(r.expires_in)
} else := default_expires_in

_expires_at(r) := _f["now@lock"] + (_expires_in(r) * 1000)

_refreshed(r) := step.done(
	{
		"provider": _p,
		"access_token": facts.ref("refresh", "access_token"),
		"expires_at": _expires_at(r),
		"scopes": scopes.sorted(_scopes_of(_lconn)),
	},
	array.concat(_rotation(r), [{
		"kind": "token.put", "provider": _p,
		"access": facts.ref("refresh", "access_token"),
		"expires_at": _expires_at(r),
		"client_id_hash": _lconn.client_id_hash,
		"connected_at": _lconn.connected_at,
	}]),
) if {
	r.status == 200
} else := step.fail(errors.connection_revoked(_p, _reconnect_scopes), [
	{"kind": "connection.delete", "provider": _p, "expect": {"refresh": _lconn.refresh}},
	{"kind": "token.delete", "provider": _p},
	{
		"kind": "event.emit", "type": "connector.connection.cleared",
		"payload": {"connector_id": _p, "reason": "invalid_grant"},
	},
]) if {
	r.status == 400
	r.error == "invalid_grant"
} else := step.fail(
	errors.reauth_required(_p, "the token endpoint answered 401; nothing was deleted", _reconnect_scopes),
	[],
) if {
	r.status == 401
} else := step.fail(errors.provider_error(_p, r.status, r.error), []) if {
	is_number(r.status)
	is_string(r.error)
} else := step.fail(errors.provider_error(_p, 0, "malformed response"), [])

# A rotated refresh token replaces the stored one only if the store still holds the one sent.
_rotation(r) := [{
	"kind": "connection.set_refresh", "provider": _p,
	"refresh": facts.ref("refresh", "refresh_token"),
	"expect": {"refresh": _lconn.refresh},
}] if {
	r.rotated == true
} else := []
