# METADATA
# title: Forwarded connections
# description: |
#   `import_forwarded`: a host application that already holds a user's consent forwards a
#   client id and secret and a refresh token (the operation's secret arguments), the granted
#   scopes, the account and the agents to grant. The forwarded scopes must cover the union
#   of the scopes every listed agent declares for the connector (a refresh can never widen
#   scope, so re-consent is the only fix), every agent must be known, and a provider whose
#   catalog entry requires a client secret must get one; otherwise nothing is written. The
#   client configuration and the connection are written as one transaction in one hold of
#   the provider's lock: if a write fails, the slots already written are put back before the
#   lock is released, so no process ever sees a new client next to an old connection. Grants
#   follow.
package grantwire.forwarded

import data.grantwire.agents
import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store

_f := object.get(input, "facts", {})

_args := input.args

_p := _args.provider

# METADATA
# title: import lock wait
# description: How long an import waits for the provider's lock before BUSY.
lock_wait_ms := 5000

_str_list(xs) if {
	is_array(xs)
	every s in xs {
		is_string(s)
	}
}

_valid_args if {
	is_string(_p)
	_str_list(_args.scopes)
	is_string(_args.account_email)
	_str_list(_args.grant_agents)
	_account_type_ok
}

_account_type_ok if not _args.account_type

_account_type_ok if is_string(_args.account_type)

_id := facts.arg(_f, "client_id")

_secret := facts.arg(_f, "client_secret")

_refresh := facts.arg(_f, "refresh_token")

_agents := scopes.sorted(_args.grant_agents)

_forwarded := scopes.sorted(_args.scopes)

_registry := agents.registry(_f, "agents")

_unknown := [a | some a in _agents; not _registry[a]]

_declared(a) := s if {
	s := agents.declared(_registry[a], _p)
} else := []

# METADATA
# title: required scopes
# description: The union of the scopes the listed agents declare for the connector.
required := scopes.sorted([s | some a in _agents; some s in _declared(a)])

_missing := scopes.missing(required, _forwarded)

# Each agent is granted what it declares, or the forwarded scopes when it declares nothing.
_agent_scopes(a) := scopes.sorted(_declared(a)) if count(_declared(a)) > 0

else := _forwarded

_grant_key(a) := facts.key(["grant", a])

_locked_needs := array.concat(
	[
		facts.lock("lock", _p, lock_wait_ms),
		facts.after(facts.keyring_secret("client@lock", store.client_user(_p)), "lock"),
		facts.after(facts.keyring("conn@lock", store.conn_user(_p), ["refresh_token"], true), "lock"),
		facts.after(facts.keyring_secret("token@lock", store.token_user(_p)), "lock"),
		facts.after(facts.now("now@lock"), "lock"),
		facts.after(facts.ledger("state@lock", store.state_file, [_p]), "lock"),
	],
	[facts.after(grants.grant_need(_grant_key(a), _p, a), "lock") | some a in _agents],
)

_hash := _id.crc32

_secret_value := {"$ref": _secret["$ref"]} if _secret

else := ""

_account_type := _args.account_type if is_string(_args.account_type)

else := t if {
	c := store.connection(_f["conn@lock"])
	c.valid == true
	t := c.account_type
	is_string(t)
} else := null

_now := _f["now@lock"]

_tx := [
	step.undo(
		{
			"kind": "keyring.set", "user": store.client_user(_p),
			"value": {"client_id": {"$ref": _id["$ref"]}, "client_secret": _secret_value},
			"expect": store.slot_expect(_f["client@lock"]),
		},
		store.restore("client@lock", store.client_user(_p), _f["client@lock"]),
	),
	step.undo(
		{
			"kind": "keyring.set", "user": store.conn_user(_p),
			"value": store.conn_blob(_args.account_email, _forwarded, _now, _hash, null, _account_type, {"$ref": _refresh["$ref"]}),
			"expect": store.slot_expect(_f["conn@lock"]),
		},
		store.restore("conn@lock", store.conn_user(_p), _f["conn@lock"]),
	),
	step.undo(store.drop_token(_p), store.restore("token@lock", store.token_user(_p), _f["token@lock"])),
]

_mirror := [store.write(store.state_file, [{"path": [_p], "value": store.state_entry(_args.account_email, _forwarded, _now, _hash, null)}])] if {
	not store.problem(_f["state@lock"])
} else := []

_grant_effects := array.concat(
	grants.write([grants.put_op(_p, a, _agent_scopes(a), _f[_grant_key(a)]) | some a in _agents]),
	[grants.changed_event(_p, a, _agent_scopes(a)) | some a in _agents],
)

_warnings := [concat("", [
	_f["state@lock"].file, " is unreadable, so it was not updated (it only mirrors connections for listings): ",
	errors.move_aside(_f["state@lock"].file),
]) |
	store.problem(_f["state@lock"])
]

# METADATA
# title: import_forwarded decision
# description: Check the secrets, the agents and the scope union, then write client and connection under the lock.
# entrypoint: true
decision := step.fail(
	errors.usage("import_forwarded needs provider, scopes, account_email, grant_agents (and optional account_type), with client_id and refresh_token as secret arguments"),
	[],
) if {
	not _valid_args
} else := step.fail(errors.unknown_connector(_p), []) if {
	not catalog.known(_p)
} else := step.fail(
	errors.configuration(concat("", [_p, " is not an OAuth provider; only OAuth connections can be forwarded"]), "", {"connector": _p}),
	[],
) if {
	not catalog.oauth(_p)
} else := step.fail(errors.usage("the forwarded connection needs client_id (the host application's OAuth client id)"), []) if {
	not _id
} else := step.fail(errors.usage("the forwarded connection needs refresh_token"), []) if {
	not _refresh
} else := step.fail(errors.usage("the forwarded connection needs the scopes its consent granted (scopes)"), []) if {
	count(_forwarded) == 0
} else := step.fail(
	errors.configuration(
		concat("", [_p, " requires a client secret, and none was forwarded"]),
		concat("", ["grantwire import ", _p, " --from-stdin"]),
		{"connector": _p, "missing": "client_secret"},
	),
	[],
) if {
	catalog.connectors[_p].client_secret_required == true
	not _secret
} else := step.need(m) if {
	m := agents.needs(_f, "agents")
	count(m) > 0
} else := step.fail(agents.unusable(_f, "agents"), []) if {
	count(_agents) > 0
	agents.unusable(_f, "agents")
} else := step.fail(errors.unknown_agents(_unknown), []) if {
	count(_unknown) > 0
} else := step.fail(errors.scope_mismatch(_p, _missing, scopes.union(required, _forwarded)), []) if {
	count(_missing) > 0
} else := step.fail(errors.busy(_p), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _locked_needs)
	count(m) > 0
} else := step.done(
	{
		"provider": _p, "account_email": _args.account_email, "scopes": _forwarded,
		"connected_at": _now, "grant_agents": _agents, "forwarded": true,
		"warnings": _warnings,
	},
	array.concat(
		array.concat(_tx, _mirror),
		array.concat(_grant_effects, [{
			"kind": "event.emit", "type": "connector.configured",
			"payload": {"connector_id": _p, "account_id": _args.account_email},
		}]),
	),
)
