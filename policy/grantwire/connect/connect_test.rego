package grantwire.connect_test

import data.grantwire.fixtures_test as fx
import data.grantwire.oauth

_args := {"connector": "google", "scopes": ["gmail.readonly"], "grant_agents": ["builtin:chat"]}

_connect(args, f) := fx.decide(fx.q1("connect", args, f))

_base := object.union(fx.client("client", fx.id_a), {
	"conn": fx.absent,
	"grants": fx.no_file(fx.grants_file, ["google"]),
	"agents": fx.no_agents,
})

_state := "fedcba9876543210"

_callback(params) := {"status": "callback", "params": params}

_code := fx.desc("callback#code", "c0dec0dec0dec0de")

_ok_params := {"code": _code, "state": "s", "iss": "https://accounts.google.com"}

# Every fact up to the callback.
_until_callback(base, params) := object.union(base, {
	"loopback": {"redirect_uri": fx.redirect_uri},
	"verifier": fx.desc("verifier#value", "7e51f1e57e51f1e5"),
	"state": fx.desc("state#value", _state),
	"callback": _callback(params),
})

_granted := fx.token_json("token", {"refresh_token": fx.new_refresh("token", "4e44e44e4e44e44e"), "scope": "openid email gmail.readonly"})

_until_token(base, j) := object.union(_until_callback(base, _ok_params), {"token": fx.http(200, j)})

_userinfo := fx.http(200, {"email": "user@example.com", "sub": "1"})

_now := 1700000200123

_all(base, j, agents_grants) := object.union(
	object.union(_until_token(base, j), {"userinfo": _userinfo}),
	object.union(
		{"lock": "held", "now@lock": _now, "state@lock": fx.no_entry(fx.state_file, ["google"]), "conn@lock": fx.absent},
		agents_grants,
	),
)

_loopback_need := {"key": "loopback", "kind": "loopback.open", "connector": "google", "mode": "listen"}

_chat_grant := {"grant|builtin:chat": fx.no_entry(fx.grants_file, ["google", "builtin:chat"])}

# ---------------------------------------------------------------------------------------
# arguments and guards

test_usage if {
	msg := "connect needs connector, scopes and grant_agents (arrays of strings), an optional timeout_ms and an optional flow (loopback, paste or device)"
	every args in [
		{"scopes": [], "grant_agents": []},
		{"connector": "google", "grant_agents": []},
		{"connector": "google", "scopes": []},
		{"connector": "google", "scopes": "a", "grant_agents": []},
		{"connector": "google", "scopes": [], "grant_agents": [1]},
		{"connector": "google", "scopes": [], "grant_agents": [], "timeout_ms": 999},
		{"connector": "google", "scopes": [], "grant_agents": [], "timeout_ms": 1800001},
		{"connector": "google", "scopes": [], "grant_agents": [], "timeout_ms": "60000"},
		{"connector": "google", "scopes": [], "grant_agents": [], "timeout_ms": 0},
		{"connector": "google", "scopes": [], "grant_agents": [], "timeout_ms": 1500.5},
	] {
		_connect(args, {}) == fx.failed(fx.usage(msg), [])
	}
	_connect({"connector": "nope", "scopes": [], "grant_agents": []}, {}).error.code == "UNKNOWN_CONNECTOR"
	_connect({"connector": "mcp-github", "scopes": [], "grant_agents": []}, {}) == fx.failed(
		fx.err("CONFIGURATION", "configuration error: mcp-github is not an OAuth provider; configure it instead", "grantwire configure mcp-github --from-stdin", {"connector": "mcp-github"}),
		[],
	)
	_connect({"connector": "mcp-memory", "scopes": [], "grant_agents": []}, {}).error.fix == "grantwire configure mcp-memory"
}

test_the_first_reads if {
	fx.decide(fx.q("connect", _args, {})) == fx.need([
		{"key": "client", "kind": "keyring.get", "user": "provider:google", "fields": ["client_id", "client_secret"], "fresh": true},
		{"key": "client@env_id", "kind": "env.get", "name": "GOOGLE_CLIENT_ID", "secret": true},
		{"key": "client@env_secret", "kind": "env.get", "name": "GOOGLE_CLIENT_SECRET", "secret": true},
		{"key": "conn", "kind": "keyring.get", "user": "google:default", "fields": ["refresh_token"], "fresh": true},
		{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["google"]},
		{"key": "agents", "kind": "ledger.read", "ledger": "agents.json", "path": []},
	])
}

test_agents_must_be_known_and_the_registry_usable if {
	_connect(fx.patch(_args, {"grant_agents": ["builtin:chat", "installed:x", "installed:a"]}), _base) == fx.failed(
		fx.err(
			"UNKNOWN_AGENT", "unknown agent(s): installed:a, installed:x; nothing was written",
			"grantwire agents list", {"agent_ids": ["installed:a", "installed:x"]},
		),
		[],
	)
	bad := fx.patch(_base, {"agents": fx.entry(fx.agents_file, [], [])})
	_connect(_args, bad).error.message == "the agents ledger at /home/u/.grantwire/agents.json is unreadable (it must be a JSON object); nothing was changed; fix: mv /home/u/.grantwire/agents.json /home/u/.grantwire/agents.json.corrupt"

	# without agents to grant, the registry does not matter
	_connect(fx.patch(_args, {"grant_agents": []}), bad) == fx.need([_loopback_need])
}

test_no_client if {
	_connect(_args, fx.patch(_base, fx.no_client("client"))) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: no OAuth client is configured for google",
			"grantwire configure google --client-id <id> --client-secret-stdin", {"connector": "google"},
		),
		[],
	)
}

test_agents_that_declare_nothing_need_explicit_scopes if {
	args := {"connector": "google", "scopes": [], "grant_agents": ["builtin:plain", "builtin:chat", "builtin:coder"]}
	_connect(args, _base) == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: agent(s) builtin:coder, builtin:plain declare no scopes for google; pass the scopes to grant",
			"grantwire connect google --scopes <scopes> --grant-agent builtin:chat --grant-agent builtin:coder --grant-agent builtin:plain",
			{"connector": "google", "agent_ids": ["builtin:coder", "builtin:plain"]},
		),
		[],
	)
	_connect(fx.patch(args, {"scopes": ["openid"]}), _base).needs[0].kind == "loopback.open"
}

