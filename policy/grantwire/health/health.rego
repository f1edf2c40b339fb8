# METADATA
# title: Connections kept healthy
# description: |
#   `maintain`: one health pass over the OAuth connections that connectors/state.json lists,
#   run by `grantwire serve` on a timer whose next tick is this operation's answer. For each
#   connection it decides, from the cached access token's expiry, the time the refresh token
#   was last used, the catalog's refresh_token_inactivity_days and the failures recorded in
#   the connection's state.json entry (member "health"): refresh now (the access token
#   expires within refresh_ahead_ms, so no caller of get_access_token waits on a refresh),
#   keep the refresh token alive (its last use is within keepalive_margin_days of the
#   provider's inactivity limit), wait (exponential back-off after failures, from
#   backoff_base_ms doubling up to backoff_cap_ms), or only report.
#
#   Refreshes happen under each provider's lock after re-reading the connection, as the
#   gate's do. A success stores the access token and a rotated refresh token and records
#   refreshed_at; invalid_grant (revoked at the provider) clears the connection and leaves a
#   state.json entry {configured: false, health: {state: revoked}}; any other failure
#   records one more failure and when to retry. Each of these writes emits
#   connector.health {connector_id, state (healthy, expiring, failing, revoked), reason,
#   fix, failures, retry_at}: a recovery, every failure, a revocation. The result lists
#   every connection's state and action and next_run_at, the time the next pass is due.
package grantwire.health

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
# title: refresh ahead
# description: |
#   An access token that expires within this many milliseconds is refreshed by the health
#   pass (five times the gate's margin, so a caller never finds it within the gate's margin).
refresh_ahead_ms := 300000

# METADATA
# title: keep-alive margin
# description: A refresh token last used this many days before the provider's inactivity limit is used again.
keepalive_margin_days := 14

# METADATA
# title: expiring window
# description: A refresh token that could not be kept alive this many days before the limit is reported expiring.
expiring_days := 7

# METADATA
# title: back-off base
# description: The wait after the first failure (milliseconds); each further failure doubles it.
backoff_base_ms := 60000

# METADATA
# title: back-off cap
# description: The longest wait between two attempts at a failing provider (milliseconds).
backoff_cap_ms := 3600000

# METADATA
# title: longest interval
# description: The longest time between two health passes (milliseconds).
max_interval_ms := 900000

# METADATA
# title: shortest interval
# description: The shortest time between two health passes (milliseconds).
min_interval_ms := 1000

# METADATA
# title: lock wait
# description: How long a health refresh waits for a provider's lock; a busy provider is left to the next pass.
lock_wait_ms := 100

_day_ms := 86400000

_f := object.get(input, "facts", {})

_k(kind, p) := facts.key([kind, p])

# METADATA
# title: prefetch
# description: The facts read before the first question (the whole state.json and the clock).
prefetch := [
	facts.ledger("state", store.state_file, []),
	facts.now("now"),
]

_now := _f.now

_state := object.get(_f.state, "value", {}) if is_object(object.get(_f.state, "value", {}))

else := {}

_entry(p) := e if {
	e := _state[p]
	is_object(e)
} else := {}

_health(p) := h if {
	h := _entry(p).health
	is_object(h)
} else := {}

_num(o, k) := o[k] if is_number(o[k])

else := 0

# METADATA
# title: the connections a pass keeps
# description: The OAuth connectors state.json lists as configured, in id order.
listed := sort([p | some p, e in _state; is_object(e); e.configured == true; catalog.oauth(p)])

# The revoked connections state.json still remembers (reported, never refreshed).
_revoked := sort([p |
	some p, e in _state
	is_object(e)
	not e.configured == true
	_health(p).state == "revoked"
	catalog.oauth(p)
])

_token_needs := [store.token_need(_k("token", p), p) | some p in listed]

# METADATA
# title: inactivity limit
# description: The provider's refresh token inactivity limit in milliseconds (undefined when the catalog gives none).
inactivity_ms(p) := d * _day_ms if {
	d := catalog.connectors[p].refresh_token_inactivity_days
	is_number(d)
	d > 0
}

# METADATA
# title: back-off
# description: The wait after n consecutive failures (n ≥ 1), backoff_base_ms doubled n-1 times, at most backoff_cap_ms.
backoff(n) := min([backoff_base_ms * _doubling[n - 1], backoff_cap_ms]) if {
	n <= count(_doubling)
} else := backoff_cap_ms

