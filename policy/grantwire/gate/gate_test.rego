package grantwire.gate_test

import data.grantwire.fixtures_test as fx
import data.grantwire.gate

_args := {"provider": "google", "agent": "builtin:chat", "scopes": ["gmail"]}

_now := 1000000

# The hot path: granted, connected under the current client, a cached token valid for an hour.
_hot := {
	"grant": fx.entry(["gmail", "openid"]),
	"conn": fx.conn(fx.hash_a),
	"client": fx.client(fx.hash_a),
	"token": fx.token(fx.hash_a, _now + 3600000),
	"now": _now,
}

# Phase A passed (no valid cached token): the gate goes to the lock to refresh.
_stale := fx.set(_hot, "token", fx.absent)

# Phase B: the lock is held and everything was re-read under it.
_locked := fx.patch(_stale, {
	"lock": "held",
	"conn@lock": fx.conn(fx.hash_a),
	"client@lock": fx.client(fx.hash_a),
	"token@lock": fx.absent,
	"now@lock": _now + 5,
})

# Phase B after a mismatch that a fresh read did not resolve.
_tripped := fx.patch(_locked, {"client": fx.client(fx.hash_b), "client@fresh": fx.client(fx.hash_b)})

_decide(args, f) := d if {
	d := gate.decision with input as {"op": "get_access_token", "args": args, "facts": f}
		with data.catalog as fx.catalog
}

_run(f) := _decide(_args, f)

_fail(err) := {"status": "done", "effects": [], "error": err}

_lock_needs(wait) := [
	{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": wait},
	{"key": "conn@lock", "kind": "connection.get", "provider": "google", "after": "lock"},
	{"key": "client@lock", "kind": "client.get", "provider": "google", "fresh": true, "after": "lock"},
	{"key": "token@lock", "kind": "token.get", "provider": "google", "after": "lock"},
	{"key": "now@lock", "kind": "clock.now", "after": "lock"},
]

_busy := _fail({
	"code": "BUSY", "connector": "google", "fix": "", "retry_after_ms": 500,
	"message": "another grantwire operation holds the google lock; nothing was changed, retry shortly",
})

_no_client := _fail({
	"code": "CONFIGURATION", "connector": "google",
	"fix": "grantwire configure google --client-id <id>",
	"message": "configuration error: no OAuth client is configured for google; fix: grantwire configure google --client-id <id>",
})

_cleared(reason, version) := [
	{"kind": "connection.delete", "provider": "google", "expect": {"version": version}},
	{"kind": "token.delete", "provider": "google"},
	{
		"kind": "event.emit", "type": "connector.connection.cleared",
		"payload": {"connector_id": "google", "reason": reason},
	},
]

# ---------------------------------------------------------------------------------------
# arguments and the catalog

test_malformed_args_are_usage_errors if {
	usage := _fail({
		"code": "USAGE", "fix": "",
		"message": "usage: get_access_token needs provider (connector id), agent (agent id) and scopes (array of strings)",
	})
	every args in [
		{},
		{"agent": "builtin:chat", "scopes": []},
		{"provider": 7, "agent": "builtin:chat", "scopes": []},
		{"provider": "google", "scopes": []},
		{"provider": "google", "agent": "", "scopes": []},
		{"provider": "google", "agent": "builtin:chat"},
		{"provider": "google", "agent": "builtin:chat", "scopes": "gmail"},
		{"provider": "google", "agent": "builtin:chat", "scopes": ["gmail", 1]},
	] {
		_decide(args, _hot) == usage
	}
}

test_unknown_connector if {
	_decide(fx.set(_args, "provider", "nope"), _hot) == _fail({
		"code": "UNKNOWN_CONNECTOR", "connector": "nope", "fix": "grantwire catalog",
		"message": "unknown connector nope; fix: grantwire catalog",
	})
}

test_mcp_connector_has_no_access_token if {
	_decide(fx.set(_args, "provider", "mcp-github"), _hot) == _fail({
		"code": "CONFIGURATION", "connector": "mcp-github",
		"fix": "grantwire mcp credential mcp-github --agent builtin:chat",
		"message": "configuration error: mcp-github is an MCP connector; access tokens exist only for OAuth connectors; fix: grantwire mcp credential mcp-github --agent builtin:chat",
	})
}

# ---------------------------------------------------------------------------------------
# prefetch: one round on the hot path

test_first_question_asks_for_the_prefetch if {
	_run({}) == {"status": "need", "needs": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": ["google", "builtin:chat"]},
		{"key": "token", "kind": "token.get", "provider": "google"},
		{"key": "now", "kind": "clock.now"},
	]}
}