test_reconnecting_with_no_scopes_keeps_what_is_held if {
	args := {"connector": "google", "scopes": [], "grant_agents": []}
	f := fx.patch(_base, {
		"conn": fx.conn("conn", fx.hash_a, ["openid", "email"]),
		"grants": fx.entry(fx.grants_file, ["google"], {"builtin:chat": ["gmail.readonly"], "installed:x": ["calendar", "openid"]}),
	})
	_connect(args, f) == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: reconnecting google with no scopes would drop the 4 scope(s) it holds or grants",
			"grantwire connect google --scopes calendar,email,gmail.readonly,openid",
			{"connector": "google", "scopes": ["calendar", "email", "gmail.readonly", "openid"]},
		),
		[],
	)

	# grants alone are prior state too
	_connect(args, fx.patch(_base, {"grants": fx.entry(fx.grants_file, ["google"], {"builtin:chat": ["openid"]})})).error.fix == "grantwire connect google --scopes openid"

	# nothing stored: the catalog defaults
	_connect(args, _base) == fx.need([_loopback_need])
}

# Over prior state that holds no scope (an unreadable connection, grants of no scope), a
# reconnect with no scopes drops nothing, so it goes on with the catalog defaults (policy
# bug: it is refused with the fix `grantwire connect google`, the very command refused, a
# loop; see the report).
test_reconnecting_over_nothing_held if {
	args := {"connector": "google", "scopes": [], "grant_agents": []}
	_connect(args, fx.patch(_base, {"conn": fx.not_json("conn", "c1")})) == fx.need([_loopback_need])
	_connect(args, fx.patch(_base, {"grants": fx.entry(fx.grants_file, ["google"], {"builtin:chat": []})})) == fx.need([_loopback_need])
}

test_refused_endpoints if {
	cat := {"connectors": {"google": fx.patch(fx.catalog.connectors.google, {"authorization_url": "https://u:p@accounts.google.com/auth"})}}
	fx.decide_with(fx.q1("connect", _args, _base), cat) == fx.failed(
		fx.err("INSECURE_TRANSPORT", "refused URL: google authorization_url: credentials in URLs are refused", "", {"reason": "google authorization_url: credentials in URLs are refused"}),
		[],
	)
	cat2 := {"connectors": {"google": fx.patch(fx.catalog.connectors.google, {"token_url": "http://oauth2.googleapis.com/token"})}}
	fx.decide_with(fx.q1("connect", _args, _base), cat2).error.reason == "google token_url: plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)"
}

# A provider without a usable authorization_url (missing, or "{tenant}" without a tenant) is
# refused with INSECURE_TRANSPORT (not INTERNAL).
test_missing_endpoints if {
	cat := {"connectors": {"google": object.remove(fx.catalog.connectors.google, ["authorization_url"])}}
	fx.decide_with(fx.q1("connect", _args, _base), cat).error.reason == "the catalog gives google no usable authorization_url"
}

# ---------------------------------------------------------------------------------------
# the browser

test_loopback_then_entropy_then_the_callback if {
	_connect(_args, _base) == fx.need([_loopback_need])
	f := object.union(_base, {"loopback": {"redirect_uri": fx.redirect_uri}})
	_connect(_args, f) == fx.need([
		{"key": "verifier", "kind": "entropy", "bytes": 32},
		{"key": "state", "kind": "entropy", "bytes": 32},
	])
	g := object.union(f, {"verifier": fx.desc("verifier#value", "7e51f1e57e51f1e5"), "state": fx.desc("state#value", _state)})
	_connect(_args, g) == fx.need([{
		"key": "callback", "kind": "loopback.wait",
		"url": {
			"$url": "https://accounts.google.com/o/oauth2/v2/auth",
			"query": {
				"access_type": "offline", "prompt": "consent",
				"response_type": "code", "client_id": fx.desc("client#client_id", fx.id_a),
				"redirect_uri": fx.redirect_uri, "scope": "gmail.readonly",
				"state": {"$ref": "state#value"},
				"code_challenge": {"$s256": {"$ref": "verifier#value"}}, "code_challenge_method": "S256",
			},
		},
		"state": {"$ref": "state#value"}, "timeout_ms": 300000, "connector": "google",
		"alternative": "grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat --no-browser",
	}])
	w := _connect(fx.patch(_args, {"timeout_ms": 60000, "scopes": ["openid", "email"]}), g).needs[0]
	w.timeout_ms == 60000
	w.url.query.scope == "email openid"
}

test_the_scopes_asked_for if {
	f := object.union(_base, {
		"loopback": {"redirect_uri": fx.redirect_uri},
		"verifier": fx.desc("verifier#value", "7e51f1e57e51f1e5"), "state": fx.desc("state#value", _state),
	})

	# the union of what the agents declare and the catalog defaults
	_connect(fx.patch(_args, {"scopes": []}), f).needs[0].url.query.scope == "email gmail.readonly openid"

	# no agents, nothing stored: the catalog defaults
	_connect({"connector": "google", "scopes": [], "grant_agents": []}, f).needs[0].url.query.scope == "email openid"
}

test_a_tenant_and_a_separator if {
	f := object.union(object.union(fx.env_client("client", fx.id_a, false), {"conn": fx.absent, "grants": fx.no_file(fx.grants_file, ["microsoft"]), "agents": fx.no_agents}), {
		"loopback": {"redirect_uri": fx.redirect_uri},
		"verifier": fx.desc("verifier#value", "7e51f1e57e51f1e5"), "state": fx.desc("state#value", _state),
	})
	m := _connect({"connector": "microsoft", "scopes": [], "grant_agents": []}, f).needs[0].url
	m["$url"] == "https://login.microsoftonline.com/common/oauth2/v2.0/authorize"
	m.query.scope == "User.Read offline_access"
	g := fx.patch(f, {"grants": fx.no_file(fx.grants_file, ["github"])})
	_connect({"connector": "github", "scopes": ["repo", "read:user"], "grant_agents": []}, g).needs[0].url.query.scope == "read:user,repo"
}

# Without a browser (loopback.open answers unavailable), connect fails with
# INTERACTIVE_AUTH_REQUIRED and its --no-browser fix, before anything else is asked.
test_no_browser if {
	f := object.union(_base, {"loopback": {"unavailable": "no display and no terminal"}})
	_connect(_args, f) == fx.failed(
		fx.err(
			"INTERACTIVE_AUTH_REQUIRED", "authorizing google needs a browser and this session has none",
			"grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat --no-browser", {"connector": "google"},
		),
		[],
	)
}

# A host that learns only while waiting that nobody can use a browser says so.
test_no_browser_while_waiting if {
	f := fx.patch(_until_callback(_base, _ok_params), {"callback": {"status": "unavailable"}})
	_connect(_args, f) == fx.failed(
		fx.err(
			"INTERACTIVE_AUTH_REQUIRED", "authorizing google needs a browser and this session has none",
			"grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat --no-browser", {"connector": "google"},
		),
		[],
	)
}

