# METADATA
# title: Connect
# description: |
#   `connect(connector, scopes, grant_agents)`: authorize a provider with OAuth 2.0 + PKCE
#   S256 through the host's one-shot 127.0.0.1 loopback, exchange the code, read the account,
#   then store the connection under the provider's lock and grant the listed agents. With no
#   scopes: the union of the listed agents' declared scopes and the catalog defaults (agents
#   are granted what they declare), or the catalog defaults when nothing is stored yet;
#   reconnecting with no scopes over an existing connection or grants is refused with the
#   command that keeps them. The connection records what the provider granted (its token
#   response's scope), agents are granted only scopes the connection holds, and the result
#   says what was not granted. The authorization response's issuer is checked (RFC 9207)
#   before its error or code is looked at.
#
#   Three flows (args.flow): "loopback" (the default: the browser comes back to the
#   listener), "paste" (the user opens the URL anywhere and pastes the final redirect URL
#   back; the same checks apply) and "device" (RFC 8628: the user enters a code shown here
#   on another device while the token endpoint is polled, honouring interval, slow_down
#   and the code's lifetime, with a simulated clock in tests). What follows the token
#   response is the same for all three. A connect that finds, under the lock, a
#   connection stored by another connect since it began keeps that one and reports BUSY.
package grantwire.connect

import data.grantwire.agents
import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
import data.grantwire.mcp
import data.grantwire.oauth
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store
import data.grantwire.transport

# METADATA
# title: connect lock wait
# description: How long storing a fresh authorization waits for the lock (the consent is lost on BUSY).
lock_wait_ms := 30000

# METADATA
# title: authorization timeout
# description: How long connect waits for the browser by default (milliseconds).
default_timeout_ms := 300000

# METADATA
# title: device polls
# description: |
#   The most polls of the token endpoint one device authorization makes; the wait between
#   polls is stretched so that the authorization's window allows no more.
max_polls := 300

# METADATA
# title: slow_down
# description: What each slow_down answer adds to the polling interval (RFC 8628 §3.5), milliseconds.
slow_down_ms := 5000

# METADATA
# title: unanswered polls
# description: |
#   Polls that may time out (each doubles the wait, RFC 8628 §3.5) before the provider is
#   reported unreachable; any other transport failure ends the wait at once.
max_unanswered := 4

_f := object.get(input, "facts", {})

_c := input.args.connector

# The user's catalog file the host decides with (args.catalog_file, absent for the embedded
# catalog): an issuer mismatch's fix writes to it.
_catalog_file := f if {
	f := input.args.catalog_file
	is_string(f)
} else := ""

_str_list(xs) if {
	is_array(xs)
	every s in xs {
		is_string(s)
	}
}

_args_ok if {
	is_string(_c)
	_str_list(input.args.scopes)
	_str_list(input.args.grant_agents)
	_timeout_ok
	_flow_ok
}

_flow_ok if not "flow" in object.keys(input.args)

_flow_ok if input.args.flow in {"loopback", "paste", "device"}

_flow := input.args.flow if _flow_ok

else := "loopback"

_device if _flow == "device"

_mode := "paste" if _flow == "paste"

else := "listen"

_timeout_ok if not input.args.timeout_ms

_timeout_ok if {
	is_number(input.args.timeout_ms)
	input.args.timeout_ms == floor(input.args.timeout_ms)
	input.args.timeout_ms >= 1000
	input.args.timeout_ms <= 1800000
}

_timeout := input.args.timeout_ms if is_number(input.args.timeout_ms)

else := default_timeout_ms

_explicit := scopes.sorted(input.args.scopes)

_agents := scopes.sorted(input.args.grant_agents)

_registry := agents.registry(_f, "agents")

_needs := array.concat(
	array.concat(store.client_needs("client", _c, true), [
		store.conn_need("conn", _c),
		facts.ledger("grants", store.grants_file, [_c]),
	]),
	agents.needs(_f, "agents"),
)

_client := store.client(_f, "client", _c)

_unknown_agents := [a | some a in _agents; not _registry[a]]

_declared(a) := s if {
	s := agents.declared(_registry[a], _c)
	count(s) > 0
}

_undeclaring := [a | some a in _agents; not _declared(a)]

_conn := store.connection(_f.conn)

_prior if _conn.found == true

_prior if count(facts.value(_f, "grants", {})) > 0

_prior_scopes := scopes.union(
	object.get(_conn, "scopes", []),
	[s | some _, list in facts.value(_f, "grants", {}); some s in list],
)

