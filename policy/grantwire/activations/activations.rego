# METADATA
# title: Activations
# description: |
#   An activation says agent A currently sees MCP connector C's tools. An MCP tool is visible
#   to an agent iff a grant exists for the pair AND the pair is active; absent means inactive.
#   Activations apply to MCP connectors only: activating an OAuth connector is a
#   configuration error before anything is read or written. One-click activation creates a
#   missing grant (explicit scopes > the agent's declared scopes > ["use"] for an agent that
#   consumes MCP servers > error) and never overwrites an existing grant. Deactivate keeps
#   the grant. Activating a local MCP server that lacks a required key is recorded, and the
#   result says what is missing and how to configure it.
package grantwire.activations

import data.grantwire.agents
import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
import data.grantwire.mcp
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store
import data.grantwire.tools

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
	_grant_fix,
	{"connector": _c, "type": catalog.type_of(_c)},
) if {
	not catalog.mcp(_c)
}

# An un-namespaced id (deactivate accepts what a GAIA home holds) can be given no new grant.
_grant_fix := scopes.grant_cmd(_c, _a, catalog.default_scopes(_c)) if scopes.valid_agent_id(_a)

else := ""

_needs := array.concat(
	array.concat(
		[
			grants.grant_need("grant", _c, _a),
			grants.active_need("active", _c, _a),
			facts.ledger("mcp", store.mcp_file, []),
		],
		_tool_needs,
	),
	agents.needs(_f, "agents"),
)

_agent := agents.registry(_f, "agents")[_a]

_declared := agents.declared(_agent, _c)

_consumes if _agent.consumes_mcp_servers == true

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
	_f.grant.exists == true
} else := array.concat(
	grants.write([grants.put_op(_c, _a, _auto_scopes, _f.grant)]),
	[grants.changed_event(_c, _a, _auto_scopes)],
)

# The first activation written into a new file gives it its version.
_version_op := [{"path": ["version"], "value": 1, "expect": {"exists": false}}] if {
	not _f.active.found == true
} else := []

_active_ops := [] if {
	_f.active.exists == true
	_f.active.value == true
} else := [{
	"path": grants.activation_path(_c, _a), "value": true,
	"expect": store.expect(_f.active),
}]

# A tool rule (args.tools) or its removal (args.all_tools), in the same write.
_names_given if "tools" in object.keys(input.args)

_all_given if "all_tools" in object.keys(input.args)

_tools_given if _names_given

_tools_given if _all_given

_tools_arg_ok if not _tools_given

_tools_arg_ok if {
	_names_given
	not _all_given
	tools.valid_names(input.args.tools)
}

_tools_arg_ok if {
	_all_given
	not _names_given
	input.args.all_tools == true
}

_new_rule := scopes.sorted(input.args.tools) if _names_given

_rule_ops := [] if {
	not _tools_given
} else := [] if {
	_names_given
	_f.rule.exists == true
	_f.rule.value == _new_rule
} else := [{
	"path": tools.rule_path(_c, _a), "value": _new_rule,
	"expect": store.expect(_f.rule),
}] if {
	_names_given
} else := [{
	"path": tools.rule_path(_c, _a), "delete": true, "prune": true,
	"expect": store.expect(_f.rule),
}] if {
	_f.rule.exists == true
} else := []

_file_ops := array.concat(_active_ops, _rule_ops)

_activate_effects := [] if {
	count(_file_ops) == 0
} else := array.concat(
	[store.write(store.activations_file, array.concat(_version_op, _file_ops))],
	[grants.activation_event(_c, _a, true) | count(_active_ops) > 0],
)

_tool_needs := [tools.rule_need("rule", _c, _a)] if _tools_given

else := []

_tool_result := {"tools": _new_rule} if {
	_names_given
} else := {"tools": null} if {
	_all_given
} else := {}

_grant_scopes := _f.grant.value if _f.grant.exists == true

else := _auto_scopes

# Required keys of a local MCP server that are not configured.
_missing_keys := mcp.missing_keys(_c, _f.mcp) if catalog.type_of(_c) == "mcp_server"

else := []

_warnings := [concat("", [
	_c, " still needs ", concat(", ", _missing_keys), " before it can start; configure it: ",
	mcp.configure_fix(_c),
]) |
	count(_missing_keys) > 0
]