# The fix asks again as the user asked: agents listed without scopes keep their declared
# scopes (no --scopes); with neither, the catalog's defaults that were asked for.
test_the_fix_asks_again_as_asked if {
	f := object.union(_base, {"loopback": {"unavailable": "no display and no terminal"}})
	_connect(fx.patch(_args, {"scopes": []}), f).error.fix == "grantwire connect google --grant-agent builtin:chat --no-browser"
	g := fx.patch(f, {"grants": fx.no_file(fx.grants_file, ["google"]), "conn": fx.absent})
	_connect({"connector": "google", "scopes": [], "grant_agents": []}, g).error.fix == "grantwire connect google --scopes email,openid --no-browser"
}

test_a_loopback_answer_that_is_not_a_url if {
	f := object.union(_base, {"loopback": {"redirect_uri": 8080}})
	_connect(_args, f) == fx.failed(
		fx.err(
			"INTERACTIVE_AUTH_REQUIRED", "authorizing google needs a browser and this session has none",
			"grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat --no-browser", {"connector": "google"},
		),
		[],
	)
}

test_timeout if {
	_connect(_args, _until_callback(_base, _ok_params)) == fx.need([_exchange_need])
	every cb in [{"status": "timeout"}, {"status": "canceled"}] {
		_connect(_args, fx.patch(_until_callback(_base, {}), {"callback": cb})) == fx.failed(
			fx.err(
				"AUTHORIZATION_TIMEOUT", "no answer from the browser in 5m; nothing was stored",
				"grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat", {"connector": "google", "timeout_ms": 300000},
			),
			[],
		)
	}
	f := fx.patch(_until_callback(_base, {}), {"callback": {"status": "timeout"}})
	_connect(fx.patch(_args, {"timeout_ms": 120000}), f).error.message == "no answer from the browser in 2m; nothing was stored; fix: grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat"
	_connect(fx.patch(_args, {"timeout_ms": 90000}), f).error.summary == "no answer from the browser in 90s; nothing was stored"
	_connect(fx.patch(_args, {"timeout_ms": 1500}), f).error.summary == "no answer from the browser in 1500ms; nothing was stored"
}

_exchange_need := {
	"key": "token", "kind": "http.request", "commit": true, "method": "POST",
	"url": "https://oauth2.googleapis.com/token",
	"headers": {"Accept": "application/json", "Authorization": {"$basic": [fx.desc("client#client_id", fx.id_a), fx.desc("client#client_secret", "5ec5ec5ec5ec5ec5")]}},
	"form": {
		"grant_type": "authorization_code", "code": {"$ref": "callback#code"},
		"redirect_uri": fx.redirect_uri, "code_verifier": {"$ref": "verifier#value"},
	},
	"secret_fields": ["access_token", "refresh_token", "id_token"],
	"timeout_ms": 30000,
}

test_the_issuer_is_checked_before_the_error_and_the_code if {
	mismatch := fx.failed(
		fx.err(
			"ISSUER_MISMATCH",
			"the google authorization response names the issuer https://evil.example where google's catalog entry expects https://accounts.google.com (a catalog that points google at another server needs that server's issuer; both show in: grantwire catalog google); the code was not exchanged and nothing was stored",
			"", {"connector": "google"},
		),
		[],
	)
	_connect(_args, _until_callback(_base, {"code": _code, "iss": "https://evil.example"})) == mismatch
	_connect(_args, _until_callback(_base, {"error": "access_denied", "iss": "https://evil.example"})) == mismatch
	_connect(_args, _until_callback(_base, {"code": _code, "iss": "https://accounts.google.com"})) == fx.need([_exchange_need])

	# a provider that names its issuer in the catalog
	g := fx.patch(_base, {"grants": fx.no_file(fx.grants_file, ["github"])})
	gh := {"connector": "github", "scopes": ["repo"], "grant_agents": []}
	_connect(gh, _until_callback(g, {"code": _code, "iss": "https://accounts.google.com"})).error.code == "ISSUER_MISMATCH"
	_connect(gh, _until_callback(g, {"code": _code, "iss": "https://github.com"})).needs[0].key == "token"
}

# A provider that promises iss must send it (RFC 9207 §2.4).
test_a_missing_iss_where_promised if {
	g := fx.patch(_base, {"grants": fx.no_file(fx.grants_file, ["github"])})
	gh := {"connector": "github", "scopes": ["repo"], "grant_agents": []}
	_connect(gh, _until_callback(g, {"code": _code})).error == fx.err(
		"ISSUER_MISMATCH",
		"the github authorization response names no issuer although the provider always sends one; the code was not exchanged and nothing was stored",
		"", {"connector": "github"},
	)
}

test_consent_denied if {
	_connect(_args, _until_callback(_base, {"error": "access_denied", "error_description": "The user said no"})) == fx.failed(
		fx.err("CONSENT_DENIED", "the google authorization was refused (access_denied)", "", {"connector": "google", "oauth_error": "access_denied"}),
		[],
	)

	# any other error is the provider's
	_connect(_args, _until_callback(_base, {"error": "temporarily_unavailable"})) == fx.failed(
		fx.err("PROVIDER_ERROR", "google: the authorization endpoint answered temporarily_unavailable; nothing was stored", "", {"connector": "google"}),
		[],
	)
	_connect(_args, _until_callback(_base, {"error": "<b>x</b>", "code": _code})).error.summary == "google: the authorization endpoint answered unrecognised_error; nothing was stored"
}

# A callback without a code is a provider problem; nothing is exchanged or locked.
test_a_callback_without_a_code if {
	no_code := fx.failed(
		fx.err("PROVIDER_ERROR", "google: the authorization response carried no code", "", {"connector": "google"}),
		[],
	)
	_connect(_args, _until_callback(_base, {"state": "s"})) == no_code
	_connect(_args, _until_callback(_base, {"state": "s", "code": "not a description"})) == no_code
}

# ---------------------------------------------------------------------------------------
# the token