# The scopes to authorize, and the scopes each listed agent asks for.
_authorize_scopes := _explicit if {
	count(_explicit) > 0
} else := scopes.union(
	[s | some a in _agents; some s in _declared(a)],
	catalog.default_scopes(_c),
) if {
	count(_agents) > 0
} else := scopes.sorted(catalog.default_scopes(_c))

# The command that asks for this connection again as it was asked: the same scopes (without
# scopes or agents, the ones asked for: the catalog's defaults) and the same agents.
_again := concat("", [
	"grantwire connect ", _c, scopes.flag(_again_scopes),
	concat("", [concat("", [" --grant-agent ", scopes.quote(a)]) | some a in _agents]),
])

_again_scopes := _explicit if {
	count(_explicit) > 0
} else := [] if {
	count(_agents) > 0
} else := _authorize_scopes

_wanted(a) := _explicit if count(_explicit) > 0

else := scopes.sorted(_declared(a))

_auth_endpoint := "device_authorization_url" if _device

else := "authorization_url"

_endpoint_problem := oauth.endpoint_problem(_c, _auth_endpoint, _client.tenant) if {
	not _endpoint_ok(_auth_endpoint)
} else := oauth.endpoint_problem(_c, "token_url", _client.tenant) if {
	not _endpoint_ok("token_url")
}

_verifier := {"$ref": "verifier#value"}

_state := {"$ref": "state#value"}

_redirect := _f.loopback.redirect_uri

_auth_url := oauth.authorization_url(_c, _client, _authorize_scopes, _redirect, _state, _verifier)

_cb := _f.callback

_params := object.get(_cb, "params", {})

_code := {"$ref": _params.code["$ref"]}

# Positive rules: a negated call on an undefined argument is false in Rego, not true.
_listening if is_string(_redirect)

_has_code if is_string(_params.code["$ref"])

_has_refresh if is_object(_r.refresh)

_endpoint_ok(field) if transport.allowed(oauth.endpoint(_c, field, _client.tenant))

_r := oauth.response(_f[_poll_key(_polls)]) if {
	_device
	_polls > 0
} else := oauth.response(_f.token)

# The scopes the connection holds: those asked for that the token response says were
# granted, else what was asked for (RFC 6749 §5.1: an omitted scope means as requested).
_stored_scopes := [s | some s in _r.scope; s in scopes.set(_authorize_scopes)] if {
	is_array(_r.scope)
} else := _authorize_scopes

_not_granted := scopes.missing(_authorize_scopes, _stored_scopes)

# Each listed agent is granted what it asked for that the connection holds.
_agent_scopes(a) := sort([s | some s in _wanted(a); s in scopes.set(_stored_scopes)])

_account := oauth.account(_f.userinfo) if facts.has(_f, "userinfo")

else := ""

_userinfo_needs := [oauth.userinfo_need("userinfo", _c, _client, {"$ref": _r.access["$ref"]})] if {
	oauth.has_userinfo(_c, _client)
} else := []

_grant_key(a) := facts.key(["grant", a])

_locked_needs := array.concat(
	[
		facts.lock("lock", _c, lock_wait_ms),
		facts.after(facts.now("now@lock"), "lock"),
		facts.after(facts.ledger("state@lock", store.state_file, [_c]), "lock"),
		facts.after(store.conn_need("conn@lock", _c), "lock"),
	],
	[facts.after(grants.grant_need(_grant_key(a), _c, a), "lock") | some a in _agents],
)

# Another connect stored a connection since this one began (it is not the one read at
# the start): that one is kept.
_winner := store.connection(_f["conn@lock"])

_superseded if {
	_winner.valid == true
	not _same_as_start
}

_same_as_start if {
	_conn.valid == true
	_conn.connected_at == _winner.connected_at
}

_discard := [e | e := oauth.revoke_effect(_c, _client, {"$ref": _r.refresh["$ref"]})]

_now := _f["now@lock"]

_mirror := [store.write(store.state_file, [{"path": [_c], "value": store.state_entry(_account, _stored_scopes, _now, _client.client_id_hash, _client.tenant)}])] if {
	not store.problem(_f["state@lock"])
} else := []

_warnings := array.concat(
	[concat("", [
		"the provider did not grant ", concat(" ", _not_granted),
		"; the connection holds only what it granted, and agents were granted only that",
	]) |
		count(_not_granted) > 0
	],
	[concat("", [
		_f["state@lock"].file, " is unreadable, so it was not updated (it only mirrors connections for listings): ",
		errors.move_aside(_f["state@lock"].file),
	]) |
		store.problem(_f["state@lock"])
	],
)

