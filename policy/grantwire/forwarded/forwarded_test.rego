package grantwire.forwarded_test

import data.grantwire.fixtures_test as fx
import data.grantwire.forwarded

_args := {
	"provider": "google", "client_id_hash": fx.hash_b, "has_client_secret": true,
	"scopes": ["openid", "gmail.modify", "gmail.send"], "account_email": "user@example.com",
	"grant_agents": ["builtin:mail", "builtin:chat"],
}

_mail := {"found": true, "connectors": {"google": ["gmail.send", "gmail.modify"]}}

_chat := {"found": true, "connectors": {"microsoft": ["openid"]}}

# Agents known, nothing granted yet.
_agents := {
	"agent|builtin:chat": _chat, "agent|builtin:mail": _mail,
	"grant|builtin:chat": fx.absent, "grant|builtin:mail": fx.absent,
}

# Under the lock: a previous client and connection exist.
_locked := fx.patch(_agents, {
	"lock": "held",
	"client@lock": fx.client(fx.hash_a),
	"conn@lock": fx.set(fx.conn(fx.hash_a), "account_type", "work"),
	"now@lock": 5000,
})

_decide(args, f) := d if {
	d := forwarded.decision with input as {"op": "import_forwarded", "args": args, "facts": f}
		with data.catalog as fx.catalog
}

_fail(err) := {"status": "done", "effects": [], "error": err}

test_usage if {
	usage := _fail({
		"code": "USAGE", "fix": "",
		"message": "usage: import_forwarded needs provider, client_id_hash, has_client_secret, scopes, account_email and grant_agents",
	})
	every args in [
		{},
		object.remove(_args, ["provider"]),
		fx.set(_args, "client_id_hash", "aaaa"),
		object.remove(_args, ["client_id_hash"]),
		fx.set(_args, "has_client_secret", "yes"),
		fx.set(_args, "scopes", "openid"),
		fx.set(_args, "scopes", ["openid", 1]),
		object.remove(_args, ["account_email"]),
		fx.set(_args, "grant_agents", "builtin:chat"),
		fx.set(_args, "grant_agents", [null]),
	] {
		_decide(args, {}) == usage
	}
}

test_unknown_connector if {
	_decide(fx.set(_args, "provider", "nope"), {}).error.code == "UNKNOWN_CONNECTOR"
}

test_only_oauth_connections_are_forwarded if {
	_decide(fx.set(_args, "provider", "mcp-remote"), {}) == _fail({
		"code": "CONFIGURATION", "connector": "mcp-remote", "fix": "",
		"message": "configuration error: mcp-remote is not an OAuth provider; only OAuth connections can be forwarded",
	})
}

test_reads_every_agent_and_its_grant_first if {
	_decide(_args, {}) == {"status": "need", "needs": [
		{"key": "agent|builtin:chat", "kind": "agent.get", "agent": "builtin:chat"},
		{"key": "agent|builtin:mail", "kind": "agent.get", "agent": "builtin:mail"},
		{"key": "grant|builtin:chat", "kind": "ledger.get", "ledger": "grants", "path": ["google", "builtin:chat"]},
		{"key": "grant|builtin:mail", "kind": "ledger.get", "ledger": "grants", "path": ["google", "builtin:mail"]},
	]}
}

test_unknown_agents_write_nothing if {
	_decide(fx.set(_args, "grant_agents", ["builtin:x", "builtin:mail", "builtin:a"]), fx.patch(_agents, {
		"agent|builtin:x": fx.absent, "agent|builtin:a": fx.absent,
		"grant|builtin:x": fx.absent, "grant|builtin:a": fx.absent,
	})) == _fail({
		"code": "UNKNOWN_AGENT", "agent_ids": ["builtin:a", "builtin:x"], "fix": "grantwire agents list",
		"message": "unknown agent(s): builtin:a, builtin:x; nothing was written; fix: grantwire agents list",
	})
}

test_required_is_the_union_of_declared_scopes if {
	other := {"found": true, "connectors": {"google": ["drive", "gmail.send"]}}
	r := forwarded.required with input as {"args": fx.set(_args, "grant_agents", ["builtin:mail", "builtin:other"]), "facts": fx.set(_agents, "agent|builtin:other", other)}
		with data.catalog as fx.catalog
	r == ["drive", "gmail.modify", "gmail.send"]
}

test_scope_mismatch_writes_nothing if {
	_decide(fx.set(_args, "scopes", ["openid", "gmail.modify"]), _locked) == _fail({
		"code": "SCOPE_MISMATCH", "connector": "google", "fix": "",
		"missing_scopes": ["gmail.send"], "required_scopes": ["gmail.modify", "gmail.send", "openid"],
		"message": "the forwarded google consent lacks gmail.send; a refresh can never widen scope, so nothing was written. Re-consent in the host application with all of: gmail.modify gmail.send openid",
	})
}