test_token_errors if {
	_connect(_args, _until_token(_base, {"error": "invalid_grant"})) == fx.failed(
		fx.err("PROVIDER_ERROR", "the google token endpoint failed (status 400 invalid_grant)", "", {"connector": "google", "http_status": 400, "oauth_error": "invalid_grant"}),
		[],
	)
	_connect(_args, fx.patch(_until_token(_base, {}), {"token": fx.http(401, {"error": "invalid_client"})})) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: the google token endpoint refused the OAuth client's credentials (invalid_client; they were sent as client_secret_basic): check the client id and secret",
			"grantwire configure google --client-id <id> --client-secret-stdin", {"connector": "google", "client_auth": "client_secret_basic"},
		),
		[],
	)
	nosecret := object.union(fx.env_client("client", fx.id_a, false), {"conn": fx.absent, "grants": fx.no_file(fx.grants_file, ["google"]), "agents": fx.no_agents})
	_connect(_args, fx.patch(_until_token(nosecret, {}), {"token": fx.http(400, {"error": "invalid_client"})})).error.message == "configuration error: the google token endpoint refused the OAuth client (invalid_client) and no client secret is configured (neither stored with the client nor in GOOGLE_CLIENT_SECRET); the catalog says google needs the client's secret; fix: grantwire configure google --client-id <id> --client-secret-stdin"
	_connect(_args, fx.patch(_until_token(_base, {}), {"token": {"status": 0, "error": "refused"}})).error.message == "the google token endpoint could not be reached (the connection was refused)"
	_connect(_args, fx.patch(_until_token(_base, {}), {"token": fx.http(502, null)})).error.message == "the google token endpoint failed (status 502)"
}

test_no_refresh_token if {
	# Google's way (the catalog asks for access_type=offline and prompt=consent): the
	# provider's client settings are the cause
	_connect(_args, _until_token(_base, fx.token_json("token", {}))) == fx.failed(
		fx.err(
			"PROVIDER_ERROR",
			"google: the token endpoint issued no refresh token, so the connection could not outlive this access token; nothing was stored; offline access was asked for (access_type=offline and prompt=consent), so check the OAuth client's settings at google",
			"", {"connector": "google"},
		),
		[],
	)

	# an entry that asks for no offline access is told how to
	f := fx.patch(_until_token(_base, fx.token_json("token", {})), {})
	d := fx.decide_with(fx.q1("connect", _args, f), _google_with({"auth_params": {}}))
	d.error.summary == "google: the token endpoint issued no refresh token, so the connection could not outlive this access token; nothing was stored; the catalog entry of google must ask for offline access: the offline_access scope (OpenID providers), or auth_params access_type=offline and prompt=consent (Google)"
	d.error.fix == ""

	# a provider offering offline_access: the fix asks for it
	o := fx.decide_with(fx.q1("connect", _args, f), _google_with({"available_scopes": ["gmail.readonly", "offline_access"]}))
	o.error.fix == "grantwire connect google --scopes gmail.readonly,offline_access"
	startswith(o.error.summary, "google: the token endpoint issued no refresh token")
	endswith(o.error.summary, "ask for the offline_access scope, which google offers")
}

# The fixture catalog with some fields of google's entry replaced.
_google_with(patch) := {"connectors": object.union(object.remove(fx.catalog.connectors, ["google"]), {
	"google": object.union(object.remove(fx.catalog.connectors.google, object.keys(patch)), patch),
})}

test_userinfo_then_the_lock if {
	_connect(_args, _until_token(_base, _granted)) == fx.need([{
		"key": "userinfo", "kind": "http.request", "method": "GET",
		"url": "https://openidconnect.googleapis.com/v1/userinfo",
		"headers": {"Accept": "application/json", "Authorization": {"$concat": ["Bearer ", {"$ref": "token#access_token"}]}},
		"timeout_ms": 10000,
	}])
	f := object.union(_until_token(_base, _granted), {"userinfo": _userinfo})
	_connect(_args, f) == fx.need([
		{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 30000},
		{"key": "now@lock", "kind": "clock.now", "after": "lock"},
		{"key": "state@lock", "kind": "ledger.read", "ledger": "connectors/state.json", "path": ["google"], "after": "lock"},
		{"key": "conn@lock", "kind": "keyring.get", "user": "google:default", "fields": ["refresh_token"], "fresh": true, "after": "lock"},
		{"key": "grant|builtin:chat", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["google", "builtin:chat"], "after": "lock"},
	])
	_connect(_args, object.union(f, {"lock": "busy"})).error == fx.err(
		"BUSY", "another grantwire operation holds the google lock; nothing was changed, retry shortly", "",
		{"connector": "google", "retry_after_ms": 500},
	)
}

