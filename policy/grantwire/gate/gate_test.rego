package grantwire.gate_test

import data.grantwire.fixtures_test as fx
import data.grantwire.gate

_args := {"provider": "google", "agent": "builtin:chat", "scopes": ["gmail.readonly"]}

_now := 1700000100000

_grant := fx.entry(fx.grants_file, ["google", "builtin:chat"], ["gmail.readonly", "openid"])

_pre := {"grant": _grant, "now": _now}

_scopes := ["openid", "gmail.readonly"]

_conn := fx.conn("conn", fx.hash_a, _scopes)

_valid_token := fx.token("token", fx.hash_a, _now + 3600000)

_expired := fx.token("token", fx.hash_a, _now + 59999)

# Phase A facts: the prefetch, the connection, the token and the client.
_a(conn, token, client) := object.union(object.union(_pre, {"conn": conn, "token": token}), client)

_hot := _a(_conn, _valid_token, fx.client("client", fx.id_a))

# Phase B facts: phase A with an expired token, the lock held, and everything re-read.
_locked(conn, client, extra) := object.union(
	object.union(_a(fx.conn("conn", fx.hash_a, _scopes), _expired, fx.client("client", fx.id_a)), {
		"lock": "held",
		"conn@lock": conn,
		"token@lock": fx.token("token@lock", fx.hash_a, _now),
		"now@lock": _now + 5,
		"state@lock": fx.state_entry("google"),
	}),
	object.union(client, extra),
)

_b(extra) := _locked(fx.conn("conn@lock", fx.hash_a, _scopes), fx.client("client@lock", fx.id_a), extra)

_gat(f) := fx.decide(fx.q1("get_access_token", _args, f))

_gat_args(args, f) := fx.decide(fx.q1("get_access_token", args, f))

# ---------------------------------------------------------------------------------------
# arguments

test_usage if {
	msg := "get_access_token needs provider (connector id), agent (agent id) and scopes (array of strings)"
	every args in [
		{"agent": "builtin:chat", "scopes": []},
		{"provider": "google", "scopes": []},
		{"provider": "google", "agent": "", "scopes": []},
		{"provider": "google", "agent": "builtin:chat"},
		{"provider": "google", "agent": "builtin:chat", "scopes": "gmail"},
		{"provider": "google", "agent": "builtin:chat", "scopes": [1]},
		{"provider": 1, "agent": "builtin:chat", "scopes": []},
	] {
		_gat_args(args, {}) == fx.failed(fx.usage(msg), [])
	}
}

test_unknown_and_mcp_connectors if {
	_gat_args(object.union(_args, {"provider": "nope"}), {}) == fx.failed(fx.err("UNKNOWN_CONNECTOR", "unknown connector nope", "grantwire catalog", {"connector": "nope"}), [])
	_gat_args(object.union(_args, {"provider": "mcp-github"}), {}) == fx.failed(
		fx.err("CONFIGURATION", "configuration error: mcp-github is an MCP connector; access tokens exist only for OAuth connectors", "", {"connector": "mcp-github"}),
		[],
	)
}

# ---------------------------------------------------------------------------------------
# the grant layer comes first

test_prefetch if {
	fx.decide(fx.q("get_access_token", _args, {})) == fx.need([
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["google", "builtin:chat"]},
		{"key": "now", "kind": "clock.now"},
	])
	_gat({"grant": _grant}) == fx.need([{"key": "now", "kind": "clock.now"}])
}

test_an_ungranted_agent_is_refused_before_the_keyring_is_read if {
	refused := fx.failed(
		fx.err(
			"AGENT_NOT_GRANTED",
			"agent builtin:chat is not granted gmail.readonly on google",
			"grantwire grants grant google builtin:chat --scopes gmail.readonly",
			{"connector": "google", "agent": "builtin:chat", "missing_scopes": ["gmail.readonly"], "full_scopes": ["gmail.readonly"]},
		),
		[],
	)
	_gat({"grant": fx.no_entry(fx.grants_file, ["google", "builtin:chat"]), "now": _now}) == refused
	_gat({"grant": fx.no_file(fx.grants_file, ["google", "builtin:chat"]), "now": _now}) == refused

	# whatever else the facts hold: the answer is the same
	_gat(fx.patch(_hot, {"grant": fx.no_entry(fx.grants_file, ["google", "builtin:chat"])})) == refused
}