_doubling := [1, 2, 4, 8, 16, 32, 64]

# When the refresh token was last used: the later of the last recorded refresh and the
# connection's creation.
_last_use(p) := max([_num(_health(p), "refreshed_at"), _num(_entry(p), "connected_at")])

_failures(p) := _num(_health(p), "failures")

_retry_at(p) := _num(_health(p), "failed_at") + backoff(_failures(p)) if _failures(p) > 0

else := 0

_expires_at(p) := j.expires_at if {
	t := _f[_k("token", p)]
	t.found == true
	j := t.json
	is_object(j)
	is_number(j.expires_at)
}

_refresh_at(p) := _expires_at(p) - refresh_ahead_ms

_keepalive_at(p) := (_last_use(p) + inactivity_ms(p)) - (keepalive_margin_days * _day_ms)

_due_times(p) := array.concat(_refresh_times(p), _keepalive_times(p))

# Only a token still valid is refreshed ahead of its expiry: an expired one is nobody's
# to keep (the next caller refreshes it; the keep-alive keeps the refresh token usable).
_refresh_times(p) := [_refresh_at(p)] if _expires_at(p) > _now

else := []

_keepalive_times(p) := [_keepalive_at(p)] if inactivity_ms(p)

else := []

# The time a connection next needs a refresh (undefined when nothing is due ever: no
# cached token and no inactivity limit), and when it may be attempted (after its back-off).
_due_at(p) := min(_due_times(p)) if count(_due_times(p)) > 0

_attempt_at(p) := max([_due_at(p), _retry_at(p)])

_reason(p) := "expiry" if {
	_expires_at(p) > _now
	_refresh_at(p) <= _now
} else := "keepalive"

_due(p) if _attempt_at(p) <= _now

_to_refresh := [p | some p in listed; _due(p)]

# The reported state of a connection from what is recorded (and, for expiring, the clock).
_expiring(p, last_use) if (last_use + inactivity_ms(p)) - (expiring_days * _day_ms) <= _now

_state_of(p, failures, last_use) := "expiring" if {
	_expiring(p, last_use)
} else := "failing" if {
	failures > 0
} else := "healthy"

# ---------------------------------------------------------------------------------------
# under the lock

_locked_needs := [n |
	some p in _to_refresh
	some n in array.concat(
		[
			facts.lock(_k("lock", p), p, lock_wait_ms),
			facts.after(store.conn_need(_k("conn@lock", p), p), _k("lock", p)),
			facts.after(facts.keyring(_k("token@lock", p), store.token_user(p), ["access_token"], true), _k("lock", p)),
			facts.after(facts.ledger(_k("state@lock", p), store.state_file, [p]), _k("lock", p)),
		],
		[facts.after(x, _k("lock", p)) | some x in store.client_needs(_k("client@lock", p), p, true)],
	)
]

# A need read under a lock is asked for with the lock, and again only while the lock is
# held (a busy provider is left to the next pass).
_fetchable(n) if not n.after

_fetchable(n) if not facts.has(_f, n.after)

_fetchable(n) if _f[n.after] == "held"

_held(p) if _f[_k("lock", p)] == "held"

_lconn(p) := store.connection(_f[_k("conn@lock", p)])

_lclient(p) := store.client(_f, _k("client@lock", p), p)

# Why a due connection is not refreshed under its lock (undefined when it is).
_skip(p) := "busy" if {
	not _held(p)
} else := "not_connected" if {
	not _lconn(p).found == true
} else := "tripwire" if {
	tripwire.verdict(_lconn(p), _lclient(p)) != "ok"
} else := "insecure_transport" if {
	not _endpoint_ok(p)
} else := "fresh" if {
	_reason(p) == "expiry"
	store.token(_f[_k("token@lock", p)], _lconn(p), _now, refresh_ahead_ms)
}

_endpoint_ok(p) if transport.allowed(oauth.endpoint(p, "token_url", _lclient(p).tenant))

_refreshing := [p | some p in _to_refresh; not _skip(p)]

_refresh_needs := [oauth.refresh_need(_k("refresh", p), p, _lclient(p), {"$ref": _lconn(p).refresh["$ref"]}) |
	some p in _refreshing
]

_r(p) := oauth.response(_f[_k("refresh", p)])

_outcome(p) := "refreshed" if {
	_r(p).ok == true
} else := "revoked" if {
	_r(p).kind == "oauth"
	_r(p).error == "invalid_grant"
} else := "failed"