test_connected if {
	_connect(_args, _all(_base, _granted, _chat_grant)) == fx.done(
		{
			"connector": "google", "account": "user@example.com",
			"scopes": ["gmail.readonly"],
			"granted": {"builtin:chat": ["gmail.readonly"]},
			"not_granted": [], "warnings": [],
		},
		[
			{"kind": "keyring.set", "user": "google:default", "value": {
				"account_email": "user@example.com", "client_id_hash": fx.hash_a,
				"connected_at": {"$number": "1700000200.123"},
				"refresh_token": {"$ref": "token#refresh_token"},
				"scopes": ["gmail.readonly"],
			}},
			{"kind": "keyring.set", "user": "google:access_token", "value": {
				"access_token": {"$ref": "token#access_token"}, "expires_at": _now + 3599000,
				"client_id_hash": fx.hash_a, "connected_at": _now,
			}},
			{"kind": "ledger.write", "ledger": "connectors/state.json", "ops": [{"path": ["google"], "value": {
				"configured": true, "account": "user@example.com", "scopes": ["gmail.readonly"],
				"connected_at": _now, "client_id_hash": fx.hash_a, "tenant": null,
			}}]},
			{"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [{"path": ["google", "builtin:chat"], "value": ["gmail.readonly"], "expect": {"exists": false}}]},
			{"kind": "event.emit", "type": "connector.grant.changed", "payload": {"connector_id": "google", "agent_id": "builtin:chat", "scopes": ["gmail.readonly"]}},
			{"kind": "event.emit", "type": "connector.connected", "payload": {"connector_id": "google", "account": "user@example.com"}},
		],
	)
}

# A provider that grants more than was asked does not widen the connection.
test_the_connection_holds_only_what_was_asked_for if {
	d := _connect(_args, _all(_base, _granted, _chat_grant))
	d.result.scopes == ["gmail.readonly"]
	d.result.not_granted == []
	d.effects[0].value.scopes == ["gmail.readonly"]
}

test_connected_without_agents_and_with_an_existing_grant if {
	# no agents: no grants write, no grant events
	args := {"connector": "google", "scopes": ["gmail.readonly"], "grant_agents": []}
	d := _connect(args, _all(_base, _granted, {}))
	d.result.granted == {}
	fx.kinds(d) == ["keyring.set", "keyring.set", "ledger.write", "event.emit"]

	# an existing grant is replaced if it is still as read
	g := {"grant|builtin:chat": fx.entry(fx.grants_file, ["google", "builtin:chat"], ["calendar"])}
	_connect(_args, _all(_base, _granted, g)).effects[3].ops == [{"path": ["google", "builtin:chat"], "value": ["gmail.readonly"], "expect": {"value": ["calendar"]}}]
}

test_scopes_not_granted if {
	narrow := fx.token_json("token", {"refresh_token": fx.new_refresh("token", "4e44e44e4e44e44e"), "scope": "openid"})
	args := {"connector": "google", "scopes": ["openid", "gmail.readonly"], "grant_agents": ["builtin:chat"]}
	d := _connect(args, _all(_base, narrow, _chat_grant))
	d.result.scopes == ["openid"]
	d.result.not_granted == ["gmail.readonly"]
	d.result.granted == {"builtin:chat": ["openid"]}
	d.result.warnings == ["the provider did not grant gmail.readonly; the connection holds only what it granted, and agents were granted only that"]
	d.effects[0].value.scopes == ["openid"]
	d.effects[3].ops[0].value == ["openid"]

	# no scope in the answer means as requested
	e := _connect(args, _all(_base, fx.token_json("token", {"refresh_token": fx.new_refresh("token", "4e44e44e4e44e44e")}), _chat_grant))
	e.result.scopes == ["gmail.readonly", "openid"]
	e.result.not_granted == []
	e.result.granted == {"builtin:chat": ["gmail.readonly", "openid"]}
}

test_agents_are_granted_what_they_declare if {
	# no explicit scopes: the agent gets its declared scopes, the connection the union
	args := {"connector": "google", "scopes": [], "grant_agents": ["builtin:chat"]}
	d := _connect(args, _all(_base, _granted, _chat_grant))
	d.result.scopes == ["email", "gmail.readonly", "openid"]
	d.result.granted == {"builtin:chat": ["gmail.readonly"]}
}

test_an_unreadable_state_mirror_is_skipped_with_a_warning if {
	f := fx.patch(_all(_base, _granted, _chat_grant), {"state@lock": fx.corrupt(fx.state_file, ["google"], "invalid JSON")})
	d := _connect(_args, f)
	d.status == "done"
	fx.kinds(d) == ["keyring.set", "keyring.set", "ledger.write", "event.emit", "event.emit"]
	d.effects[2].ledger == "connectors/grants.json"
	d.result.warnings == ["/home/u/.grantwire/connectors/state.json is unreadable, so it was not updated (it only mirrors connections for listings): mv /home/u/.grantwire/connectors/state.json /home/u/.grantwire/connectors/state.json.corrupt"]
}

test_a_provider_without_userinfo if {
	base := object.union(fx.client("client", fx.id_a), {"conn": fx.absent, "grants": fx.no_file(fx.grants_file, ["local"]), "agents": fx.no_agents})
	args := {"connector": "local", "scopes": ["read"], "grant_agents": []}
	r := fx.token_json("token", {"refresh_token": fx.new_refresh("token", "4e44e44e4e44e44e"), "scope": "read"})
	f := fx.patch(_until_token(base, r), {"callback": _callback({"code": _code})})
	_connect(args, f).needs[0].key == "lock"
	g := object.union(f, {"lock": "held", "now@lock": _now, "state@lock": fx.no_file(fx.state_file, ["local"]), "conn@lock": fx.absent})
	d := _connect(args, g)
	d.result.account == ""
	d.effects[0].value.account_email == ""
	d.result.scopes == ["read"]
	d.result.not_granted == []
	fx.kinds(d) == ["keyring.set", "keyring.set", "ledger.write", "event.emit"]
	d.effects[3] == {"kind": "event.emit", "type": "connector.connected", "payload": {"connector_id": "local", "account": ""}}
	object.keys(d.effects[0].value) == {"account_email", "client_id_hash", "connected_at", "refresh_token", "scopes"}
}

test_a_tenant_is_stored if {
	base := object.union(fx.env_client("client", fx.id_a, true), {"conn": fx.absent, "grants": fx.no_file(fx.grants_file, ["microsoft"]), "agents": fx.no_agents})
	args := {"connector": "microsoft", "scopes": ["User.Read"], "grant_agents": []}
	f := object.union(
		fx.patch(_until_token(base, _granted), {"callback": _callback({"code": _code})}),
		{"lock": "held", "now@lock": _now, "state@lock": fx.no_file(fx.state_file, ["microsoft"]), "conn@lock": fx.absent},
	)
	d := _connect(args, f)
	d.effects[0].value.tenant == "common"
	d.effects[0].value.client_id_hash == fx.hash_a
	d.effects[2].ops[0].value.tenant == "common"
}

# ---------------------------------------------------------------------------------------
# flows: paste-back and the device authorization grant (RFC 8628)

# The fixtures' catalog with device authorization: Google for two scopes only, Microsoft
# for any (under its tenant).
_dcat := {"connectors": object.union(fx.catalog.connectors, {
	"google": object.union(fx.catalog.connectors.google, {
		"device_authorization_url": "https://oauth2.googleapis.com/device/code",
		"device_scopes": ["email", "openid"],
	}),
	"microsoft": object.union(fx.catalog.connectors.microsoft, {"device_authorization_url": "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/devicecode"}),
})}

_dconnect(args, f) := fx.decide_with(fx.q1("connect", args, f), _dcat)

_dargs := {"connector": "google", "scopes": ["openid"], "grant_agents": [], "flow": "device"}

_ms_base := object.union(fx.env_client("client", fx.id_a, false), {"conn": fx.absent, "grants": fx.no_file(fx.grants_file, ["microsoft"]), "agents": fx.no_agents})

_issued := 1700000100000

_device_answer(extra) := fx.http(200, object.union(
	{
		"device_code": fx.desc("device#device_code", "dc0dedc0dedc0ded"), "user_code": "WDJB-MJHT",
		"verification_uri": "https://www.google.com/device", "expires_in": 1800, "interval": 5,
	},
	extra,
))

# Every fact up to the prompt, shown.
_shown(base, answer) := object.union(base, {"device": answer, "now@device": _issued, "prompt": {"shown": true}})

# The facts of n polls answered a, each sent after its wait (sleep@i answers the clock).
_polled(f, answers) := object.union(f, object.union(
	{concat("", ["poll@", format_int(i + 1, 10)]): a | some i, a in answers},
	{concat("", ["sleep@", format_int(i + 1, 10)]): t | some i, _ in answers; t := _issued + ((i + 1) * 5000)},
))

_pending := fx.http(400, {"error": "authorization_pending"})

_slow := fx.http(400, {"error": "slow_down"})

_poll_granted := fx.token_json("poll@3", {"refresh_token": fx.new_refresh("poll@3", "4e44e44e4e44e44e"), "scope": "openid"})

test_flow_argument if {
	msg := "connect needs connector, scopes and grant_agents (arrays of strings), an optional timeout_ms and an optional flow (loopback, paste or device)"
	every flow in ["browser", "", null, 1, false] {
		_connect(fx.patch(_args, {"flow": flow}), {}) == fx.failed(fx.usage(msg), [])
	}
	_connect(fx.patch(_args, {"flow": "loopback"}), _base) == fx.need([_loopback_need])
	_connect(fx.patch(_args, {"flow": "paste"}), _base) == fx.need([fx.patch(_loopback_need, {"mode": "paste"})])
}

test_a_headless_session_is_told_about_the_device_flow if {
	f := object.union(_base, {"loopback": {"unavailable": "no display and no terminal"}})
	args := {"connector": "google", "scopes": ["openid"], "grant_agents": []}
	_dconnect(args, f).error.fix == "grantwire connect google --scopes openid --device"

	# scopes the device flow does not allow: paste the redirect back
	_dconnect(_args, f).error.fix == "grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat --no-browser"

	# agents without explicit scopes keep their declarations
	_dconnect(fx.patch(_args, {"scopes": []}), f).error.fix == "grantwire connect google --grant-agent builtin:chat --no-browser"

	# the loopback's wait names the other way too
	g := object.union(_base, {
		"loopback": {"redirect_uri": fx.redirect_uri},
		"verifier": fx.desc("verifier#value", "7e51f1e57e51f1e5"), "state": fx.desc("state#value", _state),
	})
	_dconnect(args, g).needs[0].alternative == "grantwire connect google --scopes openid --device"
}

test_paste_back if {
	args := fx.patch(_args, {"flow": "paste"})
	f := object.union(_base, {"loopback": {"unavailable": "no standard input"}})
	_connect(args, f) == fx.failed(
		fx.err(
			"INTERACTIVE_AUTH_REQUIRED", "pasting the google redirect back needs standard input, and this session has none",
			"", {"connector": "google"},
		),
		[],
	)
	_dconnect(fx.patch(args, {"scopes": ["openid"]}), f).error.fix == "grantwire connect google --scopes openid --grant-agent builtin:chat --device"

	# the wait: no other way to name (pasting is the last resort) unless the device flow fits
	g := _until_callback(_base, _ok_params)
	w := _connect(args, object.remove(g, ["callback"])).needs[0]
	w.kind == "loopback.wait"
	not w.alternative

	# standard input ended before a redirect was pasted
	_connect(args, fx.patch(g, {"callback": {"status": "unavailable"}})) == fx.failed(
		fx.err(
			"INTERACTIVE_AUTH_REQUIRED", "no google redirect URL was pasted before standard input ended; nothing was stored",
			"grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat --no-browser", {"connector": "google"},
		),
		[],
	)
	_dconnect(fx.patch(args, {"scopes": ["openid"], "grant_agents": []}), fx.patch(g, {"callback": {"status": "unavailable"}})).error.fix == "grantwire connect google --scopes openid --device"

	# nothing pasted in time: the command that tries again pastes again
	_connect(args, fx.patch(g, {"callback": {"status": "timeout"}})) == fx.failed(
		fx.err(
			"AUTHORIZATION_TIMEOUT", "no answer from the browser in 5m; nothing was stored",
			"grantwire connect google --scopes gmail.readonly --grant-agent builtin:chat --no-browser", {"connector": "google", "timeout_ms": 300000},
		),
		[],
	)

	# the same answer checks as the loopback: a pasted error is never echoed
	_connect(args, _until_callback(_base, {"error": "<script>x</script>", "iss": "https://accounts.google.com"})).error.summary == "google: the authorization endpoint answered unrecognised_error; nothing was stored"
	_connect(args, g) == fx.need([_exchange_need])
}

test_the_device_flow_must_be_offered if {
	_connect(_dargs, _base) == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: google offers no device authorization in the catalog; authorize in a browser (on any machine, pasting the redirect back)",
			"grantwire connect google --scopes openid --no-browser", {"connector": "google"},
		),
		[],
	)
	_dconnect(fx.patch(_dargs, {"scopes": ["openid", "gmail.readonly", "calendar"]}), _base) == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: the google device authorization does not allow calendar gmail.readonly; authorize those scopes in a browser (on any machine, pasting the redirect back)",
			"grantwire connect google --scopes calendar,gmail.readonly,openid --no-browser",
			{"connector": "google", "scopes": ["calendar", "gmail.readonly"]},
		),
		[],
	)
	cat := {"connectors": {"google": object.union(_dcat.connectors.google, {"device_authorization_url": "http://example.com/device"})}}
	fx.decide_with(fx.q1("connect", _dargs, _base), cat).error.reason == "google device_authorization_url: plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)"
}