test_a_narrow_grant_is_refused_with_the_union if {
	f := {"grant": fx.entry(fx.grants_file, ["google", "builtin:chat"], ["openid"]), "now": _now}
	_gat(f) == fx.failed(
		fx.err(
			"AGENT_NOT_GRANTED",
			"agent builtin:chat is not granted gmail.readonly on google",
			"grantwire grants grant google builtin:chat --scopes gmail.readonly,openid",
			{"connector": "google", "agent": "builtin:chat", "missing_scopes": ["gmail.readonly"], "full_scopes": ["gmail.readonly", "openid"]},
		),
		[],
	)
}

test_then_the_connection_is_read if {
	_gat(_pre) == fx.need([
		{"key": "conn", "kind": "keyring.get", "user": "google:default", "fields": ["refresh_token"], "fresh": true},
		{"key": "token", "kind": "keyring.get", "user": "google:access_token", "fields": ["access_token"], "fresh": false},
		{"key": "client", "kind": "keyring.get", "user": "provider:google", "fields": ["client_id", "client_secret"], "fresh": false},
		{"key": "client@env_id", "kind": "env.get", "name": "GOOGLE_CLIENT_ID", "secret": true},
		{"key": "client@env_secret", "kind": "env.get", "name": "GOOGLE_CLIENT_SECRET", "secret": true},
	])
}

test_no_scope_hands_out_nothing if {
	# a request of no scope is refused before anything is read, grant of no scope or none
	g := {"grant": fx.entry(fx.grants_file, ["google", "builtin:chat"], []), "now": _now}
	e := fx.failed(gate.no_scope_error("google"), [])
	_gat_args(object.union(_args, {"scopes": []}), g) == e
	_gat_args(object.union(_args, {"scopes": []}), {}) == e
	e.error.code == "USAGE"

	# a grant of no scope covers no scope that can be asked for
	_gat_args(_args, g).error.code == "AGENT_NOT_GRANTED"
}

test_not_connected if {
	_gat(_a(fx.absent, fx.absent, fx.client("client", fx.id_a))) == fx.failed(
		fx.err("NOT_CONNECTED", "google is not connected", "grantwire connect google --scopes gmail.readonly", {"connector": "google"}),
		[],
	)
}

# ---------------------------------------------------------------------------------------
# the hot path

test_a_valid_cached_token_is_returned if {
	_gat(_hot) == fx.done(
		{
			"provider": "google", "access_token": {"$ref": "token#access_token"},
			"expires_at": _now + 3600000, "scopes": ["gmail.readonly", "openid"],
		},
		[],
	)

	# from a client in the environment too
	_gat(_a(_conn, _valid_token, fx.env_client("client", fx.id_a, true))).result.access_token == {"$ref": "token#access_token"}
}

test_the_connection_layer if {
	f := _a(fx.conn("conn", fx.hash_a, ["openid"]), _valid_token, fx.client("client", fx.id_a))
	_gat(f) == fx.failed(
		fx.err(
			"CONNECTION_MISSING_SCOPES", "the google connection lacks gmail.readonly",
			"grantwire connect google --scopes gmail.readonly,openid",
			{"connector": "google", "agent": "builtin:chat", "missing_scopes": ["gmail.readonly"], "full_scopes": ["gmail.readonly", "openid"]},
		),
		[],
	)
}