_effects := array.concat(
	array.concat(
		[
			{"kind": "keyring.set", "user": store.conn_user(_c), "value": store.conn_blob(
				_account, _stored_scopes, _now, _client.client_id_hash, _client.tenant, null,
				{"$ref": _r.refresh["$ref"]},
			)},
			store.put_token(_c, {"$ref": _r.access["$ref"]}, _now + (_r.expires_in * 1000), _client.client_id_hash, _now),
		],
		_mirror,
	),
	array.concat(
		array.concat(
			grants.write([grants.put_op(_c, a, _agent_scopes(a), _f[_grant_key(a)]) | some a in _agents]),
			[grants.changed_event(_c, a, _agent_scopes(a)) | some a in _agents],
		),
		[{"kind": "event.emit", "type": "connector.connected", "payload": {"connector_id": _c, "account": _account}}],
	),
)

_no_client := errors.configuration(
	concat("", ["no OAuth client is configured for ", _c]),
	store.configure_client_cmd(_c),
	{"connector": _c},
)

_token_error := oauth.invalid_client(_c, _client) if {
	_r.kind == "oauth"
	_r.error == "invalid_client"
} else := errors.token_failure(_c, _r)

# METADATA
# title: connect decision
# description: One step of connecting a provider; see the package description.
# entrypoint: true
decision := step.fail(errors.usage("connect needs connector, scopes and grant_agents (arrays of strings), an optional timeout_ms and an optional flow (loopback, paste or device)"), []) if {
	not _args_ok
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(concat("", [_c, " is not an OAuth provider; configure it instead"]), mcp.configure_fix(_c), {"connector": _c}),
	[],
) if {
	not catalog.oauth(_c)
} else := step.need(m) if {
	m := facts.missing(_f, _needs)
	count(m) > 0
} else := step.fail(agents.unusable(_f, "agents"), []) if {
	count(_agents) > 0
	agents.unusable(_f, "agents")
} else := step.fail(errors.unknown_agents(_unknown_agents), []) if {
	count(_unknown_agents) > 0
} else := step.fail(_no_client, []) if {
	not _client.found == true
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
	count(_prior_scopes) > 0
} else := step.fail(_device_refusal, []) if {
	_device
	not oauth.device_allows(_c, _authorize_scopes)
} else := step.fail(errors.insecure_transport(_endpoint_problem), []) if {
	_endpoint_problem
} else := d if {
	d := _authorize
} else := step.fail(_no_refresh, []) if {
	not _has_refresh
} else := step.need(m) if {
	m := facts.missing(_f, _userinfo_needs)
	count(m) > 0
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _locked_needs)
	count(m) > 0
} else := step.fail(errors.connect_superseded(_c, _winner.account), _discard) if {
	_superseded
} else := step.done(
	{
		"connector": _c, "account": _account, "scopes": _stored_scopes,
		"granted": {a: _agent_scopes(a) | some a in _agents},
		"not_granted": _not_granted,
		"warnings": _warnings,
	},
	_effects,
)

# No refresh token: say what makes this provider issue one. OpenID providers that list the
# offline_access scope want it asked for (the fix asks for it); Google wants
# access_type=offline with prompt=consent in the authorization request (its catalog entry
# sets both); when either was asked for, the provider's client settings are the cause.
_no_refresh_text := "the token endpoint issued no refresh token, so the connection could not outlive this access token; nothing was stored; "

_no_refresh := errors.provider_problem(
	_c,
	concat("", [_no_refresh_text, "ask for the offline_access scope, which ", _c, " offers"]),
	scopes.connect_cmd(_c, scopes.union(_authorize_scopes, ["offline_access"])),
) if {
	"offline_access" in object.get(catalog.connectors[_c], "available_scopes", [])
	not "offline_access" in _authorize_scopes
} else := errors.provider_problem(
	_c,
	concat("", [
		_no_refresh_text, "offline access was asked for (", _offline_asked,
		"), so check the OAuth client's settings at ", _c,
	]),
	"",
) if {
	_offline_asked
} else := errors.provider_problem(
	_c,
	concat("", [
		_no_refresh_text, "the catalog entry of ", _c, " must ask for offline access: the offline_access scope ",
		"(OpenID providers), or auth_params access_type=offline and prompt=consent (Google)",
	]),
	"",
)

_offline_asked := "the offline_access scope" if {
	"offline_access" in _authorize_scopes
} else := "access_type=offline and prompt=consent" if {
	object.get(catalog.connectors[_c], "auth_params", {}).access_type == "offline"
	object.get(catalog.connectors[_c], "auth_params", {}).prompt == "consent"
}

# ---------------------------------------------------------------------------------------
# the user's part: until the token endpoint answers with tokens

_device_cmd := concat("", [_again, " --device"])