test_the_device_request if {
	_dconnect(_dargs, _base) == fx.need([
		{
			"key": "device", "kind": "http.request", "method": "POST",
			"url": "https://oauth2.googleapis.com/device/code",
			"headers": {"Accept": "application/json", "Authorization": {"$basic": [fx.desc("client#client_id", fx.id_a), fx.desc("client#client_secret", "5ec5ec5ec5ec5ec5")]}},
			"form": {"client_id": fx.desc("client#client_id", fx.id_a), "scope": "openid"},
			"secret_fields": ["device_code"], "timeout_ms": 30000,
		},
		{"key": "now@device", "kind": "clock.now"},
	])

	# under the client's tenant, the scopes joined as the catalog says
	ms := _dconnect({"connector": "microsoft", "scopes": [], "grant_agents": [], "flow": "device"}, _ms_base).needs[0]
	ms.url == "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode"
	ms.form.scope == "User.Read offline_access"

	# a public client (no secret) sends its id alone
	ms.headers == {"Accept": "application/json"}
	object.keys(ms.form) == {"client_id", "scope"}
}

test_the_code_is_shown if {
	f := object.union(_base, {"device": _device_answer({}), "now@device": _issued})
	_dconnect(_dargs, f) == fx.need([{
		"key": "prompt", "kind": "prompt.show", "connector": "google",
		"verification_uri": "https://www.google.com/device", "user_code": "WDJB-MJHT",
		"expires_in_ms": 300000, "interval_ms": 5000,
	}])

	# Google's verification_url, a complete URI, a code that lives shorter than the timeout
	g := fx.patch(f, {"device": _device_answer({
		"verification_uri": null, "verification_url": "https://www.google.com/device",
		"verification_uri_complete": "https://www.google.com/device?user_code=WDJB-MJHT", "expires_in": 120,
	})})
	p := _dconnect(_dargs, g).needs[0]
	p.verification_uri == "https://www.google.com/device"
	p.verification_uri_complete == "https://www.google.com/device?user_code=WDJB-MJHT"
	p.expires_in_ms == 120000

	# a complete URI the transport rule refuses is left out
	h := fx.patch(f, {"device": _device_answer({"verification_uri_complete": "javascript:alert(1)"})})
	not _dconnect(_dargs, h).needs[0].verification_uri_complete

	# nobody to show it to
	_dconnect(_dargs, object.union(f, {"prompt": {"shown": false, "reason": "no terminal"}})) == fx.failed(
		fx.err("INTERACTIVE_AUTH_REQUIRED", "the google device code could not be shown to anyone in this session", "", {"connector": "google"}),
		[],
	)
}