test_the_keyring_is_read_only_after_the_grant_layer if {
	granted := {"grant": {"found": true, "value": ["gmail"]}, "token": fx.absent, "now": _now}
	_run(granted) == {"status": "need", "needs": [
		{"key": "conn", "kind": "connection.get", "provider": "google"},
		{"key": "client", "kind": "client.get", "provider": "google", "fresh": false},
	]}
	_run(object.union(granted, {"grant": fx.absent})) == _not_granted
}

test_prefetch_rule_matches_the_first_question if {
	p := gate.prefetch with input as {"args": _args}
	_run({}) == {"status": "need", "needs": p}
}

test_partial_prefetch_asks_only_for_what_is_missing if {
	_run({"grant": fx.absent, "now": _now}) == {"status": "need", "needs": [
		{"key": "token", "kind": "token.get", "provider": "google"},
	]}
}

test_hot_path_returns_the_cached_token if {
	_run(_hot) == {"status": "done", "effects": [], "result": {
		"provider": "google",
		"access_token": {"$ref": "token#access_token"},
		"expires_at": _now + 3600000,
		"scopes": ["gmail", "openid"],
	}}
}

# ---------------------------------------------------------------------------------------
# 1. the grant layer

_not_granted := _fail({
	"code": "AGENT_NOT_GRANTED", "connector": "google", "agent": "builtin:chat",
	"missing_scopes": ["gmail"], "full_scopes": ["gmail"],
	"fix": "grantwire grants grant google builtin:chat --scopes gmail",
	"message": "agent builtin:chat is not granted gmail on google; fix: grantwire grants grant google builtin:chat --scopes gmail",
})

test_no_grant_is_agent_not_granted if {
	_run(fx.set(_hot, "grant", fx.absent)) == _not_granted
}

test_ungranted_agent_learns_nothing_about_the_connection if {
	# The same answer whatever the connection, client and token say.
	every f in [
		fx.set(_hot, "conn", fx.absent),
		fx.set(_hot, "conn", fx.corrupt),
		fx.set(_hot, "client", fx.client(fx.hash_b)),
		fx.patch(_hot, {"client": fx.absent, "token": fx.absent}),
		fx.patch(_tripped, {"lock": "busy"}),
	] {
		_run(fx.set(f, "grant", fx.absent)) == _not_granted
	}
}

test_narrow_grant_names_missing_scopes_and_the_full_grant if {
	_decide(fx.set(_args, "scopes", ["gmail", "drive", "openid"]), fx.set(_hot, "grant", fx.entry(["openid"]))) == _fail({
		"code": "AGENT_NOT_GRANTED", "connector": "google", "agent": "builtin:chat",
		"missing_scopes": ["drive", "gmail"], "full_scopes": ["drive", "gmail", "openid"],
		"fix": "grantwire grants grant google builtin:chat --scopes drive,gmail,openid",
		"message": "agent builtin:chat is not granted drive gmail on google; fix: grantwire grants grant google builtin:chat --scopes drive,gmail,openid",
	})
}

test_scopes_are_exact_strings if {
	# gmail.modify does not imply gmail, nor does GMAIL.
	_run(fx.set(_hot, "grant", fx.entry(["gmail.modify", "GMAIL"]))).error.code == "AGENT_NOT_GRANTED"
}

test_agent_id_is_quoted_in_the_fix if {
	d := _decide(fx.set(_args, "agent", "custom:0123456789abcdef:my$agent"), fx.set(_hot, "grant", fx.absent))
	d.error.fix == "grantwire grants grant google 'custom:0123456789abcdef:my$agent' --scopes gmail"
}

test_empty_request_needs_a_grant_entry if {
	_decide(fx.set(_args, "scopes", []), fx.set(_hot, "grant", fx.absent)).error.code == "AGENT_NOT_GRANTED"
	_decide(fx.set(_args, "scopes", []), fx.set(_hot, "grant", fx.entry([]))).status == "done"
}

# ---------------------------------------------------------------------------------------
# 2. the connection

test_no_connection_is_not_connected if {
	_run(fx.set(_hot, "conn", fx.absent)) == _fail({
		"code": "NOT_CONNECTED", "connector": "google",
		"fix": "grantwire connect google --scopes gmail",
		"message": "google is not connected; fix: grantwire connect google --scopes gmail",
	})
}

# ---------------------------------------------------------------------------------------
# 3. the tripwire, phase A (no lock)