_lock_needs(wait) := [
	{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": wait},
	{"key": "conn@lock", "kind": "keyring.get", "user": "google:default", "fields": ["refresh_token"], "fresh": true, "after": "lock"},
	{"key": "token@lock", "kind": "keyring.get", "user": "google:access_token", "fields": ["access_token"], "fresh": true, "after": "lock"},
	{"key": "now@lock", "kind": "clock.now", "after": "lock"},
	{"key": "state@lock", "kind": "ledger.read", "ledger": "connectors/state.json", "path": ["google"], "after": "lock"},
	{"key": "client@lock", "kind": "keyring.get", "user": "provider:google", "fields": ["client_id", "client_secret"], "fresh": true, "after": "lock"},
	{"key": "client@lock@env_id", "kind": "env.get", "name": "GOOGLE_CLIENT_ID", "secret": true, "after": "lock"},
	{"key": "client@lock@env_secret", "kind": "env.get", "name": "GOOGLE_CLIENT_SECRET", "secret": true, "after": "lock"},
]

test_an_expiring_token_takes_the_lock if {
	# valid for 60 s or less, absent, or bound to another connection
	every token in [
		_expired, fx.absent, fx.token("token", fx.hash_b, _now + 3600000),
		fx.not_json("token", "t1"),
	] {
		_gat(_a(_conn, token, fx.client("client", fx.id_a))) == fx.need(_lock_needs(15000))
	}
	_gat(_a(_conn, fx.token("token", fx.hash_a, _now + 60001), fx.client("client", fx.id_a))).status == "done"
}

# ---------------------------------------------------------------------------------------
# phase B: under the lock

test_busy if {
	_gat(object.union(_a(_conn, _expired, fx.client("client", fx.id_a)), {"lock": "busy"})) == fx.failed(
		fx.err("BUSY", "another grantwire operation holds the google lock; nothing was changed, retry shortly", "", {"connector": "google", "retry_after_ms": 500}),
		[],
	)

	# anything but "held" is not held
	_gat(object.union(_a(_conn, _expired, fx.client("client", fx.id_a)), {"lock": "timeout"})).error.code == "BUSY"
}

test_a_partial_locked_read_asks_for_the_rest if {
	f := object.remove(_b({}), ["now@lock", "client@lock@env_secret"])
	_gat(f) == fx.need([
		{"key": "now@lock", "kind": "clock.now", "after": "lock"},
		{"key": "client@lock@env_secret", "kind": "env.get", "name": "GOOGLE_CLIENT_SECRET", "secret": true, "after": "lock"},
	])
}

test_the_connection_vanished_under_the_lock if {
	_gat(_locked(fx.absent, fx.client("client@lock", fx.id_a), {})).error.code == "NOT_CONNECTED"
}

test_another_process_refreshed_meanwhile if {
	f := fx.patch(_b({}), {"token@lock": fx.token("token@lock", fx.hash_a, _now + 3600000)})
	_gat(f) == fx.done(
		{
			"provider": "google", "access_token": {"$ref": "token@lock#access_token"},
			"expires_at": _now + 3600000, "scopes": ["gmail.readonly", "openid"],
		},
		[],
	)
}

test_the_connection_narrowed_under_the_lock if {
	f := _locked(fx.conn("conn@lock", fx.hash_a, ["openid"]), fx.client("client@lock", fx.id_a), {})
	_gat(f).error.code == "CONNECTION_MISSING_SCOPES"
	_gat(f).error.missing_scopes == ["gmail.readonly"]
	_gat(f).effects == []
}

_cid := fx.desc("client@lock#client_id", fx.id_a)

_csec := fx.desc("client@lock#client_secret", "5ec5ec5ec5ec5ec5")

test_the_refresh_request if {
	_gat(_b({})) == fx.need([{
		"key": "refresh", "kind": "http.request", "commit": true,
		"method": "POST", "url": "https://oauth2.googleapis.com/token",
		"headers": {"Accept": "application/json", "Authorization": {"$basic": [_cid, _csec]}},
		"form": {"grant_type": "refresh_token", "refresh_token": {"$ref": "conn@lock#refresh_token"}},
		"secret_fields": ["access_token", "refresh_token", "id_token"],
		"timeout_ms": 30000,
	}])
}

test_the_refresh_request_with_post_authentication_and_a_tenant if {
	args := {"provider": "microsoft", "agent": "builtin:chat", "scopes": ["User.Read"]}
	g := fx.entry(fx.grants_file, ["microsoft", "builtin:chat"], ["User.Read"])
	c := fx.conn("conn@lock", fx.hash_a, ["User.Read"])
	f := object.union(
		object.union(
			{"grant": g, "now": _now, "conn": fx.conn("conn", fx.hash_a, ["User.Read"]), "token": fx.absent},
			object.union(fx.env_client("client", fx.id_a, true), fx.env_client("client@lock", fx.id_a, true)),
		),
		{"lock": "held", "conn@lock": c, "token@lock": fx.absent, "now@lock": _now, "state@lock": fx.no_file(fx.state_file, ["microsoft"])},
	)
	n := _gat_args(args, f).needs[0]
	n.url == "https://login.microsoftonline.com/common/oauth2/v2.0/token"
	n.headers == {"Accept": "application/json"}
	n.form == {
		"grant_type": "refresh_token", "refresh_token": {"$ref": "conn@lock#refresh_token"},
		"client_id": fx.desc("client@lock@env_id#value", fx.id_a),
		"client_secret": fx.desc("client@lock@env_secret#value", "5ec5ec5ec5ec5ec5"),
	}
}

_token_effect(expires_at) := {
	"kind": "keyring.set", "user": "google:access_token",
	"value": {
		"access_token": {"$ref": "refresh#access_token"}, "expires_at": expires_at,
		"client_id_hash": fx.hash_a, "connected_at": fx.connected_ms,
	},
}

test_a_refresh_without_rotation_caches_the_token if {
	d := _gat(_b({"refresh": fx.http(200, fx.token_json("refresh", {}))}))
	d == fx.done(
		{
			"provider": "google", "access_token": {"$ref": "refresh#access_token"},
			"expires_at": (_now + 5) + 3599000, "scopes": ["gmail.readonly", "openid"],
		},
		[_token_effect((_now + 5) + 3599000)],
	)

	# the same refresh token sent back is no rotation; the same scopes are no change
	same := fx.token_json("refresh", {"refresh_token": fx.new_refresh("refresh", fx.refresh_d), "scope": "gmail.readonly openid"})
	_gat(_b({"refresh": fx.http(200, same)})).effects == [_token_effect((_now + 5) + 3599000)]
}

_blob := fx.conn_json("conn@lock", fx.hash_a, _scopes, fx.refresh_d)

# The connection blob saved after a refresh: every member as read, with the refresh token
# and the scopes given. The refresh token is compared by its reference (the policy merges
# the new reference into the old description, which a host reads as a reference too).
_saved(effect, ref, list) if {
	effect.kind == "keyring.set"
	effect.user == "google:default"
	effect.expect == {"version": "c1"}
	effect.value.refresh_token["$ref"] == ref
	object.remove(effect.value, ["refresh_token"]) == object.union(object.remove(_blob, ["refresh_token"]), {"scopes": list})
}

test_a_rotated_refresh_token_is_saved if {
	r := fx.token_json("refresh", {"refresh_token": fx.new_refresh("refresh", "4e44e44e4e44e44e"), "expires_in": 60})
	d := _gat(_b({"refresh": fx.http(200, r)}))
	d.status == "done"
	d.result.expires_at == (_now + 5) + 60000
	count(d.effects) == 2
	_saved(d.effects[0], "refresh#refresh_token", _scopes)
	d.effects[1] == _token_effect((_now + 5) + 60000)

	# the blob keeps every other member as read (tenant, account type, float seconds)
	d.effects[0].value.account_email == "user@example.com"
	d.effects[0].value.connected_at == fx.connected_s
}

test_a_changed_scope_is_saved if {
	r := fx.token_json("refresh", {"scope": "gmail.readonly"})
	d := _gat(_b({"refresh": fx.http(200, r)}))
	d.result.scopes == ["gmail.readonly"]
	count(d.effects) == 2
	_saved(d.effects[0], "conn@lock#refresh_token", ["gmail.readonly"])
	d.effects[1] == _token_effect((_now + 5) + 3599000)
}

# A refresh never widens the connection: scopes the server adds are not stored.
test_a_refresh_never_widens_the_scopes if {
	r := fx.token_json("refresh", {"scope": "gmail.readonly openid calendar"})
	d := _gat(_b({"refresh": fx.http(200, r)}))
	d.result.scopes == ["gmail.readonly", "openid"]
	d.effects == [_token_effect((_now + 5) + 3599000)]
}

test_a_refresh_that_drops_a_requested_scope if {
	r := fx.token_json("refresh", {"scope": "openid", "refresh_token": fx.new_refresh("refresh", "4e44e44e4e44e44e")})
	d := _gat(_b({"refresh": fx.http(200, r)}))
	d.error == fx.err(
		"CONNECTION_MISSING_SCOPES", "the google connection lacks gmail.readonly",
		"grantwire connect google --scopes gmail.readonly,openid",
		{"connector": "google", "agent": "builtin:chat", "missing_scopes": ["gmail.readonly"], "full_scopes": ["gmail.readonly", "openid"]},
	)
	count(d.effects) == 2
	_saved(d.effects[0], "refresh#refresh_token", ["openid"])
	d.effects[1] == _token_effect((_now + 5) + 3599000)
}

_clear(reason, mirror) := array.concat(
	array.concat(
		[
			{"kind": "keyring.delete", "user": "google:default", "expect": {"version": "c1"}},
			{"kind": "keyring.delete", "user": "google:access_token"},
		],
		[{"kind": "ledger.write", "ledger": "connectors/state.json", "ops": [{"path": ["google"], "delete": true}]} | mirror],
	),
	[{"kind": "event.emit", "type": "connector.connection.cleared", "payload": {"connector_id": "google", "reason": reason}}],
)

test_invalid_grant_clears_the_connection if {
	d := _gat(_b({"refresh": fx.http(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})}))
	d == fx.failed(
		fx.err(
			"CONNECTION_REVOKED", "the provider revoked the google connection (invalid_grant)",
			"grantwire connect google --scopes gmail.readonly,openid", {"connector": "google"},
		),
		_clear("invalid_grant", true),
	)

	# without a state.json entry, nothing to remove there
	f := fx.patch(_b({"refresh": fx.http(200, {"error": "invalid_grant"})}), {"state@lock": fx.no_entry(fx.state_file, ["google"])})
	_gat(f).effects == _clear("invalid_grant", false)
}