_paste_cmd := concat("", [_again, " --no-browser"])

# The command that tries again the way the user chose: pasting the redirect back stays
# pasting (in a session without a browser, the loopback's command would be refused).
_again_this_way := _paste_cmd if _mode == "paste"

else := _again

# Another way to complete when this one cannot: the device flow where the provider offers
# it for these scopes, else pasting the redirect back (from the loopback only).
_other_way := _device_cmd if {
	oauth.device_allows(_c, _authorize_scopes)
} else := _paste_cmd if {
	_mode == "listen"
} else := ""

_authorize := d if {
	_device
	d := _device_step
}

_authorize := d if {
	not _device
	d := _browser_step
}

_browser_step := step.need([facts.loopback_mode("loopback", _c, _mode)]) if {
	not facts.has(_f, "loopback")
} else := step.fail(_no_loopback, []) if {
	not _listening
} else := step.need(m) if {
	m := facts.missing(_f, [facts.entropy("verifier", 32), facts.entropy("state", 32)])
	count(m) > 0
} else := step.need([_wait_need]) if {
	not facts.has(_f, "callback")
} else := step.fail(_nothing_came, []) if {
	_cb.status == "unavailable"
} else := step.fail(errors.authorization_timeout(_c, _timeout, _again_this_way), []) if {
	_cb.status != "callback"
} else := step.fail(errors.issuer_mismatch(_c, p, oauth.issuer_fix(_c, _client, _params, _catalog_file)), []) if {
	p := oauth.issuer_problem(_c, _client, _params)
} else := step.fail(errors.consent_denied(_c, "access_denied"), []) if {
	_params.error == "access_denied"
} else := step.fail(
	errors.provider_problem(
		_c,
		concat("", ["the authorization endpoint answered ", oauth.error_code(_params.error), "; nothing was stored"]),
		"",
	),
	[],
) if {
	is_string(_params.error)
} else := step.fail(errors.provider_problem(_c, "the authorization response carried no code", ""), []) if {
	not _has_code
} else := step.need([oauth.exchange_need("token", _c, _client, _code, _redirect, _verifier)]) if {
	not facts.has(_f, "token")
} else := step.fail(_token_error, []) if {
	not _r.ok == true
}

_wait_need := object.union(
	facts.loopback_wait("callback", _auth_url, _state, _timeout, _c),
	{"alternative": _other_way},
) if {
	_other_way != ""
} else := facts.loopback_wait("callback", _auth_url, _state, _timeout, _c)

# No listener (or nothing to paste into): nobody can complete this authorization here.
_no_loopback := errors.headless(
	_c,
	concat("", ["pasting the ", _c, " redirect back needs standard input, and this session has none"]),
	_other_way,
) if {
	_mode == "paste"
} else := errors.headless(_c, concat("", ["authorizing ", _c, " needs a browser and this session has none"]), _other_way)

_nothing_came := errors.headless(
	_c,
	concat("", ["no ", _c, " redirect URL was pasted before standard input ended; nothing was stored"]),
	_paste_again,
) if {
	_mode == "paste"
} else := _no_loopback

_paste_again := _device_cmd if {
	oauth.device_allows(_c, _authorize_scopes)
} else := _paste_cmd

# --- the device authorization grant (RFC 8628) -----------------------------------------

_device_refusal := errors.configuration(
	concat("", [
		_c, " offers no device authorization in the catalog; authorize in a browser ",
		"(on any machine, pasting the redirect back)",
	]),
	_paste_cmd,
	{"connector": _c},
) if {
	not oauth.device_allows(_c, [])
} else := errors.configuration(
	concat("", [
		"the ", _c, " device authorization does not allow ",
		concat(" ", oauth.device_refused(_c, _authorize_scopes)),
		"; authorize those scopes in a browser (on any machine, pasting the redirect back)",
	]),
	_paste_cmd,
	{"connector": _c, "scopes": oauth.device_refused(_c, _authorize_scopes)},
)

_dev := oauth.device_response(_f.device)

# The window: the device code's lifetime, at most the operation's timeout.
_window := min([_dev.expires_in * 1000, _timeout])

_deadline := _f["now@device"] + _window

_poll_key(i) := concat("", ["poll@", format_int(i, 10)])

_sleep_key(i) := concat("", ["sleep@", format_int(i, 10)])

_polls := count(_poll_facts)

# The polls so far (one pass over the facts each; a poll is judged whole only when last).
_poll_facts := [v | some k, v in _f; startswith(k, "poll@")]

_last := oauth.response(_f[_poll_key(_polls)])

