package grantwire.health_test

import data.grantwire.fixtures_test as fx
import data.grantwire.health

# The fixtures' catalog with Microsoft's refresh token inactivity limit (90 days).
_cat := fx.patch(fx.catalog, {"connectors": fx.patch(fx.catalog.connectors, {
	"microsoft": object.union(fx.catalog.connectors.microsoft, {"refresh_token_inactivity_days": 90}),
	"github": object.union(fx.catalog.connectors.github, {"token_url": "http://github.example/token"}),
})})

_day := 86400000

_now := 1800000000000

_k(kind, p) := concat("|", [kind, p])

_maintain(f) := fx.decide_with(fx.q1("maintain", {}, f), _cat)

# state.json with these entries; a connection connected at c (ms) with a health record h.
_state(entries) := {"state": fx.entry(fx.state_file, [], entries), "now": _now}

_entry(c, h) := {"configured": true, "account": "user@example.com", "scopes": ["openid"], "connected_at": c, "health": h}

# The facts a provider's refresh reads under its lock: held, the connection, no cached
# token, its state.json entry and its client.
_locked(p, token) := object.union(
	{
		_k("lock", p): "held",
		_k("conn@lock", p): fx.conn(_k("conn@lock", p), fx.hash_a, ["openid", "email"]),
		_k("token@lock", p): token,
		_k("state@lock", p): fx.entry(fx.state_file, [p], _entry(_now - _day, {})),
	},
	fx.client(_k("client@lock", p), fx.id_a),
)

_google_due := object.union(
	_state({"google": _entry(_now - _day, {})}),
	{_k("token", "google"): fx.token(_k("token", "google"), fx.hash_a, _now + 200000)},
)

_refresh_answer(p, extra) := {_k("refresh", p): fx.http(200, fx.token_json(_k("refresh", p), extra))}

_row(d, p) := [r | some r in d.result.connections; r.connector == p][0]

test_prefetch_and_an_empty_home if {
	_maintain({}) == fx.need(health.prefetch)
	d := _maintain({"state": fx.no_file(fx.state_file, []), "now": _now})
	d == fx.done({"connections": [], "next_run_at": _now + health.max_interval_ms}, [])
}

test_a_corrupt_state_file_is_reported if {
	d := _maintain({"state": fx.corrupt(fx.state_file, [], "not valid JSON"), "now": _now})
	d.error.code == "CORRUPT_LEDGER"
	contains(d.error.message, "state")
}

test_the_cached_tokens_are_read if {
	f := _state({"google": _entry(_now - _day, {}), "microsoft": {"configured": false}, "mcp-memory": {"configured": true}, "mcp-remote": {}})
	d := _maintain(f)
	[n.key | some n in d.needs] == ["token|google"]
	d.needs[0].fresh == false
}

test_a_token_far_from_expiry_waits if {
	f := object.union(_state({"google": _entry(_now - _day, {})}), {_k("token", "google"): fx.token(_k("token", "google"), fx.hash_a, _now + 3600000)})
	d := _maintain(f)
	d.effects == []
	_row(d, "google") == {"connector": "google", "state": "healthy", "action": "none", "fix": "", "next_at": (_now + 3600000) - health.refresh_ahead_ms}
	d.result.next_run_at == _now + health.max_interval_ms
}

test_an_expired_token_and_no_limit_is_nothing_due if {
	f := object.union(_state({"google": _entry(_now - _day, {})}), {_k("token", "google"): fx.token(_k("token", "google"), fx.hash_a, _now - 1)})
	d := _maintain(f)
	_row(d, "google") == {"connector": "google", "state": "healthy", "action": "none", "fix": ""}
	d.result.next_run_at == _now + health.max_interval_ms
}

test_a_token_within_the_margin_is_refreshed_under_the_lock if {
	d := _maintain(_google_due)
	[n.key | some n in d.needs] == [
		"lock|google", "conn@lock|google", "token@lock|google", "state@lock|google",
		"client@lock|google", "client@lock|google@env_id", "client@lock|google@env_secret",
	]
	d.needs[0].wait_ms == health.lock_wait_ms
	every n in array.slice(d.needs, 1, 7) {
		n.after == "lock|google"
	}

	d2 := _maintain(object.union(_google_due, _locked("google", fx.absent)))
	[n.key | some n in d2.needs] == ["refresh|google"]
	d2.needs[0].form.grant_type == "refresh_token"
	d2.needs[0].commit == true

	d3 := _maintain(object.union(object.union(_google_due, _locked("google", fx.absent)), _refresh_answer("google", {})))
	fx.kinds(d3) == ["keyring.set", "ledger.write"]
	d3.effects[0].user == "google:access_token"
	d3.effects[0].value.expires_at == _now + 3599000
	d3.effects[1].ops == [{"path": ["google", "health"], "value": {"state": "healthy", "refreshed_at": _now}}]
	_row(d3, "google") == {"connector": "google", "state": "healthy", "action": "refreshed", "reason": "expiry", "next_at": (_now + 3599000) - health.refresh_ahead_ms}
}