test_invalid_client if {
	d := _gat(_b({"refresh": fx.http(401, {"error": "invalid_client"})}))
	d == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: the google token endpoint refused the OAuth client's credentials (invalid_client; they were sent as client_secret_basic): check the client id and secret",
			"grantwire configure google --client-id <id> --client-secret-stdin", {"connector": "google", "client_auth": "client_secret_basic"},
		),
		[],
	)

	# a client without a secret is told the provider needs one
	f := _locked(fx.conn("conn@lock", fx.hash_a, _scopes), fx.env_client("client@lock", fx.id_a, false), {"refresh": fx.http(400, {"error": "invalid_client"})})
	_gat(f) == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: the google token endpoint refused the OAuth client (invalid_client) and no client secret is configured (neither stored with the client nor in GOOGLE_CLIENT_SECRET); the catalog says google needs the client's secret",
			"grantwire configure google --client-id <id> --client-secret-stdin", {"connector": "google", "missing": "client_secret"},
		),
		[],
	)
}

test_401_never_deletes if {
	reauth := fx.failed(
		fx.err(
			"REAUTH_REQUIRED", "the google connection must be authorized again (the token endpoint answered 401; nothing was deleted)",
			"grantwire connect google --scopes gmail.readonly,openid",
			{"connector": "google", "cause": "the token endpoint answered 401; nothing was deleted"},
		),
		[],
	)
	_gat(_b({"refresh": fx.http(401, null)})) == reauth
	_gat(_b({"refresh": fx.http(401, {"error": "unauthorized_client"})})) == reauth
}