# ---------------------------------------------------------------------------------------
# the plan

_conn_scopes(p) := scopes.sorted(_lconn(p).scopes) if _lconn(p).valid == true

else := scopes.sorted(object.get(_entry(p), "scopes", []))

# Reconnecting fixes every state but healthy: a failing provider is retried on its own,
# and reconnecting is what a person can do when the failures last.
_fix(p, st) := scopes.connect_cmd(p, _conn_scopes(p)) if {
	st != "healthy"
} else := ""

_event(p, st, reason, failures, retry_at) := {
	"kind": "event.emit", "type": "connector.health",
	"payload": {
		"connector_id": p, "state": st, "reason": reason, "fix": _fix(p, st),
		"failures": failures, "retry_at": retry_at,
	},
}

_write_health(p, h) := [store.write(store.state_file, [{"path": [p, "health"], "value": h}])] if {
	_f[_k("state@lock", p)].exists == true
	not store.problem(_f[_k("state@lock", p)])
} else := []

_expires_in_ms(p) := _r(p).expires_in * 1000

_rotated(p) if {
	is_object(_r(p).refresh)
	_r(p).refresh.digest != _lconn(p).refresh.digest
}

_held_after(p) := [s | some s in _lconn(p).scopes; s in scopes.set(_r(p).scope)] if {
	is_array(_r(p).scope)
} else := _lconn(p).scopes

_save(p) := [{
	"kind": "keyring.set", "user": store.conn_user(p),
	"value": object.union(_lconn(p).blob, {
		"refresh_token": {"$ref": _r(p).refresh["$ref"]},
		"scopes": _held_after(p),
	}),
	"expect": {"version": _lconn(p).version},
}] if {
	_rotated(p)
} else := [{
	"kind": "keyring.set", "user": store.conn_user(p),
	"value": object.union(_lconn(p).blob, {"scopes": _held_after(p)}),
	"expect": {"version": _lconn(p).version},
}] if {
	scopes.sorted(_held_after(p)) != scopes.sorted(_lconn(p).scopes)
} else := []

# The access token of a refresh ahead of expiry is cached for the next caller; that of a
# keep-alive is not (caching it would start refreshing, every hour, a connection nobody uses).
_put_token(p) := [store.put_token(p, {"$ref": _r(p).access["$ref"]}, _now + _expires_in_ms(p), _lconn(p).client_id_hash, _lconn(p).connected_at)] if {
	_reason(p) == "expiry"
} else := []

_recovered_event(p) := [_event(p, "healthy", _reason(p), 0, null)] if {
	_health(p).state in {"failing", "expiring"}
} else := []

_effects(p) := array.flatten([
	_save(p),
	_put_token(p),
	_write_health(p, {"state": "healthy", "refreshed_at": _now}),
	_recovered_event(p),
]) if {
	_outcome(p) == "refreshed"
} else := array.flatten([
	[
		{"kind": "keyring.delete", "user": store.conn_user(p), "expect": {"version": _lconn(p).version}},
		store.drop_token(p),
	],
	_write_revoked(p),
	[
		{"kind": "event.emit", "type": "connector.connection.cleared", "payload": {"connector_id": p, "reason": "invalid_grant"}},
		_event(p, "revoked", "invalid_grant", 0, null),
	],
]) if {
	_outcome(p) == "revoked"
} else := array.concat(
	_write_health(p, object.union(_health(p), {
		"state": _failed_state(p), "failures": _failures(p) + 1, "failed_at": _now,
		"error": _r(p).error,
	})),
	[_event(p, _failed_state(p), _r(p).error, _failures(p) + 1, _now + backoff(_failures(p) + 1))],
)

_failed_state(p) := _state_of(p, _failures(p) + 1, _last_use(p))

_write_revoked(p) := [store.write(store.state_file, [{"path": [p], "value": {
	"configured": false,
	"health": {"state": "revoked", "revoked_at": _now, "scopes": _conn_scopes(p)},
}}])] if {
	_f[_k("state@lock", p)].exists == true
	not store.problem(_f[_k("state@lock", p)])
} else := []

# ---------------------------------------------------------------------------------------
# the result

