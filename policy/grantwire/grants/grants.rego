# METADATA
# title: Grants
# description: |
#   A grant says agent A may use connector C's credentials with scopes S; it holds no secret.
#   `grant` replaces the pair's scopes (stored sorted and without duplicates), `revoke`
#   removes the pair and its activation (idempotent), `list_grants` reads the ledger. Every
#   change emits connector.grant.changed, and every write names the entry it expects to
#   replace, so concurrent writers never lose an update. A grant of a scope the catalog does
#   not list for the connector, or to an agent no registry knows, is made but warned about.
package grantwire.grants

import data.grantwire.agents
import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store

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
# title: put grant op
# description: The ledger op that writes a grant if the entry is still as the fact read it.
put_op(c, a, list, fact) := {"path": [c, a], "value": list, "expect": store.expect(fact)}

# METADATA
# title: grants write
# description: One write of the grants ledger with the given ops (none when the list is empty).
write(ops) := [store.write(store.grants_file, ops)] if count(ops) > 0

else := []

# METADATA
# title: activation path
# description: The path of a pair in the activations ledger.
activation_path(c, a) := ["activations", c, a]

# METADATA
# title: grant entry need
# description: The need that reads a pair's grant.
grant_need(k, c, a) := facts.ledger(k, store.grants_file, [c, a])

# METADATA
# title: activation entry need
# description: The need that reads a pair's activation.
active_need(k, c, a) := facts.ledger(k, store.activations_file, activation_path(c, a))

_new := scopes.sorted(input.args.scopes)

# Scopes a catalog that lists available scopes does not offer.
_unlisted := [s | some s in _new; not s in object.get(catalog.connectors[_c], "available_scopes", _new)]

_warnings := array.concat(
	[concat("", [
		"the catalog does not list ", concat(" ", _unlisted), " for ", _c,
		"; a scope is an exact, case-sensitive string (grantwire catalog ", _c, ")",
	]) |
		count(_unlisted) > 0
	],
	[concat("", [
		"no agent registry knows ", scopes.quote(_a),
		"; check the id (grantwire agents list)",
	]) |
		not _known_agent
	],
)

_known_agent if _ = agents.registry(_f, "agents")[_a]

# An unusable agents.json does not block a grant; the warning says the agent is unknown.
_registry_needs := agents.needs(_f, "agents")

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
	m := array.concat(facts.missing(_f, [grant_need("grant", _c, _a)]), _registry_needs)
	count(m) > 0
} else := step.done(_grant_result(false), []) if {
	_f.grant.exists == true
	_f.grant.value == _new
} else := step.done(_grant_result(true), array.concat(
	write([put_op(_c, _a, _new, _f.grant)]),
	[changed_event(_c, _a, _new)],
))

_grant_result(changed) := {"connector": _c, "agent": _a, "scopes": _new, "changed": changed, "warnings": _warnings}

# METADATA
# title: revoke decision
# description: |
#   Remove the pair's grant and its activation (so a later grant never resurrects tool
#   visibility). Revoking nothing succeeds and changes nothing. Revoking access is always
#   possible: a ledger that cannot be read is left as it is and named in a warning with
#   the command that moves it aside, and the other is still cleaned (an unreadable grants
#   ledger already refuses every agent, see decide).
# entrypoint: true
revoke := step.fail(errors.usage("revoke needs connector and agent"), []) if {
	not _pair_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.need(m) if {
	m := facts.missing(_f, [grant_need("grant", _c, _a), active_need("active", _c, _a)])
	count(m) > 0
} else := step.done(
	{
		"connector": _c, "agent": _a, "changed": count(_revoke_effects) > 0,
		"summary": _revoke_summary, "warnings": _revoke_warnings,
	},
	_revoke_effects,
)

# What revoke did, in words the CLI prints: it never says "held no grant" about a ledger it
# could not read.
_revoke_summary := concat("", ["could not read ", _f.grant.file, ", so ", _a, "'s grant on ", _c, " was not revoked (see the warning)"]) if {
	store.problem(_f.grant)
} else := concat("", ["Revoked ", _a, "'s grant on ", _c, "."]) if {
	count(_revoke_grant) > 0
} else := concat("", ["Revoked ", _a, "'s activation on ", _c, " (it held no grant)."]) if {
	count(_revoke_activation) > 0
} else := concat("", [_a, " held no grant on ", _c, "; nothing to revoke."])

_revoke_effects := array.concat(_revoke_grant, _revoke_activation)

_usable(k) if not store.problem(_f[k])

_revoke_grant := [
	store.write(store.grants_file, [{"path": [_c, _a], "delete": true, "prune": true, "expect": store.expect(_f.grant)}]),
	changed_event(_c, _a, []),
] if {
	_usable("grant")
	_f.grant.exists == true
} else := []

_revoke_activation := [
	store.write(store.activations_file, [{
		"path": activation_path(_c, _a), "delete": true, "prune": true,
		"expect": store.expect(_f.active),
	}]),
	activation_event(_c, _a, false),
] if {
	_usable("active")
	_f.active.exists == true
} else := []

_unusable_text := {
	"grant": "no agent gets any credential while it is unreadable",
	"active": "everything else was removed",
}

_revoke_warnings := [concat("", [
	"could not clean ", _f[k].file, " (", store.problem(_f[k]), "); ", _unusable_text[k],
	"; move it aside: ", errors.move_aside(_f[k].file),
]) |
	some k in ["grant", "active"]
	store.problem(_f[k])
]

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

_list_need := facts.ledger("grants", store.grants_file, [_c]) if is_string(_c)

else := facts.ledger("grants", store.grants_file, [])

_list_value := facts.value(_f, "grants", {})

_list_result := {"connector": _c, "grants": _list_value} if is_string(_c)

else := {"grants": _list_value}

# METADATA
# title: grant_changes decision
# description: |
#   The connector.grant.changed events between an earlier view of the grants (args.before,
#   the grants ledger {connector: {agent: [scopes]}}) and a later one (args.after, or else
#   the ledger as it is now), for a watcher that noticed another process change the file;
#   the result is the view to keep for next time. One event per pair whose scopes changed,
#   with the scopes it holds now ([] when revoked). Entries that are not lists of strings
#   are no grant.
# entrypoint: true
changes := step.fail(errors.usage("grant_changes needs before ({connector: {agent: [scopes]}}) and an optional after"), []) if {
	not _before_object
} else := step.need(m) if {
	not _after_object
	m := facts.missing(_f, [facts.ledger("grants", store.grants_file, [])])
	count(m) > 0
} else := step.done({"grants": _now}, [changed_event(c, a, s) |
	some [c, a, s] in _changed
])

_before_object if is_object(input.args.before)

_after_object if is_object(input.args.after)

_now := input.args.after if _after_object

else := facts.value(_f, "grants", {})

# A grant entry: a list of scope strings.
_held(m, c, a) := s if {
	is_object(m[c])
	s := m[c][a]
	is_array(s)
	every x in s {
		is_string(x)
	}
}

_grant_pairs(m) := {[c, a] | some c, agents in m; is_object(agents); some a, _ in agents; _held(m, c, a)}

_same(c, a) if _held(input.args.before, c, a) == _held(_now, c, a)

_changed := sort(array.concat(
	[[c, a, _held(_now, c, a)] | some [c, a] in _grant_pairs(_now); not _same(c, a)],
	[[c, a, []] | some [c, a] in (_grant_pairs(input.args.before) - _grant_pairs(_now))],
))
