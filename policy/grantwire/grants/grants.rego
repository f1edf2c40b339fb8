# METADATA
# title: Grants
# description: |
#   A grant says agent A may use connector C's credentials with scopes S; it holds no secret.
#   `grant` replaces the pair's scopes (stored sorted and without duplicates), `revoke`
#   removes the pair and its activation (idempotent), `list_grants` reads the ledger. Every
#   change emits connector.grant.changed, and every write names the entry it expects to
#   replace, so concurrent writers never lose an update.
package grantwire.grants

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.scopes
import data.grantwire.step

_f := object.get(input, "facts", {})

_c := input.args.connector

_a := input.args.agent

_pair_args if {
	is_string(_c)
	is_string(_a)
	count(_a) > 0
}

_scope_list if {
	is_array(input.args.scopes)
	every s in input.args.scopes {
		is_string(s)
	}
}

# METADATA
# title: expectation
# description: The precondition that a ledger entry is still what the fact said.
expect(fact) := {"found": true, "value": fact.value} if fact.found == true

else := {"found": false}

# METADATA
# title: grant changed event
# description: connector.grant.changed for a pair (empty scopes when revoked).
changed_event(c, a, list) := {
	"kind": "event.emit", "type": "connector.grant.changed",
	"payload": {"connector_id": c, "agent_id": a, "scopes": list},
}

# METADATA
# title: activation changed event
# description: connector.activation.changed for a pair.
activation_event(c, a, active) := {
	"kind": "event.emit", "type": "connector.activation.changed",
	"payload": {"connector_id": c, "agent_id": a, "active": active},
}

# METADATA
# title: put grant effect
# description: Write a grant if the entry is still as read.
put(c, a, list, fact) := {
	"kind": "ledger.put", "ledger": "grants", "path": [c, a],
	"value": list, "expect": expect(fact),
}

_pair_needs := [facts.ledger("grant", "grants", [_c, _a]), facts.ledger("active", "activations", [_c, _a])]

_new := scopes.sorted(input.args.scopes)

# METADATA
# title: grant decision
# description: Replace the scopes agent holds on connector; no change, no write, no event.
# entrypoint: true
grant := step.fail(errors.usage("grant needs connector, agent and scopes (array of strings)"), []) if {
	not _pair_args
} else := step.fail(errors.usage("grant needs connector, agent and scopes (array of strings)"), []) if {
	not _scope_list
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.need(m) if {
	m := facts.missing(_f, [facts.ledger("grant", "grants", [_c, _a])])
	count(m) > 0
} else := step.done(_grant_result(false), []) if {
	_f.grant.found == true
	_f.grant.value == _new
} else := step.done(_grant_result(true), [put(_c, _a, _new, _f.grant), changed_event(_c, _a, _new)])

_grant_result(changed) := {"connector": _c, "agent": _a, "scopes": _new, "changed": changed}

# METADATA
# title: revoke decision
# description: |
#   Remove the pair's grant and its activation (so a later grant never resurrects tool
#   visibility). Revoking nothing succeeds and changes nothing.
# entrypoint: true
revoke := step.fail(errors.usage("revoke needs connector and agent"), []) if {
	not _pair_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.need(m) if {
	m := facts.missing(_f, _pair_needs)
	count(m) > 0
} else := step.done(
	{"connector": _c, "agent": _a, "changed": count(_revoke_effects) > 0},
	_revoke_effects,
)

_revoke_effects := array.concat(_revoke_grant, _revoke_activation)

_revoke_grant := [
	{"kind": "ledger.delete", "ledger": "grants", "path": [_c, _a], "expect": expect(_f.grant)},
	changed_event(_c, _a, []),
] if {
	_f.grant.found == true
} else := []

_revoke_activation := [
	{"kind": "ledger.delete", "ledger": "activations", "path": [_c, _a], "expect": expect(_f.active)},
	activation_event(_c, _a, false),
] if {
	_f.active.found == true
} else := []

# METADATA
# title: list_grants decision
# description: The grants of one connector ({agent → scopes}), or of every connector when none is named.
# entrypoint: true
list := step.fail(errors.usage("list_grants takes an optional connector"), []) if {
	not _list_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	is_string(_c)
	not catalog.known(_c)
} else := step.need(m) if {
	m := facts.missing(_f, [_list_need])
	count(m) > 0
} else := step.done(_list_result, [])

# No connector (absent or null) lists every connector; anything but a string is refused.
_list_args if object.get(input.args, "connector", null) == null

_list_args if is_string(input.args.connector)

_list_need := facts.ledger("grants", "grants", [_c]) if is_string(_c)

else := facts.ledger("grants", "grants", [])

_list_value := facts.value(_f, "grants", {})

_list_result := {"connector": _c, "grants": _list_value} if is_string(_c)

else := {"grants": _list_value}