test_provider_errors if {
	_gat(_b({"refresh": fx.http(500, null)})) == fx.failed(
		fx.err("PROVIDER_ERROR", "the google token endpoint failed (status 500)", "", {"connector": "google", "http_status": 500, "oauth_error": "http_error"}),
		[],
	)
	_gat(_b({"refresh": {"status": 0, "error": "timeout"}})) == fx.failed(
		fx.err("PROVIDER_ERROR", "the google token endpoint could not be reached (no answer in time)", "", {"connector": "google", "http_status": 0, "oauth_error": "timeout"}),
		[],
	)
	_gat(_b({"refresh": fx.http(400, {"error": "invalid_scope"})})).error.message == "the google token endpoint failed (status 400 invalid_scope)"
	_gat(_b({"refresh": fx.http(200, {"error": "slow_down"})})).error.message == "the google token endpoint failed (status 400 slow_down)"
	_gat(_b({"refresh": {"status": 200, "headers": {}, "json": null, "body": "not_json"}})).error.message == "the google token endpoint answered non-JSON (status 200)"
	_gat(_b({"refresh": fx.http(503, {"error": "temporarily_unavailable"})})).effects == []
}

test_a_refused_token_url if {
	cat := {"connectors": {"google": object.union(fx.catalog.connectors.google, {"token_url": "http://oauth2.example.com/token"})}}
	fx.decide_with(fx.q1("get_access_token", _args, _b({})), cat) == fx.failed(
		fx.err(
			"INSECURE_TRANSPORT",
			"refused URL: google token_url: plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)",
			"",
			{"reason": "google token_url: plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)"},
		),
		[],
	)
}