test_no_agents_require_nothing if {
	_decide(fx.patch(_args, {"scopes": [], "grant_agents": []}), {}) == {"status": "need", "needs": [
		{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 5000},
		{"key": "client@lock", "kind": "client.get", "provider": "google", "fresh": true, "after": "lock"},
		{"key": "conn@lock", "kind": "connection.get", "provider": "google", "after": "lock"},
		{"key": "now@lock", "kind": "clock.now", "after": "lock"},
	]}
	forwarded.lock_wait_ms == 5000
}

test_busy_lock_writes_nothing if {
	every v in ["busy", "timeout"] {
		_decide(_args, fx.set(_locked, "lock", v)) == _fail({
			"code": "BUSY", "connector": "google", "fix": "", "retry_after_ms": 500,
			"message": "another grantwire operation holds the google lock; nothing was changed, retry shortly",
		})
	}
}

test_locked_round_asks_only_for_what_is_missing if {
	_decide(_args, fx.set(_agents, "lock", "held")).needs == [
		{"key": "client@lock", "kind": "client.get", "provider": "google", "fresh": true, "after": "lock"},
		{"key": "conn@lock", "kind": "connection.get", "provider": "google", "after": "lock"},
		{"key": "now@lock", "kind": "clock.now", "after": "lock"},
	]
}

test_client_and_connection_are_one_transaction_then_grants if {
	_decide(_args, _locked) == {
		"status": "done",
		"result": {
			"provider": "google", "account_email": "user@example.com",
			"scopes": ["gmail.modify", "gmail.send", "openid"], "connected_at": 5000,
			"grant_agents": ["builtin:chat", "builtin:mail"], "forwarded": true,
		},
		"effects": [
			{
				"kind": "client.put", "provider": "google", "tx": true,
				"client_id": {"$ref": "arg#client_id"}, "client_secret": {"$ref": "arg#client_secret"},
				"client_id_hash": fx.hash_b, "tenant": null, "expect": {"version": "k1"},
			},
			{
				"kind": "connection.put", "provider": "google", "tx": true,
				"account": "user@example.com", "account_type": "work",
				"scopes": ["gmail.modify", "gmail.send", "openid"], "connected_at": 5000,
				"client_id_hash": fx.hash_b, "tenant": null,
				"refresh": {"$ref": "arg#refresh_token"}, "expect": {"version": "v1"},
			},
			{"kind": "token.delete", "provider": "google", "tx": true},
			# builtin:chat declares nothing for google: it is granted the forwarded scopes.
			{
				"kind": "ledger.put", "ledger": "grants", "path": ["google", "builtin:chat"],
				"value": ["gmail.modify", "gmail.send", "openid"], "expect": {"found": false},
			},
			{
				"kind": "event.emit", "type": "connector.grant.changed",
				"payload": {"connector_id": "google", "agent_id": "builtin:chat", "scopes": ["gmail.modify", "gmail.send", "openid"]},
			},
			# builtin:mail is granted what it declares.
			{
				"kind": "ledger.put", "ledger": "grants", "path": ["google", "builtin:mail"],
				"value": ["gmail.modify", "gmail.send"], "expect": {"found": false},
			},
			{
				"kind": "event.emit", "type": "connector.grant.changed",
				"payload": {"connector_id": "google", "agent_id": "builtin:mail", "scopes": ["gmail.modify", "gmail.send"]},
			},
			{
				"kind": "event.emit", "type": "connector.configured",
				"payload": {"connector_id": "google", "account_id": "user@example.com"},
			},
		],
	}
}

test_first_import_expects_empty_slots if {
	d := _decide(fx.patch(_args, {"has_client_secret": false, "grant_agents": []}), fx.patch(_locked, {
		"client@lock": fx.absent,
		"conn@lock": fx.absent,
	}))
	d.effects[0].expect == {"found": false}
	d.effects[0].client_secret == null
	d.effects[1].expect == {"found": false}
	d.effects[1].account_type == null
	[e.kind | some e in d.effects] == ["client.put", "connection.put", "token.delete", "event.emit"]
}

test_client_from_the_environment_is_not_in_the_store if {
	env := fx.patch(fx.client(fx.hash_a), {"source": "env", "version": "env:aaaa0001"})
	_decide(_args, fx.set(_locked, "client@lock", env)).effects[0].expect == {"found": false}
}

test_account_type_given_wins if {
	_decide(fx.set(_args, "account_type", "personal"), _locked).effects[1].account_type == "personal"
}

test_existing_grants_are_replaced_if_unchanged if {
	d := _decide(_args, fx.set(_locked, "grant|builtin:mail", fx.entry(["gmail.send"])))
	d.effects[5].expect == {"found": true, "value": ["gmail.send"]}
}