test_mismatch_rereads_the_client_first if {
	fresh := {"status": "need", "needs": [{"key": "client@fresh", "kind": "client.get", "provider": "google", "fresh": true}]}
	_run(fx.set(_hot, "client", fx.client(fx.hash_b))) == fresh
	_run(fx.set(_hot, "client", fx.absent)) == fresh
	_run(fx.patch(_hot, {
		"conn": fx.set(fx.conn(fx.hash_a), "tenant", "t1"),
		"client": fx.set(fx.client(fx.hash_a), "tenant", "t2"),
	})) == fresh
}

test_mismatch_resolved_by_the_fresh_read_keeps_the_connection if {
	d := _run(fx.patch(_hot, {"client": fx.client(fx.hash_b), "client@fresh": fx.client(fx.hash_a)}))
	d == _run(_hot)
}

test_no_client_after_the_fresh_read_is_a_configuration_error if {
	_run(fx.patch(_hot, {"client": fx.absent, "client@fresh": fx.absent})) == _no_client
}

test_mismatch_after_the_fresh_read_takes_the_lock_briefly if {
	_run(fx.patch(_hot, {"client": fx.client(fx.hash_b), "client@fresh": fx.client(fx.hash_b)})) == {
		"status": "need",
		"needs": _lock_needs(gate.tripwire_wait_ms),
	}
	gate.tripwire_wait_ms == 500
}

test_corrupt_blob_goes_to_the_lock_without_a_fresh_read if {
	_run(fx.set(_hot, "conn", fx.corrupt)) == {"status": "need", "needs": _lock_needs(500)}
}

test_malformed_facts_fail_closed if {
	# A client fact that does not say found, a client without a hash, a connection that
	# does not say valid: none of them passes the tripwire.
	_run(fx.set(_hot, "client", {"client_id_hash": fx.hash_a})).needs[0].key == "client@fresh"
	_run(fx.set(_hot, "client", {"found": true})).needs[0].key == "client@fresh"
	_run(fx.set(_hot, "client", "held")).needs[0].key == "client@fresh"
	_run(fx.set(_hot, "conn", object.remove(fx.conn(fx.hash_a), ["valid"]))) == {"status": "need", "needs": _lock_needs(500)}
	_run(fx.patch(_hot, {"client": {"found": true}, "client@fresh": {"found": true}})) == {
		"status": "need",
		"needs": _lock_needs(500),
	}
}

# ---------------------------------------------------------------------------------------
# 4. the connection layer

test_connection_missing_scopes if {
	_decide(fx.set(_args, "scopes", ["gmail", "drive"]), fx.set(_hot, "grant", fx.entry(["drive", "gmail"]))) == _fail({
		"code": "CONNECTION_MISSING_SCOPES", "connector": "google", "agent": "builtin:chat",
		"missing_scopes": ["drive"], "full_scopes": ["drive", "gmail", "openid"],
		"fix": "grantwire connect google --scopes drive,gmail,openid",
		"message": "the google connection lacks drive; fix: grantwire connect google --scopes drive,gmail,openid",
	})
}

test_connection_without_scopes_lacks_every_scope if {
	d := _run(fx.set(_hot, "conn", object.remove(fx.conn(fx.hash_a), ["scopes"])))
	d.error.code == "CONNECTION_MISSING_SCOPES"
	d.error.missing_scopes == ["gmail"]
}

# ---------------------------------------------------------------------------------------
# 5. the cached token and its 60 s margin

test_token_valid_for_exactly_the_margin_is_refreshed if {
	gate.margin_ms == 60000
	_run(fx.set(_hot, "token", fx.token(fx.hash_a, _now + 60000))) == {
		"status": "need",
		"needs": _lock_needs(gate.refresh_wait_ms),
	}
	gate.refresh_wait_ms == 15000
}

test_token_valid_for_more_than_the_margin_is_used if {
	_run(fx.set(_hot, "token", fx.token(fx.hash_a, _now + 60001))).result.expires_at == _now + 60001
}

test_token_of_another_connection_is_not_used if {
	every t in [
		fx.absent,
		fx.token(fx.hash_b, _now + 3600000),
		fx.set(fx.token(fx.hash_a, _now + 3600000), "connected_at", 999),
	] {
		_run(fx.set(_hot, "token", t)) == {"status": "need", "needs": _lock_needs(15000)}
	}
}

# ---------------------------------------------------------------------------------------
# phase B: under the provider's lock

test_busy_lock_is_busy_and_changes_nothing if {
	_run(fx.set(_stale, "lock", "busy")) == _busy
	_run(fx.set(_tripped, "lock", "busy")) == _busy
}