# A provider whose catalog entry has no usable token_url is refused with INSECURE_TRANSPORT
# "the catalog gives google no usable token_url" (not INTERNAL).
test_a_missing_token_url if {
	cat := {"connectors": {"google": object.remove(fx.catalog.connectors.google, ["token_url"])}}
	d := fx.decide_with(fx.q1("get_access_token", _args, _b({})), cat)
	d.error.code == "INSECURE_TRANSPORT"
	d.error.reason == "the catalog gives google no usable token_url"
}

# ---------------------------------------------------------------------------------------
# the tripwire

test_a_mismatch_rereads_the_client_from_the_store if {
	f := _a(_conn, _valid_token, fx.client("client", fx.id_b))
	_gat(f) == fx.need([
		{"key": "client@fresh", "kind": "keyring.get", "user": "provider:google", "fields": ["client_id", "client_secret"], "fresh": true},
		{"key": "client@fresh@env_id", "kind": "env.get", "name": "GOOGLE_CLIENT_ID", "secret": true},
		{"key": "client@fresh@env_secret", "kind": "env.get", "name": "GOOGLE_CLIENT_SECRET", "secret": true},
	])

	# no client remembered: re-read too
	_gat(_a(_conn, _valid_token, fx.no_client("client"))).needs[0].key == "client@fresh"
}

test_a_fresh_client_that_matches_keeps_the_connection if {
	f := object.union(_a(_conn, _valid_token, fx.client("client", fx.id_b)), fx.client("client@fresh", fx.id_a))
	_gat(f).result.access_token == {"$ref": "token#access_token"}
}

test_no_client_anywhere if {
	f := object.union(_a(_conn, _valid_token, fx.no_client("client")), fx.no_client("client@fresh"))
	_gat(f) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: no OAuth client is configured for google",
			"grantwire configure google --client-id <id> --client-secret-stdin", {"connector": "google"},
		),
		[],
	)
}