test_a_short_lived_token_is_next_refreshed_at_half_its_lifetime if {
	d := _maintain(object.union(object.union(_google_due, _locked("google", fx.absent)), _refresh_answer("google", {"expires_in": 120})))
	_row(d, "google").next_at == _now + 60000
	d.result.next_run_at == _now + 60000
}

test_a_rotated_or_narrowed_refresh_rewrites_the_connection if {
	base := object.union(_google_due, _locked("google", fx.absent))
	d := _maintain(object.union(base, _refresh_answer("google", {"refresh_token": fx.new_refresh("refresh|google", "9999999999999999")})))
	fx.kinds(d) == ["keyring.set", "keyring.set", "ledger.write"]
	d.effects[0].user == "google:default"
	d.effects[0].value.refresh_token["$ref"] == "refresh|google#refresh_token"
	d.effects[0].expect == {"version": "c1"}

	d2 := _maintain(object.union(base, _refresh_answer("google", {"scope": "openid"})))
	d2.effects[0].user == "google:default"
	d2.effects[0].value.scopes == ["openid"]
}

test_a_busy_lock_skips_the_provider if {
	d := _maintain(object.union(_google_due, {"lock|google": "busy"}))
	d.effects == []
	_row(d, "google") == {"connector": "google", "state": "healthy", "action": "skipped", "reason": "busy", "next_at": _now + health.backoff_base_ms}
}

test_what_the_lock_shows_can_skip_the_refresh if {
	base := object.union(_google_due, _locked("google", fx.absent))
	_row(_maintain(fx.patch(base, {"conn@lock|google": fx.absent})), "google").reason == "not_connected"
	_row(_maintain(object.union(base, fx.client("client@lock|google", fx.id_b))), "google").reason == "tripwire"
	fresh := fx.token("token@lock|google", fx.hash_a, _now + 3600000)
	_row(_maintain(fx.patch(base, {"token@lock|google": fresh})), "google").reason == "fresh"
}

test_a_refused_token_endpoint_is_never_used if {
	f := object.union(
		object.union(_state({"github": _entry(_now - _day, {})}), {"token|github": fx.token("token|github", fx.hash_a, _now + 1000)}),
		_locked("github", fx.absent),
	)
	d := _maintain(f)
	d.effects == []
	_row(d, "github").reason == "insecure_transport"
}

test_a_failure_backs_off_and_is_announced if {
	base := object.union(_google_due, _locked("google", fx.absent))
	d := _maintain(object.union(base, {"refresh|google": fx.http(503, {"error": "temporarily_unavailable"})}))
	fx.kinds(d) == ["ledger.write", "event.emit"]
	d.effects[0].ops == [{"path": ["google", "health"], "value": {"state": "failing", "failures": 1, "failed_at": _now, "error": "temporarily_unavailable"}}]
	d.effects[1].payload == {
		"connector_id": "google", "state": "failing", "reason": "temporarily_unavailable",
		"fix": "grantwire connect google --scopes email,openid", "failures": 1, "retry_at": _now + 60000,
	}
	_row(d, "google").action == "backoff"
	_row(d, "google").next_at == _now + 60000
}

test_recorded_failures_wait_then_retry_with_a_longer_wait if {
	h := {"state": "failing", "failures": 3, "failed_at": _now - 200000}
	f := object.union(_state({"google": _entry(_now - _day, h)}), {"token|google": fx.token("token|google", fx.hash_a, _now + 100000)})
	d := _maintain(f)
	_row(d, "google") == {"connector": "google", "state": "failing", "action": "backoff", "fix": "grantwire connect google --scopes openid", "next_at": (_now - 200000) + 240000}

	later := fx.patch(f, {"now": _now + 40000})
	d2 := _maintain(object.union(object.union(later, _locked("google", fx.absent)), {"refresh|google": fx.http(500, {})}))
	d2.effects[0].ops[0].value.failures == 4
	d2.effects[1].payload.retry_at == (_now + 40000) + 480000

	d3 := _maintain(object.union(object.union(later, _locked("google", fx.absent)), _refresh_answer("google", {})))
	fx.kinds(d3) == ["keyring.set", "ledger.write", "event.emit"]
	d3.effects[2].payload == {"connector_id": "google", "state": "healthy", "reason": "expiry", "fix": "", "failures": 0, "retry_at": null}
}