_answered(answer) := _dconnect(_dargs, object.union(_base, {"device": answer, "now@device": _issued}))

test_unusable_device_answers if {
	bad := "google: the device authorization endpoint gave no usable device_code, user_code, verification_uri or expires_in; nothing was stored"
	every extra in [
		{"user_code": "<b>x</b>"}, {"user_code": 7}, {"verification_uri": "http://example.com/device"},
		{"verification_uri": null}, {"expires_in": 0}, {"expires_in": 1.5}, {"device_code": "plain"},
	] {
		_answered(_device_answer(extra)).error.summary == bad
	}
	_answered(fx.http(401, {"error": "invalid_client"})).error == fx.err(
		"CONFIGURATION", "configuration error: the google device authorization endpoint refused the OAuth client (invalid_client)",
		"grantwire configure google --client-id <id>", {"connector": "google"},
	)
	_answered(fx.http(400, {"error": "unauthorized_client"})).error.fix == "grantwire connect google --scopes openid --no-browser"
	_answered(fx.http(200, {"error": "device_flow_disabled"})).error.oauth_error == "device_flow_disabled"
	_answered(fx.http(400, {"error": "invalid_scope"})).error.summary == "configuration error: the google device authorization endpoint refused the scopes (invalid_scope); authorize them in a browser"
	_answered(fx.http(400, {"error": "<i>"})).error == fx.err(
		"PROVIDER_ERROR", "google: the device authorization endpoint failed (status 400 unrecognised_error); nothing was stored", "",
		{"connector": "google", "http_status": 400, "oauth_error": "unrecognised_error"},
	)
	_answered({"status": 0, "error": "refused"}).error.summary == "google: the device authorization endpoint could not be reached (the connection was refused); nothing was stored"
	_answered({"status": 200, "headers": {}, "json": null, "body": "not_json"}).error.summary == "google: the device authorization endpoint answered without JSON; nothing was stored"
	_answered(fx.http(503, null)).error.summary == "google: the device authorization endpoint failed (status 503); nothing was stored"

	# no interval: 5 s
	g := _shown(_base, _device_answer({"interval": null}))
	_dconnect(_dargs, g).needs[0] == {"key": "sleep@1", "kind": "clock.sleep", "ms": 5000}
}

test_polling if {
	f := _shown(_base, _device_answer({}))
	_dconnect(_dargs, f) == fx.need([
		{"key": "sleep@1", "kind": "clock.sleep", "ms": 5000},
		{
			"key": "poll@1", "kind": "http.request", "method": "POST",
			"url": "https://oauth2.googleapis.com/token",
			"headers": {"Accept": "application/json", "Authorization": {"$basic": [fx.desc("client#client_id", fx.id_a), fx.desc("client#client_secret", "5ec5ec5ec5ec5ec5")]}},
			"form": {"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": {"$ref": "device#device_code"}},
			"secret_fields": ["access_token", "refresh_token", "id_token"],
			"timeout_ms": 30000,
		},
	])

	# pending: the same interval; slow_down: 5 s more each time, for every later poll
	fx.by_key(_dconnect(_dargs, _polled(f, [_pending])))["sleep@2"].ms == 5000
	fx.by_key(_dconnect(_dargs, _polled(f, [_pending, _slow])))["sleep@3"].ms == 10000
	fx.by_key(_dconnect(_dargs, _polled(f, [_slow, _pending, _slow])))["sleep@4"].ms == 15000

	# a slow_down naming a longer interval (GitHub answers 200 with it)
	fx.by_key(_dconnect(_dargs, _polled(f, [fx.http(200, {"error": "slow_down", "interval": 30})])))["sleep@2"].ms == 30000

	# a poll that got no answer in time doubles the wait; other transport failures end it
	fx.by_key(_dconnect(_dargs, _polled(f, [{"status": 0, "error": "timeout"}])))["sleep@2"].ms == 10000
	_dconnect(_dargs, _polled(f, [{"status": 0, "error": "refused"}])).error.summary == "the google token endpoint could not be reached (the connection was refused)"
	timeouts := [{"status": 0, "error": "timeout"} | some _ in numbers.range(1, 4)]
	_dconnect(_dargs, _polled(f, timeouts)).error.code == "PROVIDER_ERROR"

	# the last wait ends at the deadline
	near := _polled(f, [_pending])
	fx.by_key(_dconnect(_dargs, fx.patch(near, {"sleep@1": (_issued + 300000) - 2000})))["sleep@2"].ms == 2000
}

test_a_long_window_stretches_the_polls if {
	f := _shown(_base, _device_answer({"interval": 1}))

	# 30 minutes allow at most max_polls polls: one every 6 s
	_dconnect(fx.patch(_dargs, {"timeout_ms": 1800000}), f).needs[0].ms == 6000
	_dconnect(_dargs, f).needs[0].ms == 1000
}

test_when_polling_stops if {
	f := _shown(_base, _device_answer({}))

	# the window has passed
	late := fx.patch(_polled(f, [_pending]), {"sleep@1": _issued + 300000})
	_dconnect(_dargs, late) == fx.failed(
		fx.err(
			"AUTHORIZATION_TIMEOUT", "the google device code was not approved within 5m; nothing was stored",
			"grantwire connect google --scopes openid --device", {"connector": "google"},
		),
		[],
	)
	short := fx.patch(_shown(_base, _device_answer({"expires_in": 30})), {"sleep@1": _issued + 30000, "poll@1": _pending})
	_dconnect(_dargs, short).error.summary == "the google device code was not approved within 30s; nothing was stored"

	# the server says so
	_dconnect(_dargs, _polled(f, [_pending, fx.http(400, {"error": "expired_token"})])).error == fx.err(
		"AUTHORIZATION_TIMEOUT", "the google device code expired before it was approved; nothing was stored",
		"grantwire connect google --scopes openid --device", {"connector": "google"},
	)

	# the user refused
	_dconnect(_dargs, _polled(f, [_pending, fx.http(400, {"error": "access_denied"})])) == fx.failed(
		fx.err("CONSENT_DENIED", "the google authorization was refused (access_denied)", "", {"connector": "google", "oauth_error": "access_denied"}),
		[],
	)
	_dconnect(_dargs, _polled(f, [fx.http(400, {"error": "authorization_declined"})])).error.oauth_error == "authorization_declined"

	# anything else is the token endpoint's failure
	_dconnect(_dargs, _polled(f, [fx.http(400, {"error": "bad_verification_code"})])).error.message == "the google token endpoint failed (status 400 bad_verification_code)"
	_dconnect(_dargs, _polled(f, [fx.http(401, {"error": "invalid_client"})])).error.code == "CONFIGURATION"

	# at most max_polls polls
	many := _polled(f, [_pending | some _ in numbers.range(1, 300)])
	_dconnect(fx.patch(_dargs, {"timeout_ms": 1800000}), many).error.code == "AUTHORIZATION_TIMEOUT"
}