test_a_rotated_client_clears_under_the_lock if {
	f := object.union(_a(_conn, _valid_token, fx.client("client", fx.id_a)), fx.client("client@fresh", fx.id_b))
	_gat(f) == fx.need(_lock_needs(500))
	g := _locked(fx.conn("conn@lock", fx.hash_a, _scopes), fx.client("client@lock", fx.id_b), fx.client("client@fresh", fx.id_b))
	_gat(g) == fx.failed(
		fx.err(
			"REAUTH_REQUIRED",
			"the google connection must be authorized again (the OAuth client was rotated; the stale connection has been cleared)",
			"grantwire connect google --scopes gmail.readonly,openid",
			{"connector": "google", "cause": "the OAuth client was rotated; the stale connection has been cleared"},
		),
		_clear("client_rotated", true),
	)
	_gat(object.union(f, {"lock": "busy"})).error.code == "BUSY"
}

test_a_stale_client_that_matches_under_the_lock if {
	# another process reconnected meanwhile: the connection read under the lock matches
	g := _locked(fx.conn("conn@lock", fx.hash_b, _scopes), fx.client("client@lock", fx.id_b), fx.client("client@fresh", fx.id_b))
	_gat(g).needs[0].key == "refresh"
}

test_no_client_under_the_lock if {
	g := _locked(fx.conn("conn@lock", fx.hash_a, _scopes), fx.no_client("client@lock"), fx.client("client@fresh", fx.id_b))
	_gat(g).error.message == "configuration error: no OAuth client is configured for google; fix: grantwire configure google --client-id <id> --client-secret-stdin"
	_gat(g).effects == []
}

test_a_tenant_mismatch_clears_under_the_lock if {
	args := {"provider": "microsoft", "agent": "builtin:chat", "scopes": ["User.Read"]}
	j := object.union(fx.conn_json("conn", fx.hash_a, ["User.Read"], fx.refresh_d), {"tenant": "contoso"})
	jl := object.union(fx.conn_json("conn@lock", fx.hash_a, ["User.Read", "Mail.Read"], fx.refresh_d), {"tenant": "contoso"})
	a := object.union(
		{"grant": fx.entry(fx.grants_file, ["microsoft", "builtin:chat"], ["User.Read"]), "now": _now, "conn": fx.slot("conn", "c1", j), "token": fx.absent},
		object.union(fx.client("client", fx.id_a), fx.client("client@fresh", fx.id_a)),
	)
	_gat_args(args, a).needs[0] == {"key": "lock", "kind": "lock.acquire", "name": "microsoft", "wait_ms": 500}
	b := object.union(
		object.union(a, fx.client("client@lock", fx.id_a)),
		{"lock": "held", "conn@lock": fx.slot("conn@lock", "c1", jl), "token@lock": fx.absent, "now@lock": _now, "state@lock": fx.corrupt(fx.state_file, ["microsoft"], "bad")},
	)
	_gat_args(args, b) == fx.failed(
		fx.err(
			"TENANT_MISMATCH",
			"the microsoft connection belongs to tenant contoso but the configured tenant is common; the connection was cleared",
			"grantwire connect microsoft --scopes Mail.Read,User.Read",
			{"connector": "microsoft", "stored_tenant": "contoso", "configured_tenant": "common"},
		),
		[
			{"kind": "keyring.delete", "user": "microsoft:default", "expect": {"version": "c1"}},
			{"kind": "keyring.delete", "user": "microsoft:access_token"},
			{"kind": "event.emit", "type": "connector.connection.cleared", "payload": {"connector_id": "microsoft", "reason": "tenant_mismatch"}},
		],
	)
}

test_a_corrupt_connection_clears_under_the_lock if {
	# not resolvable by a fresh client read: straight to the lock
	_gat(_a(fx.not_json("conn", "c1"), fx.absent, fx.client("client", fx.id_a))) == fx.need(_lock_needs(500))
	g := _locked(fx.not_json("conn@lock", "c1"), fx.client("client@lock", fx.id_a), {})
	_gat(g) == fx.failed(
		fx.err(
			"REAUTH_REQUIRED",
			"the google connection must be authorized again (the stored connection was not valid and has been cleared)",
			"grantwire connect google --scopes gmail.readonly",
			{"connector": "google", "cause": "the stored connection was not valid and has been cleared"},
		),
		_clear("corrupt", true),
	)
}

