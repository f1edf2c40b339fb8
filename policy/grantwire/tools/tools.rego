# METADATA
# title: Tools per agent
# description: |
#   Which of an MCP server's tools an agent may use. An activation makes a server's tools
#   visible to an agent; a tool rule (connectors/activations.json `tools.<connector>.<agent>`,
#   a list of tool names, set by `grantwire activations activate <c> <a> --tools a,b`)
#   narrows them to the names listed. No rule means every tool of the server. `mcp_tool`
#   is the decision the relays of `grantwire mcp run` and `grantwire mcp proxy` ask: with
#   `tool`, may the agent call that tool now (allowed, or TOOL_NOT_ALLOWED with the command
#   that allows it); with `tools`, the names of a server's tools/list the agent may see, in
#   the order given. Either form first needs the pair granted and active (the launch gate's
#   refusals).
package grantwire.tools

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.launch
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store

_f := object.get(input, "facts", {})

_c := input.args.connector

_a := input.args.agent

# METADATA
# title: tool rule path
# description: The path of a pair's tool rule in connectors/activations.json.
rule_path(c, a) := ["tools", c, a]

# METADATA
# title: tool rule need
# description: The need that reads a pair's tool rule.
rule_need(k, c, a) := facts.ledger(k, store.activations_file, rule_path(c, a))

# METADATA
# title: valid tool name
# description: |
#   A tool name a rule may hold: 1 to 128 letters, digits and _ - . / (the MCP
#   specification's tool names), so that a rule is always a word a shell need not quote.
valid_name(n) if {
	is_string(n)
	regex.match(`^[A-Za-z0-9_./-]{1,128}$`, n)
}

# METADATA
# title: valid tool names
# description: An array of valid tool names (possibly empty, a rule that allows no tool).
valid_names(xs) if {
	is_array(xs)
	every n in xs {
		valid_name(n)
	}
}

# METADATA
# title: allow command
# description: The command that sets a pair's rule to exactly the given tool names.
allow_cmd(c, a, names) := concat("", [
	"grantwire activations activate ", c, " ", scopes.quote(a), " --tools ",
	scopes.quote(concat(",", names)),
])

# METADATA
# title: tool not allowed
# description: |
#   Agent a may not call tool t of MCP server c: its tool rule lists other tools. The fix
#   adds t to the rule (or, for a name no rule can hold, allows every tool).
not_allowed(c, a, t, allowed) := errors.tool_not_allowed(c, a, t, allowed, _allow_fix(c, a, t, allowed))

_allow_fix(c, a, t, allowed) := allow_cmd(c, a, scopes.union(allowed, [t])) if {
	valid_name(t)
} else := concat("", ["grantwire activations activate ", c, " ", scopes.quote(a), " --all-tools"])

_check_form if is_string(input.args.tool)

_filter_form if {
	is_array(input.args.tools)
	every n in input.args.tools {
		is_string(n)
	}
}

_args_ok if {
	is_string(_c)
	is_string(_a)
	_check_form
	not "tools" in object.keys(input.args)
}

_args_ok if {
	is_string(_c)
	is_string(_a)
	_filter_form
	not "tool" in object.keys(input.args)
}

# The remote servers a person added (mcp_remote.json) first: they are MCP servers too.
_needs := array.concat(
	array.concat([facts.ledger(store.remote_key, store.remote_file, [])], launch.gate_needs(_c, _a)),
	[rule_need("rule", _c, _a)],
)

_listed if _f.rule.exists == true

_rule := _f.rule.value if _listed

_allowed(_) if not _listed

_allowed(t) if t in _rule

_kind := "listed" if _listed

else := "all"

_about := {"connector": _c, "agent": _a, "rule": _kind}

_filter_result := object.union(_about, {
	"allowed": [t | some t in input.args.tools; _allowed(t)],
	"refused": [t | some t in input.args.tools; not _allowed(t)],
})

_not_mcp := errors.configuration(
	concat("", [_c, " is not an MCP server (type ", catalog.type_of(_c), "); tool rules apply to MCP servers"]),
	"grantwire mcp list",
	{"connector": _c, "type": catalog.type_of(_c)},
)

# METADATA
# title: mcp_tool decision
# description: |
#   May agent use MCP server connector's tool (args.tool), or which of the tools a server
#   listed may it see (args.tools, answered in the order given)? The pair's grant,
#   activation and tool rule are read; a pair not granted or not active is refused as the
#   launch gate refuses it. The check form's result is {connector, agent, rule, tool,
#   allowed: true}, or TOOL_NOT_ALLOWED naming the command that allows the tool; the filter
#   form's is {connector, agent, rule ("all" or "listed"), allowed, refused}.
# entrypoint: true
decision := step.fail(errors.usage("mcp_tool needs connector, agent and either tool (a name) or tools (names)"), []) if {
	not _args_ok
} else := step.need(m) if {
	m := facts.missing(_f, _needs)
	count(m) > 0
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(_not_mcp, []) if {
	not catalog.mcp(_c)
} else := step.fail(e, []) if {
	e := launch.refusal(_f, _c, _a)
} else := step.done(_filter_result, []) if {
	_filter_form
} else := step.done(object.union(_about, {"tool": input.args.tool, "allowed": true}), []) if {
	_allowed(input.args.tool)
} else := step.fail(not_allowed(_c, _a, input.args.tool, _rule), [])