test_lock_not_held_is_busy_whatever_the_shell_said if {
	every v in ["timeout", false, null, {"held": true}] {
		_run(fx.set(_locked, "lock", v)) == _busy
	}
}

test_held_lock_asks_for_what_is_missing_under_it if {
	f := object.remove(_locked, ["client@lock", "token@lock", "now@lock"])
	_run(f) == {"status": "need", "needs": array.slice(_lock_needs(15000), 2, 5)}
}

test_connection_gone_under_the_lock_is_not_connected if {
	_run(fx.set(_locked, "conn@lock", fx.absent)).error.code == "NOT_CONNECTED"
}

test_corrupt_blob_is_cleared_under_the_lock if {
	_run(fx.patch(_locked, {"conn": fx.corrupt, "conn@lock": fx.corrupt})) == {
		"status": "done",
		"error": {
			"code": "REAUTH_REQUIRED", "connector": "google",
			"cause": "the stored connection was not valid JSON and has been cleared",
			"fix": "grantwire connect google --scopes gmail",
			"message": "the google connection must be authorized again (the stored connection was not valid JSON and has been cleared); fix: grantwire connect google --scopes gmail",
		},
		"effects": _cleared("corrupt", "v9"),
	}
}

test_rotated_client_clears_the_connection_under_the_lock if {
	_run(fx.set(_tripped, "client@lock", fx.client(fx.hash_b))) == {
		"status": "done",
		"error": {
			"code": "REAUTH_REQUIRED", "connector": "google",
			"cause": "the OAuth client was rotated; the stale connection has been cleared",
			"fix": "grantwire connect google --scopes gmail,openid",
			"message": "the google connection must be authorized again (the OAuth client was rotated; the stale connection has been cleared); fix: grantwire connect google --scopes gmail,openid",
		},
		"effects": _cleared("client_rotated", "v1"),
	}
}

test_client_fixed_under_the_lock_keeps_the_connection if {
	# Another process re-forwarded while this one waited for the lock.
	_run(_tripped) == {"status": "need", "needs": [{"key": "refresh", "kind": "oauth.refresh", "provider": "google", "refresh": "sha256:r1"}]}
}

test_tenant_mismatch_clears_the_connection_under_the_lock if {
	f := fx.patch(_tripped, {
		"conn@lock": fx.set(fx.conn(fx.hash_a), "tenant", "t1"),
		"client@lock": fx.set(fx.client(fx.hash_a), "tenant", "t2"),
	})
	_run(f) == {
		"status": "done",
		"error": {
			"code": "TENANT_MISMATCH", "connector": "google",
			"stored_tenant": "t1", "configured_tenant": "t2",
			"fix": "grantwire connect google --scopes gmail,openid",
			"message": "the google connection belongs to tenant t1 but the configured tenant is t2; the connection was cleared; fix: grantwire connect google --scopes gmail,openid",
		},
		"effects": _cleared("tenant_mismatch", "v1"),
	}
}

test_no_client_under_the_lock_clears_nothing if {
	_run(fx.set(_tripped, "client@lock", fx.absent)) == _no_client
}

test_scopes_are_checked_again_under_the_lock if {
	d := _run(fx.set(_locked, "conn@lock", fx.set(fx.conn(fx.hash_a), "scopes", ["openid"])))
	d == _fail({
		"code": "CONNECTION_MISSING_SCOPES", "connector": "google", "agent": "builtin:chat",
		"missing_scopes": ["gmail"], "full_scopes": ["gmail", "openid"],
		"fix": "grantwire connect google --scopes gmail,openid",
		"message": "the google connection lacks gmail; fix: grantwire connect google --scopes gmail,openid",
	})
}

test_token_refreshed_by_another_caller_is_used if {
	_run(fx.set(_locked, "token@lock", fx.token(fx.hash_a, _now + 3600000))) == {"status": "done", "effects": [], "result": {
		"provider": "google",
		"access_token": {"$ref": "token@lock#access_token"},
		"expires_at": _now + 3600000,
		"scopes": ["gmail", "openid"],
	}}
}

test_refresh_uses_the_token_read_under_the_lock if {
	f := fx.set(_locked, "conn@lock", fx.set(fx.conn(fx.hash_a), "refresh", "sha256:r2"))
	_run(f) == {"status": "need", "needs": [{"key": "refresh", "kind": "oauth.refresh", "provider": "google", "refresh": "sha256:r2"}]}
}