# The clock when the last poll was sent (after its wait), or when the code was issued.
_clock := _f[_sleep_key(_polls)] if {
	_polls > 0
} else := _f["now@device"]

_slow_downs := count([v | some v in _poll_facts; v.json.error == "slow_down"])

_unanswered := count([v | some v in _poll_facts; v.status == 0])

# A slow_down that names a longer interval (GitHub does) is honoured too.
_hinted := max(array.concat([0], [h |
	some v in _poll_facts
	v.json.error == "slow_down"
	is_number(v.json.interval)
	h := v.json.interval * 1000
]))

_floor_ms := max([1000, ceil(_window / max_polls)])

# The wait before the next poll: the interval (at least _floor_ms), 5 s more per slow_down
# (or the longer interval one named), doubled per poll that got no answer in time.
_wait := max([_floor_ms, (_dev.interval * 1000) + (slow_down_ms * _slow_downs), _hinted]) * bits.lsh(1, _unanswered)

_next_wait := max([0, min([_wait, _deadline - _clock])])

_pending(a) if {
	a.kind == "oauth"
	a.error in {"authorization_pending", "slow_down"}
}

_pending(a) if {
	a.kind == "transport"
	a.error == "timeout"
	_unanswered < max_unanswered
}

_keep_polling if _polls == 0

_keep_polling if {
	_pending(_last)
	_clock < _deadline
	_polls < max_polls
}

_prompt_need := facts.prompt(
	"prompt", _c, _dev.verification_uri, _dev.verification_uri_complete, _dev.user_code,
	_window, _dev.interval * 1000,
)

_device_step := step.need([
	oauth.device_need("device", _c, _client, _authorize_scopes),
	facts.now("now@device"),
]) if {
	not facts.has(_f, "device")
} else := step.fail(_device_failure, []) if {
	not _dev.ok == true
} else := step.need([_prompt_need]) if {
	not facts.has(_f, "prompt")
} else := step.fail(errors.headless(_c, concat("", ["the ", _c, " device code could not be shown to anyone in this session"]), ""), []) if {
	not _f.prompt.shown == true
} else := step.need([
	facts.sleep(_sleep_key(_polls + 1), _next_wait),
	oauth.device_poll_need(_poll_key(_polls + 1), _c, _client, {"$ref": _dev.device_code["$ref"]}),
]) if {
	_keep_polling
} else := step.fail(errors.device_timeout(_c, _not_in_time, _device_cmd), []) if {
	_pending(_last)
} else := step.fail(errors.consent_denied(_c, _last.error), []) if {
	_last.error in {"access_denied", "authorization_declined"}
} else := step.fail(errors.device_timeout(_c, concat("", ["the ", _c, " device code expired before it was approved"]), _device_cmd), []) if {
	_last.error == "expired_token"
} else := step.fail(_token_error, []) if {
	not _r.ok == true
}

_not_in_time := concat("", ["the ", _c, " device code was not approved within ", errors.duration(_window)])

_device_failure := errors.configuration(
	concat("", ["the ", _c, " device authorization endpoint refused the OAuth client (invalid_client)"]),
	concat("", ["grantwire configure ", _c, " --client-id <id>"]),
	{"connector": _c},
) if {
	_dev.error == "invalid_client"
} else := errors.configuration(
	concat("", [
		"the ", _c, " OAuth client may not use the device authorization grant (", _dev.error,
		"); allow it for the client at the provider, or authorize in a browser",
	]),
	_paste_cmd,
	{"connector": _c, "oauth_error": _dev.error},
) if {
	_dev.error in {"unauthorized_client", "device_flow_disabled"}
} else := errors.configuration(
	concat("", ["the ", _c, " device authorization endpoint refused the scopes (invalid_scope); authorize them in a browser"]),
	_paste_cmd,
	{"connector": _c, "oauth_error": "invalid_scope"},
) if {
	_dev.error == "invalid_scope"
} else := errors.error(
	"PROVIDER_ERROR",
	concat("", [_c, ": the device authorization endpoint ", _device_text, "; nothing was stored"]),
	"",
	{"connector": _c, "http_status": _dev.status, "oauth_error": _dev.error},
)

_device_text := concat("", ["could not be reached (", _dev.detail, ")"]) if {
	_dev.kind == "transport"
} else := concat("", ["failed (status ", format_int(_dev.status, 10), " ", _dev.error, ")"]) if {
	_dev.kind == "oauth"
} else := "answered without JSON" if {
	_dev.kind == "not_json"
} else := "gave no usable device_code, user_code, verification_uri or expires_in" if {
	_dev.kind == "invalid"
} else := concat("", ["failed (status ", format_int(_dev.status, 10), ")"])