test_an_approved_device_code_connects_as_the_loopback_does if {
	f := _polled(_shown(_base, _device_answer({})), [_pending, _slow, fx.http(200, _poll_granted)])
	_dconnect(_dargs, f).needs[0].headers.Authorization == {"$concat": ["Bearer ", {"$ref": "poll@3#access_token"}]}
	g := object.union(f, {"userinfo": _userinfo, "lock": "held", "now@lock": _now, "state@lock": fx.no_entry(fx.state_file, ["google"]), "conn@lock": fx.absent})
	d := _dconnect(_dargs, g)
	d.result == {"connector": "google", "account": "user@example.com", "scopes": ["openid"], "granted": {}, "not_granted": [], "warnings": []}
	d.effects[0].value.refresh_token == {"$ref": "poll@3#refresh_token"}
	d.effects[1].value.access_token == {"$ref": "poll@3#access_token"}
	fx.kinds(d) == ["keyring.set", "keyring.set", "ledger.write", "event.emit"]

	# without a refresh token, the same refusal as the loopback's
	n := _polled(_shown(_base, _device_answer({})), [fx.http(200, fx.token_json("poll@1", {}))])
	_dconnect(_dargs, n).error.summary == "google: the token endpoint issued no refresh token, so the connection could not outlive this access token; nothing was stored; offline access was asked for (access_type=offline and prompt=consent), so check the OAuth client's settings at google"
}

# Two connects of one provider: the one that stores first wins; the other finds its
# connection under the lock, keeps it and revokes its own fresh authorization.
test_a_connect_that_lost_the_race if {
	winner := fx.slot("conn@lock", "c9", object.union(fx.conn_json("conn@lock", fx.hash_a, ["openid"], "9e9e9e9e9e9e9e9e"), {"account_email": "first@example.com", "connected_at": 1700000150}))
	f := fx.patch(_all(_base, _granted, _chat_grant), {"conn@lock": winner})
	_connect(_args, f) == fx.failed(
		fx.err(
			"BUSY",
			"another connect of google stored a connection (first@example.com) while this one waited for the authorization; it was kept and this authorization was discarded",
			"", {"connector": "google", "retry_after_ms": 500},
		),
		[{
			"kind": "http.send", "method": "POST", "url": "https://oauth2.googleapis.com/revoke",
			"headers": {"Authorization": {"$basic": [fx.desc("client#client_id", fx.id_a), fx.desc("client#client_secret", "5ec5ec5ec5ec5ec5")]}},
			"form": {"token": {"$ref": "token#refresh_token"}, "token_type_hint": "refresh_token"},
			"timeout_ms": 5000,
		}],
	)

	# the connection read at the start, still there (a refresh rotated it): a reconnect
	held := fx.patch(f, {"conn": fx.conn("conn", fx.hash_a, ["openid"]), "conn@lock": fx.conn("conn@lock", fx.hash_a, ["openid"])})
	_connect(_args, held).status == "done"
	not _connect(_args, held).error

	# an unreadable blob under the lock is overwritten, as before
	_connect(_args, fx.patch(f, {"conn@lock": fx.not_json("conn@lock", "c2")})).result.connector == "google"

	# without a revocation endpoint nothing is sent
	gh := fx.patch(_base, {"grants": fx.no_file(fx.grants_file, ["local"])})
	r := fx.token_json("token", {"refresh_token": fx.new_refresh("token", "4e44e44e4e44e44e"), "scope": "read"})
	lf := object.union(fx.patch(_until_token(gh, r), {"callback": _callback({"code": _code})}), {"lock": "held", "now@lock": _now, "state@lock": fx.no_file(fx.state_file, ["local"]), "conn@lock": winner})
	_connect({"connector": "local", "scopes": ["read"], "grant_agents": []}, lf) == fx.failed(
		fx.err(
			"BUSY",
			"another connect of local stored a connection (first@example.com) while this one waited for the authorization; it was kept and this authorization was discarded",
			"", {"connector": "local", "retry_after_ms": 500},
		),
		[],
	)
}

test_invalid_client_of_a_public_client_names_the_client_id if {
	# issue 20 §1.17: no secret, and the catalog does not say one is needed: the id is wrong
	# or not registered as a public client; the fix configures the id again, with no secret
	e := oauth.invalid_client("microsoft", {"has_secret": false}) with data.catalog as fx.catalog
	e.code == "CONFIGURATION"
	e.fix == "grantwire configure microsoft --client-id <id>"
	e.client_auth == "none"
	g := oauth.invalid_client("google", {"has_secret": false}) with data.catalog as fx.catalog
	g.missing == "client_secret"
	s := oauth.invalid_client("microsoft", {"has_secret": true, "tenant": "common"}) with data.catalog as fx.catalog
	s.fix == "grantwire configure microsoft --client-id <id> --client-secret-stdin"
}

# A user's catalog file that points a provider at another server which names itself gets
# the command that writes that issuer into the file (issue 20 §2.1); the embedded catalog
# and an issuer of another origin (a mix-up) get none.
test_an_issuer_mismatch_in_a_catalog_file_names_the_fix if {
	g := fx.patch(_base, {"grants": fx.no_file(fx.grants_file, ["github"])})
	gh := {"connector": "github", "scopes": ["repo"], "grant_agents": [], "catalog_file": "/home/u/my catalog.json"}
	own := _connect(gh, _until_callback(g, {"code": _code, "iss": "https://github.com/self"}))
	own.error.code == "ISSUER_MISMATCH"
	own.error.fix == "grantwire --catalog '/home/u/my catalog.json' catalog set github issuer=https://github.com/self"
	_connect(gh, _until_callback(g, {"code": _code, "iss": "https://evil.example"})).error.fix == ""
	_connect(object.remove(gh, ["catalog_file"]), _until_callback(g, {"code": _code, "iss": "https://github.com/self"})).error.fix == ""
	_connect(object.union(gh, {"catalog_file": 7}), _until_callback(g, {"code": _code, "iss": "https://github.com/self"})).error.fix == ""
}