test_invalid_grant_clears_the_connection_and_reports_it_revoked if {
	base := object.union(_google_due, _locked("google", fx.absent))
	d := _maintain(object.union(base, {"refresh|google": fx.http(400, {"error": "invalid_grant"})}))
	fx.kinds(d) == ["keyring.delete", "keyring.delete", "ledger.write", "event.emit", "event.emit"]
	d.effects[0].expect == {"version": "c1"}
	d.effects[2].ops == [{"path": ["google"], "value": {"configured": false, "health": {"state": "revoked", "revoked_at": _now, "scopes": ["email", "openid"]}}}]
	d.effects[4].payload.state == "revoked"
	_row(d, "google") == {"connector": "google", "state": "revoked", "action": "cleared", "reason": "invalid_grant", "fix": "grantwire connect google --scopes email,openid"}

	# Without a state.json entry to hold it, the revocation is only announced.
	d2 := _maintain(fx.patch(object.union(base, {"refresh|google": fx.http(400, {"error": "invalid_grant"})}), {"state@lock|google": fx.no_entry(fx.state_file, ["google"])}))
	fx.kinds(d2) == ["keyring.delete", "keyring.delete", "event.emit", "event.emit"]
}

test_a_revoked_connection_is_listed_until_reconnected if {
	f := _state({"google": {"configured": false, "health": {"state": "revoked", "scopes": ["openid"]}}})
	d := _maintain(f)
	d.result.connections == [{"connector": "google", "state": "revoked", "action": "none", "reason": "invalid_grant", "fix": "grantwire connect google --scopes openid"}]
}

test_a_refresh_token_is_kept_alive_before_the_inactivity_limit if {
	connected := _now - (76 * _day)
	f := object.union(_state({"microsoft": _entry(connected + 1, {})}), {"token|microsoft": fx.absent})
	d := _maintain(f)
	_row(d, "microsoft").next_at == _now + 1
	d.result.next_run_at == _now + health.min_interval_ms

	due := object.union(_state({"microsoft": _entry(connected, {})}), {"token|microsoft": fx.absent})
	d2 := _maintain(due)
	d2.needs[0].key == "lock|microsoft"
	d3 := _maintain(object.union(object.union(due, _locked("microsoft", fx.absent)), _refresh_answer("microsoft", {})))
	fx.kinds(d3) == ["ledger.write"]
	_row(d3, "microsoft") == {"connector": "microsoft", "state": "healthy", "action": "refreshed", "reason": "keepalive", "next_at": (_now + (90 * _day)) - (14 * _day)}

	# A recorded refresh counts as a use.
	used := object.union(_state({"microsoft": _entry(connected, {"refreshed_at": _now - _day})}), {"token|microsoft": fx.absent})
	_row(_maintain(used), "microsoft").next_at == (_now - _day) + (76 * _day)
}

test_a_refresh_token_near_the_limit_is_expiring if {
	f := object.union(_state({"microsoft": _entry(_now - (84 * _day), {"failures": 1, "failed_at": _now})}), {"token|microsoft": fx.absent})
	_row(_maintain(f), "microsoft").state == "expiring"
	_row(_maintain(f), "microsoft").fix == "grantwire connect microsoft --scopes openid"
}

test_backoff_doubles_up_to_the_cap if {
	[health.backoff(n) | some n in [1, 2, 3, 6, 7, 8, 40]] == [60000, 120000, 240000, 1920000, 3600000, 3600000, 3600000]
}

test_the_catalog_field_is_checked if {
	ok := object.union(fx.catalog.connectors.microsoft, {"refresh_token_inactivity_days": 90})
	not "refresh_token_inactivity_days must be a whole number of days from 15 to 3650" in data.grantwire.catalog.entry_problems("microsoft", ok, true)
	every bad in [0, 14, 90.5, "90", 4000] {
		e := object.union(fx.catalog.connectors.microsoft, {"refresh_token_inactivity_days": bad})
		"refresh_token_inactivity_days must be a whole number of days from 15 to 3650" in data.grantwire.catalog.entry_problems("microsoft", e, false)
	}
	mcp := object.union(fx.catalog.connectors["mcp-memory"], {"refresh_token_inactivity_days": 90})
	some m in data.grantwire.catalog.entry_problems("mcp-memory", mcp, false)
	contains(m, "refresh_token_inactivity_days")
}

test_stored_health_for_a_page_after_reload if {
	failing := {"health": {"state": "failing", "failures": 2, "failed_at": 1000, "error": "temporarily_unavailable"}}
	health.stored("google", failing, true, ["b", "a"]) == {
		"connector_id": "google", "state": "failing", "reason": "temporarily_unavailable",
		"fix": "grantwire connect google --scopes a,b", "failures": 2, "retry_at": 1000 + health.backoff(2),
	}
	revoked := {"configured": false, "health": {"state": "revoked", "revoked_at": 5, "scopes": ["s"]}}
	health.stored("google", revoked, false, []) == {
		"connector_id": "google", "state": "revoked", "reason": "invalid_grant",
		"fix": "grantwire connect google --scopes s", "failures": 0, "retry_at": null,
	}

	# healthy, nothing recorded, a record that no longer applies: nothing to show
	health.stored("google", {"health": {"state": "healthy", "refreshed_at": 1}}, true, []) == null
	health.stored("google", {}, true, []) == null
	health.stored("google", "not an object", true, []) == null
	health.stored("google", failing, false, []) == null
	health.stored("google", revoked, true, ["s"]) == null
}
