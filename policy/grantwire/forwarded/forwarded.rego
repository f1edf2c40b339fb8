# METADATA
# title: Forwarded connections
# description: |
#   `import_forwarded`: a host application that already holds a user's consent forwards a
#   client id and secret, a refresh token, the granted scopes, the account and the agents to
#   grant. The forwarded scopes must cover the union of the scopes every listed agent declares
#   for the connector (a refresh can never widen scope, so re-consent is the only fix), and
#   every agent must be known; otherwise nothing is written. The client configuration and the
#   connection are written as one transaction in one hold of the provider's lock, so no
#   process ever sees a new client next to an old connection; grants follow. Secrets reach
#   the shell only as references to the operation's arguments.
package grantwire.forwarded

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
import data.grantwire.scopes
import data.grantwire.step

_f := object.get(input, "facts", {})

_args := input.args

_p := _args.provider

# METADATA
# title: import lock wait
# description: How long an import waits for the provider's lock before BUSY.
lock_wait_ms := 5000

_valid_args if {
	is_string(_p)
	is_string(_args.client_id_hash)
	count(_args.client_id_hash) == 8
	is_boolean(_args.has_client_secret)
	is_array(_args.scopes)
	every s in _args.scopes {
		is_string(s)
	}
	is_string(_args.account_email)
	is_array(_args.grant_agents)
	every a in _args.grant_agents {
		is_string(a)
	}
}

_agents := scopes.sorted(_args.grant_agents)

_forwarded := scopes.sorted(_args.scopes)

_agent_key(a) := facts.key(["agent", a])

_grant_key(a) := facts.key(["grant", a])

_agent_needs := array.concat(
	[facts.agent(_agent_key(a), a) | some a in _agents],
	[facts.ledger(_grant_key(a), "grants", [_p, a]) | some a in _agents],
)

_unknown := [a | some a in _agents; not _f[_agent_key(a)].found == true]

_declared(a) := s if {
	s := _f[_agent_key(a)].connectors[_p]
	is_array(s)
} else := []

# METADATA
# title: required scopes
# description: The union of the scopes the listed agents declare for the connector.
required := scopes.sorted([s | some a in _agents; some s in _declared(a)])

_missing := scopes.missing(required, _forwarded)

# Each agent is granted what it declares, or the forwarded scopes when it declares nothing.
_agent_scopes(a) := scopes.sorted(_declared(a)) if count(_declared(a)) > 0

else := _forwarded

_locked_needs := [
	facts.lock("lock", _p, lock_wait_ms),
	facts.after(facts.client("client@lock", _p, true), "lock"),
	facts.after(facts.connection("conn@lock", _p), "lock"),
	facts.after(facts.now("now@lock"), "lock"),
]

_version_expect(fact) := {"version": fact.version} if fact.found == true

else := {"found": false}

_secret := facts.ref("arg", "client_secret") if _args.has_client_secret == true

else := null

_account_type := _args.account_type if is_string(_args.account_type)

else := t if {
	_f["conn@lock"].found == true
	t := _f["conn@lock"].account_type
	is_string(t)
} else := null

_tx := step.tx([
	{
		"kind": "client.put", "provider": _p,
		"client_id": facts.ref("arg", "client_id"), "client_secret": _secret,
		"client_id_hash": _args.client_id_hash, "tenant": null,
		"expect": facts.client_expect(_f["client@lock"]),
	},
	{
		"kind": "connection.put", "provider": _p, "account": _args.account_email,
		"account_type": _account_type,
		"scopes": _forwarded, "connected_at": _f["now@lock"],
		"client_id_hash": _args.client_id_hash, "tenant": null,
		"refresh": facts.ref("arg", "refresh_token"),
		"expect": _version_expect(_f["conn@lock"]),
	},
	{"kind": "token.delete", "provider": _p},
])

_grant_effects := [e |
	some a in _agents
	some e in [
		grants.put(_p, a, _agent_scopes(a), _f[_grant_key(a)]),
		grants.changed_event(_p, a, _agent_scopes(a)),
	]
]

# METADATA
# title: import_forwarded decision
# description: Check the scope union and the agents, then write client and connection under the lock.
# entrypoint: true
decision := step.fail(
	errors.usage("import_forwarded needs provider, client_id_hash, has_client_secret, scopes, account_email and grant_agents"),
	[],
) if {
	not _valid_args
} else := step.fail(errors.unknown_connector(_p), []) if {
	not catalog.known(_p)
} else := step.fail(
	errors.configuration(
		concat("", [_p, " is not an OAuth provider; only OAuth connections can be forwarded"]),
		"", {"connector": _p},
	),
	[],
) if {
	not catalog.oauth(_p)
} else := step.need(m) if {
	m := facts.missing(_f, _agent_needs)
	count(m) > 0
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
		"connected_at": _f["now@lock"], "grant_agents": _agents, "forwarded": true,
	},
	array.concat(array.concat(_tx, _grant_effects), [{
		"kind": "event.emit", "type": "connector.configured",
		"payload": {"connector_id": _p, "account_id": _args.account_email},
	}]),
)
