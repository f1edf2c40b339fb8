# METADATA
# title: Activations
# description: |
#   An activation says agent A currently sees MCP connector C's tools. An MCP tool is visible
#   to an agent iff a grant exists for the pair AND the pair is active; absent means inactive.
#   Activations apply to MCP connectors only: activating an OAuth connector is a
#   configuration error before anything is read or written. One-click activation creates a
#   missing grant (explicit scopes > the agent's declared scopes > ["use"] for an agent that
#   consumes MCP servers > error) and never overwrites an existing grant. Deactivate keeps
#   the grant.
package grantwire.activations

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
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

# Explicit scopes: an array of strings, or absent/null.
_explicit := input.args.scopes if {
	is_array(input.args.scopes)
	every s in input.args.scopes {
		is_string(s)
	}
}

_scopes_arg_ok if object.get(input.args, "scopes", null) == null

_scopes_arg_ok if _explicit

_guard(op) := errors.usage(concat("", [op, " needs connector and agent (and optional scopes)"])) if {
	not _pair_args
} else := errors.usage(concat("", [op, " needs connector and agent (and optional scopes)"])) if {
	not _scopes_arg_ok
} else := errors.unknown_connector(_c) if {
	not catalog.known(_c)
} else := errors.configuration(
	concat("", [
		"activations apply to MCP connectors only; ", _c, " is type ",
		catalog.type_of(_c), " (per-agent access to it is a grant)",
	]),
	concat("", ["grantwire grants grant ", _c, " ", scopes.quote(_a), " --scopes <scopes>"]),
	{"connector": _c, "type": catalog.type_of(_c)},
) if {
	not catalog.mcp(_c)
}

_needs := [
	facts.ledger("grant", "grants", [_c, _a]),
	facts.ledger("active", "activations", [_c, _a]),
	facts.agent("agent", _a),
]

_declared := s if {
	_f.agent.found == true
	s := _f.agent.connectors[_c]
	is_array(s)
}

_consumes if {
	_f.agent.found == true
	_f.agent.consumes_mcp_servers == true
}

# The scopes of an automatic grant, by precedence.
_auto_scopes := scopes.sorted(_explicit) if {
	_explicit
} else := scopes.sorted(_declared) if {
	_declared
} else := ["use"] if {
	_consumes
}

_auto_source := "explicit" if {
	_explicit
} else := "declared" if {
	_declared
} else := "consumes_mcp_servers" if {
	_consumes
}

_grant_effects := [] if {
	_f.grant.found == true
} else := [
	grants.put(_c, _a, _auto_scopes, _f.grant),
	grants.changed_event(_c, _a, _auto_scopes),
]

_activate_effects := [] if {
	_f.active.found == true
	_f.active.value == true
} else := [
	{"kind": "ledger.put", "ledger": "activations", "path": [_c, _a], "value": true, "expect": grants.expect(_f.active)},
	grants.activation_event(_c, _a, true),
]

_grant_scopes := _f.grant.value if _f.grant.found == true

else := _auto_scopes

# METADATA
# title: activate decision
# description: Make connector's tools visible to agent, creating a grant when none exists.
# entrypoint: true
activate := step.fail(_guard("activate"), []) if {
	_guard("activate")
} else := step.need(m) if {
	m := facts.missing(_f, _needs)
	count(m) > 0
} else := step.fail(
	errors.configuration(
		concat("", [
			"agent ", scopes.quote(_a), " holds no grant for ", _c,
			", declares no scopes for it and does not consume MCP servers; pass the scopes to grant",
		]),
		concat("", ["grantwire activations activate ", _c, " ", scopes.quote(_a), " --scopes use"]),
		{"connector": _c, "agent": _a},
	),
	[],
) if {
	not _f.grant.found == true
	not _auto_source
} else := step.done(
	{
		"connector": _c, "agent": _a, "active": true,
		"auto_granted": _f.grant.found != true,
		"grant_source": _source,
		"scopes": _grant_scopes,
		"changed": count(_effects) > 0,
	},
	_effects,
)

_source := "existing" if _f.grant.found == true

else := _auto_source

_effects := array.concat(_grant_effects, _activate_effects)

# METADATA
# title: deactivate decision
# description: Hide connector's tools from agent; the grant is kept. Idempotent.
# entrypoint: true
deactivate := step.fail(_guard("deactivate"), []) if {
	_guard("deactivate")
} else := step.need(m) if {
	m := facts.missing(_f, [facts.ledger("active", "activations", [_c, _a])])
	count(m) > 0
} else := step.done({"connector": _c, "agent": _a, "active": false, "changed": false}, []) if {
	not _f.active.found == true
} else := step.done({"connector": _c, "agent": _a, "active": false, "changed": true}, [
	{"kind": "ledger.delete", "ledger": "activations", "path": [_c, _a], "expect": grants.expect(_f.active)},
	grants.activation_event(_c, _a, false),
])

# METADATA
# title: list_activations decision
# description: The activations of one connector ({agent → true}), or of every connector.
# entrypoint: true
list := step.fail(errors.usage("list_activations takes an optional connector"), []) if {
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

_list_need := facts.ledger("actives", "activations", [_c]) if is_string(_c)

else := facts.ledger("actives", "activations", [])

_list_value := facts.value(_f, "actives", {})

_list_result := {"connector": _c, "activations": _list_value} if is_string(_c)

else := {"activations": _list_value}

# A rule, so that a missing agent is refused too (a negated call on an undefined argument
# is false, not true).
_agent_arg if is_string(_a)

# METADATA
# title: visible_servers decision
# description: The MCP connectors whose tools agent sees (granted AND active), sorted.
# entrypoint: true
visible := step.fail(errors.usage("visible_servers needs agent"), []) if {
	not _agent_arg
} else := step.need(m) if {
	m := facts.missing(_f, [
		facts.ledger("agent_grants", "grants", ["*", _a]),
		facts.ledger("agent_actives", "activations", ["*", _a]),
	])
	count(m) > 0
} else := step.done(
	{"agent": _a, "servers": sort([c |
		some c, _ in facts.value(_f, "agent_grants", {})
		catalog.mcp(c)
		facts.value(_f, "agent_actives", {})[c] == true
	])},
	[],
)