# METADATA
# title: activate decision
# description: Make connector's tools visible to agent, creating a grant when none exists.
# entrypoint: true
activate := step.fail(_guard("activate"), []) if {
	_guard("activate")
} else := step.fail(errors.usage("activate takes tools (tool names of 1 to 128 letters, digits and _ - . /) or all_tools: true, not both"), []) if {
	not _tools_arg_ok
} else := step.need(m) if {
	m := facts.missing(_f, _needs)
	count(m) > 0
} else := step.fail(agents.unusable(_f, "agents"), []) if {
	not _f.grant.exists == true
	not _explicit
	agents.unusable(_f, "agents")
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
	not _f.grant.exists == true
	not _auto_source
} else := step.done(
	object.union(
		{
			"connector": _c, "agent": _a, "active": true,
			"auto_granted": _source != "existing",
			"grant_source": _source,
			"scopes": _grant_scopes,
			"changed": count(_effects) > 0,
			"missing_keys": _missing_keys,
			"warnings": _warnings,
		},
		_tool_result,
	),
	_effects,
)

_source := "existing" if _f.grant.exists == true

else := _auto_source

_effects := array.concat(_grant_effects, _activate_effects)

# METADATA
# title: deactivate decision
# description: Hide connector's tools from agent; the grant is kept. Idempotent.
# entrypoint: true
deactivate := step.fail(_guard("deactivate"), []) if {
	_guard("deactivate")
} else := step.need(m) if {
	m := facts.missing(_f, [grants.active_need("active", _c, _a)])
	count(m) > 0
} else := step.done({"connector": _c, "agent": _a, "active": false, "changed": false}, []) if {
	not _f.active.exists == true
} else := step.done({"connector": _c, "agent": _a, "active": false, "changed": true}, [
	store.write(store.activations_file, [{
		"path": grants.activation_path(_c, _a), "delete": true, "prune": true,
		"expect": store.expect(_f.active),
	}]),
	grants.activation_event(_c, _a, false),
])

# METADATA
# title: list_activations decision
# description: |
#   The activations of one connector ({agent → true}), or of every connector, and their tool
#   rules beside them (tools: {agent → tool names}, or {connector → {agent → tool names}}).
# entrypoint: true
list := step.fail(errors.usage("list_activations takes an optional connector"), []) if {
	not _list_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	is_string(_c)
	not catalog.known(_c)
} else := step.need(m) if {
	m := facts.missing(_f, [_list_need, _rules_need])
	count(m) > 0
} else := step.done(object.union(_list_result, {"tools": facts.value(_f, "rules", {})}), [])

# No connector (absent or null) lists every connector; anything but a string is refused.
_list_args if object.get(input.args, "connector", null) == null

_list_args if is_string(input.args.connector)

_list_need := facts.ledger("actives", store.activations_file, ["activations", _c]) if is_string(_c)

else := facts.ledger("actives", store.activations_file, ["activations"])

# The tool rules beside them ({connector: {agent: [tool names]}}, or {agent: names} for one).
_rules_need := facts.ledger("rules", store.activations_file, ["tools", _c]) if is_string(_c)

else := facts.ledger("rules", store.activations_file, ["tools"])

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
		facts.ledger("grants", store.grants_file, []),
		facts.ledger("actives", store.activations_file, ["activations"]),
		facts.ledger(store.remote_key, store.remote_file, []),
	])
	count(m) > 0
} else := step.done(
	{"agent": _a, "servers": sort([c |
		some c, agents_of in facts.value(_f, "grants", {})
		_ = agents_of[_a]
		catalog.mcp(c)
		facts.value(_f, "actives", {})[c][_a] == true
	])},
	[],
)

# METADATA
# title: activation_changes decision
# description: |
#   The connector.activation.changed events between an earlier view of the activations
#   (args.before, {connector: {agent: true}}) and a later one (args.after, or else the
#   ledger as it is now), for a watcher that noticed another process change the file; the
#   result is the view to keep for next time. Entries that are not true are inactive.
# entrypoint: true
changes := step.fail(errors.usage("activation_changes needs before ({connector: {agent: true}}) and an optional after"), []) if {
	not _before_object
} else := step.need(m) if {
	not _after_object
	m := facts.missing(_f, [facts.ledger("actives", store.activations_file, ["activations"])])
	count(m) > 0
} else := step.done({"activations": _now}, [grants.activation_event(c, a, v) |
	some [c, a, v] in _changed
])

_before_object if is_object(input.args.before)

_after_object if is_object(input.args.after)

_now := input.args.after if _after_object

else := facts.value(_f, "actives", {})

_pairs(m) := {[c, a] | some c, pairs in m; is_object(pairs); some a, v in pairs; v == true}

_changed := sort(array.concat(
	[[c, a, true] | some [c, a] in (_pairs(_now) - _pairs(input.args.before))],
	[[c, a, false] | some [c, a] in (_pairs(input.args.before) - _pairs(_now))],
))