# A public client stored by configure_client without a secret ("client_secret": "", which a
# host answers as the description of an empty secret) is a configured client: the hot path
# serves its connection.
test_a_stored_client_without_a_secret if {
	args := {"provider": "local", "agent": "builtin:chat", "scopes": ["read"]}
	client := fx.client_facts("client", fx.slot("client", "k1", fx.client_json("client", fx.id_a, false)))
	f := object.union(
		{
			"grant": fx.entry(fx.grants_file, ["local", "builtin:chat"], ["read"]), "now": _now,
			"conn": fx.conn("conn", fx.hash_a, ["read"]), "token": _valid_token,
		},
		client,
	)
	_gat_args(args, f) == fx.done(
		{"provider": "local", "access_token": {"$ref": "token#access_token"}, "expires_at": _now + 3600000, "scopes": ["read"]},
		[],
	)
}

_ms_args := {"provider": "microsoft", "agent": "builtin:chat", "scopes": ["User.Read"]}

# A microsoft refresh answered by resp, with a client from the environment (secret when sec).
_ms_refresh(sec, resp) := _gat_args(_ms_args, object.union(
	object.union(
		{
			"grant": fx.entry(fx.grants_file, ["microsoft", "builtin:chat"], ["User.Read"]), "now": _now,
			"conn": fx.conn("conn", fx.hash_a, ["User.Read"]), "token": fx.absent,
		},
		object.union(fx.env_client("client", fx.id_a, sec), fx.env_client("client@lock", fx.id_a, sec)),
	),
	{
		"lock": "held", "conn@lock": fx.conn("conn@lock", fx.hash_a, ["User.Read"]), "token@lock": fx.absent,
		"now@lock": _now, "state@lock": fx.no_file(fx.state_file, ["microsoft"]), "refresh": resp,
	},
))

test_invalid_client_of_a_public_client_is_reauth_and_deletes_nothing if {
	# issue 20 §1.17: a provider that needs no secret (the catalog does not require one), no
	# secret configured: GAIA's REAUTH_REQUIRED, never "needs the client's secret"
	d := _ms_refresh(false, fx.http(401, {"error": "invalid_client"}))
	d.error.code == "REAUTH_REQUIRED"
	d.error.fix == "grantwire connect microsoft --scopes User.Read"
	d.error.cause == "the token endpoint refused the public client (invalid_client); nothing was deleted"
	d.effects == []
	not contains(d.error.message, "secret")
	_ms_refresh(false, fx.http(400, {"error": "invalid_client"})).error.code == "REAUTH_REQUIRED"

	# with a secret configured, the secret or the id is wrong
	c := _ms_refresh(true, fx.http(401, {"error": "invalid_client"}))
	c.error.code == "CONFIGURATION"
	c.error.fix == "grantwire configure microsoft --client-id <id> --client-secret-stdin"
}

test_invalid_grant_answered_with_401_deletes_nothing if {
	# issue 20 §1.17: a 401 never deletes (Microsoft answers 401 invalid_grant where
	# reconnecting fixes it); a 400 invalid_grant is a revoked connection
	d := _gat(_b({"refresh": fx.http(401, {"error": "invalid_grant"})}))
	d == fx.failed(
		fx.err(
			"REAUTH_REQUIRED", "the google connection must be authorized again (the token endpoint answered 401 (invalid_grant); nothing was deleted)",
			"grantwire connect google --scopes gmail.readonly,openid",
			{"connector": "google", "cause": "the token endpoint answered 401 (invalid_grant); nothing was deleted"},
		),
		[],
	)
	_ms_refresh(false, fx.http(401, {"error": "invalid_grant"})).effects == []
}