_row(p) := {"connector": p, "state": "healthy", "action": "refreshed", "reason": _reason(p), "next_at": n} if {
	p in _refreshing
	_outcome(p) == "refreshed"
	n := _next_after_refresh(p)
} else := {"connector": p, "state": "revoked", "action": "cleared", "reason": "invalid_grant", "fix": _fix(p, "revoked")} if {
	p in _refreshing
	_outcome(p) == "revoked"
} else := {
	"connector": p, "state": st, "action": "backoff", "reason": _r(p).error,
	"failures": _failures(p) + 1, "next_at": _now + backoff(_failures(p) + 1), "fix": _fix(p, st),
} if {
	p in _refreshing
	st := _failed_state(p)
} else := {"connector": p, "state": _reported(p), "action": "skipped", "reason": _skip(p), "next_at": _now + backoff_base_ms} if {
	p in _to_refresh
} else := object.union(
	{"connector": p, "state": _reported(p), "action": _wait_action(p), "fix": _fix(p, _reported(p))},
	_next_member(p),
)

_reported(p) := _state_of(p, _failures(p), _last_use(p))

_wait_action(p) := "backoff" if _failures(p) > 0

else := "none"

_next_member(p) := {"next_at": t} if t := _attempt_at(p)

else := {}

# A token shorter-lived than twice refresh_ahead_ms is next refreshed at half its lifetime.
_next_after_refresh(p) := _now + max([_expires_in_ms(p) - refresh_ahead_ms, _expires_in_ms(p) / 2]) if {
	_reason(p) == "expiry"
} else := (_now + inactivity_ms(p)) - (keepalive_margin_days * _day_ms)

_revoked_row(p) := {
	"connector": p, "state": "revoked", "action": "none", "reason": "invalid_grant",
	"fix": scopes.connect_cmd(p, scopes.sorted(object.get(_health(p), "scopes", []))),
}

_rows := array.concat([_row(p) | some p in listed], [_revoked_row(p) | some p in _revoked])

_nexts := [t | some r in _rows; t := r.next_at]

# METADATA
# title: next run
# description: When the next pass is due, the earliest next_at of a connection, from min_interval_ms to max_interval_ms after now.
next_run_at := max([_now + min_interval_ms, min(array.concat(_nexts, [_now + max_interval_ms]))])

_all_effects := [e | some p in _refreshing; some e in _effects(p)]

# METADATA
# title: maintain decision
# description: One step of a health pass; see the package description.
# entrypoint: true
decision := step.need(facts.missing(_f, prefetch)) if {
	not _prefetched
} else := step.fail(errors.corrupt_ledger(store.ledger_name(store.state_file), _f.state.file, store.problem(_f.state)), []) if {
	store.problem(_f.state)
} else := step.need(m) if {
	m := facts.missing(_f, _token_needs)
	count(m) > 0
} else := step.need(m) if {
	m := [n | some n in facts.missing(_f, _locked_needs); _fetchable(n)]
	count(m) > 0
} else := step.need(m) if {
	m := facts.missing(_f, _refresh_needs)
	count(m) > 0
} else := step.done({"connections": _rows, "next_run_at": next_run_at}, _all_effects)

_prefetched if {
	_ = _f.state
	_ = _f.now
}

# ---------------------------------------------------------------------------------------
# what a page shows after a reload

# METADATA
# title: stored health
# description: |
#   What the last health pass recorded of connector p that is not healthy, as the payload of
#   the connector.health event it emitted then (connector_id, state, reason, fix, failures,
#   retry_at), for a page that loads after the event; null when the connection is healthy
#   or nothing is recorded. entry is p's member of connectors/state.json, configured whether
#   a connection is stored now, held its scopes: a failing or expiring record counts only
#   while the connection is stored, a revoked one only while none is.
stored(p, entry, configured, held) := v if {
	h := object.get(entry, "health", null)
	is_object(h)
	v := _stored(p, h, configured, held)
} else := null

_stored(p, h, true, held) := {
	"connector_id": p, "state": h.state, "reason": object.get(h, "error", ""),
	"fix": scopes.connect_cmd(p, scopes.sorted(held)),
	"failures": n, "retry_at": _num(h, "failed_at") + backoff(n),
} if {
	h.state in {"failing", "expiring"}
	n := max([_num(h, "failures"), 1])
}

_stored(p, h, false, _) := {
	"connector_id": p, "state": "revoked", "reason": "invalid_grant",
	"fix": scopes.connect_cmd(p, scopes.sorted(object.get(h, "scopes", []))),
	"failures": 0, "retry_at": null,
} if {
	h.state == "revoked"
}