# ---------------------------------------------------------------------------------------
# the refresh and its compare-and-swap

_token_put(expires_at) := {
	"kind": "token.put", "provider": "google",
	"access": {"$ref": "refresh#access_token"},
	"expires_at": expires_at, "client_id_hash": fx.hash_a, "connected_at": 1000,
}

_refreshed(expires_at) := {
	"provider": "google",
	"access_token": {"$ref": "refresh#access_token"},
	"expires_at": expires_at,
	"scopes": ["gmail", "openid"],
}

test_refresh_without_rotation_caches_the_token if {
	r := {"status": 200, "error": "", "expires_in": 1800, "rotated": false, "refresh": null}
	_run(fx.set(_locked, "refresh", r)) == {
		"status": "done",
		"result": _refreshed((_now + 5) + 1800000),
		"effects": [_token_put((_now + 5) + 1800000)],
	}
}

test_rotated_refresh_token_replaces_the_one_sent_only if {
	r := {"status": 200, "error": "", "expires_in": 1800, "rotated": true, "refresh": "sha256:r2"}
	_run(fx.set(_locked, "refresh", r)) == {
		"status": "done",
		"result": _refreshed((_now + 5) + 1800000),
		"effects": [
			{
				"kind": "connection.set_refresh", "provider": "google",
				"refresh": {"$ref": "refresh#refresh_token"},
				"expect": {"refresh": "sha256:r1"},
			},
			_token_put((_now + 5) + 1800000),
		],
	}
}

test_missing_or_odd_expires_in_means_an_hour if {
	every e in [null, 0, -5, 1.5, "3600"] {
		r := {"status": 200, "error": "", "expires_in": e, "rotated": false}
		_run(fx.set(_locked, "refresh", r)).result.expires_at == (_now + 5) + 3600000
	}
	_run(fx.set(_locked, "refresh", {"status": 200})).result.expires_at == (_now + 5) + 3600000
}

test_invalid_grant_deletes_the_connection_only_if_unchanged if {
	r := {"status": 400, "error": "invalid_grant"}
	_run(fx.set(_locked, "refresh", r)) == {
		"status": "done",
		"error": {
			"code": "CONNECTION_REVOKED", "connector": "google",
			"fix": "grantwire connect google --scopes gmail,openid",
			"message": "the provider revoked the google connection (invalid_grant); fix: grantwire connect google --scopes gmail,openid",
		},
		"effects": [
			{"kind": "connection.delete", "provider": "google", "expect": {"refresh": "sha256:r1"}},
			{"kind": "token.delete", "provider": "google"},
			{
				"kind": "event.emit", "type": "connector.connection.cleared",
				"payload": {"connector_id": "google", "reason": "invalid_grant"},
			},
		],
	}
}

test_401_deletes_nothing if {
	_run(fx.set(_locked, "refresh", {"status": 401, "error": "invalid_client"})) == _fail({
		"code": "REAUTH_REQUIRED", "connector": "google",
		"cause": "the token endpoint answered 401; nothing was deleted",
		"fix": "grantwire connect google --scopes gmail,openid",
		"message": "the google connection must be authorized again (the token endpoint answered 401; nothing was deleted); fix: grantwire connect google --scopes gmail,openid",
	})
}

test_other_endpoint_failures_are_provider_errors if {
	_run(fx.set(_locked, "refresh", {"status": 400, "error": "invalid_scope"})) == _fail({
		"code": "PROVIDER_ERROR", "connector": "google", "http_status": 400, "oauth_error": "invalid_scope", "fix": "",
		"message": "the google token endpoint failed (status 400 invalid_scope)",
	})
	_run(fx.set(_locked, "refresh", {"status": 503, "error": ""})).error.http_status == 503
}

test_malformed_refresh_answer_is_a_provider_error if {
	every r in [{}, {"status": "200"}, {"status": 500}, "ok"] {
		_run(fx.set(_locked, "refresh", r)) == _fail({
			"code": "PROVIDER_ERROR", "connector": "google", "http_status": 0, "oauth_error": "malformed response",
			"fix": "", "message": "the google token endpoint failed (status 0 malformed response)",
		})
	}
}

test_constants if {
	gate.default_expires_in == 3600
}

test_restart_after_a_failed_precondition_keeps_the_lock if {
	# The driver restarts with only the held lock: the core reads everything again, and the
	# lock is not asked for a second time.
	_run({"lock": "held"}) == _run({})
	_run(fx.set(_stale, "lock", "held")) == {"status": "need", "needs": array.slice(_lock_needs(15000), 1, 5)}
}
