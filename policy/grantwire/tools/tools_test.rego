package grantwire.tools_test

import data.grantwire.fixtures_test as fx
import data.grantwire.tools

_pair := {"connector": "mcp-github", "agent": "builtin:coder"}

_rule_path := ["tools", "mcp-github", "builtin:coder"]

_facts(rule) := {
	"grant": fx.entry(fx.grants_file, ["mcp-github", "builtin:coder"], ["use"]),
	"active": fx.entry(fx.activations_file, ["activations", "mcp-github", "builtin:coder"], true),
	"rule": rule,
}

_listed(names) := _facts(fx.entry(fx.activations_file, _rule_path, names))

_none := _facts(fx.no_entry(fx.activations_file, _rule_path))

_tool(args, f) := fx.decide(fx.q1("mcp_tool", object.union(_pair, args), f))

test_mcp_tool_asks_for_grant_activation_and_rule if {
	_tool({"tool": "read"}, {}) == fx.need([
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["mcp-github", "builtin:coder"]},
		{"key": "active", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "mcp-github", "builtin:coder"]},
		{"key": "rule", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": _rule_path},
	])
}

test_mcp_tool_usage if {
	msg := "mcp_tool needs connector, agent and either tool (a name) or tools (names)"
	every args in [
		{"connector": "mcp-github", "agent": "builtin:coder"},
		{"connector": "mcp-github", "agent": "builtin:coder", "tool": 1},
		{"connector": "mcp-github", "agent": "builtin:coder", "tools": "a"},
		{"connector": "mcp-github", "agent": "builtin:coder", "tools": [1]},
		{"connector": "mcp-github", "agent": "builtin:coder", "tool": "a", "tools": ["a"]},
		{"agent": "builtin:coder", "tool": "a"},
	] {
		fx.decide(fx.q1("mcp_tool", args, {})) == fx.failed(fx.usage(msg), [])
	}
	fx.decide(fx.q1("mcp_tool", {"connector": "nope", "agent": "builtin:coder", "tool": "a"}, _none)).error.code == "UNKNOWN_CONNECTOR"
	fx.decide(fx.q1("mcp_tool", {"connector": "google", "agent": "builtin:coder", "tool": "a"}, _none)).error.code == "CONFIGURATION"
}

test_no_rule_allows_every_tool if {
	_tool({"tool": "push"}, _none) == fx.done(
		{"connector": "mcp-github", "agent": "builtin:coder", "rule": "all", "tool": "push", "allowed": true},
		[],
	)
	_tool({"tools": ["b", "a"]}, _none) == fx.done(
		{"connector": "mcp-github", "agent": "builtin:coder", "rule": "all", "allowed": ["b", "a"], "refused": []},
		[],
	)
}

test_a_rule_allows_the_listed_tools_only if {
	_tool({"tool": "read"}, _listed(["list", "read"])).result.allowed == true
	_tool({"tool": "push"}, _listed(["list", "read"])) == fx.failed(
		fx.err(
			"TOOL_NOT_ALLOWED",
			"agent builtin:coder may not use tool push of mcp-github (its tool rule allows list, read)",
			"grantwire activations activate mcp-github builtin:coder --tools list,push,read",
			{"connector": "mcp-github", "agent": "builtin:coder", "tool": "push", "allowed_tools": ["list", "read"]},
		),
		[],
	)

	# the filter keeps the server's order
	_tool({"tools": ["read", "push", "list"]}, _listed(["list", "read"])) == fx.done(
		{"connector": "mcp-github", "agent": "builtin:coder", "rule": "listed", "allowed": ["read", "list"], "refused": ["push"]},
		[],
	)

	# an empty rule allows nothing
	_tool({"tool": "read"}, _listed([])).error.summary == "agent builtin:coder may not use tool read of mcp-github (its tool rule allows no tool)"
}

test_a_name_no_rule_can_hold_is_fixed_by_all_tools if {
	_tool({"tool": "a b"}, _listed(["read"])).error.fix == "grantwire activations activate mcp-github builtin:coder --all-tools"
}

test_an_agent_without_access_gets_the_gates_refusal if {
	no_grant := fx.patch(_none, {"grant": fx.no_entry(fx.grants_file, ["mcp-github", "builtin:coder"])})
	_tool({"tool": "read"}, no_grant).error.code == "AGENT_NOT_GRANTED"
	inactive := fx.patch(_none, {"active": fx.no_entry(fx.activations_file, ["activations", "mcp-github", "builtin:coder"])})
	_tool({"tools": ["read"]}, inactive).error.code == "AGENT_NOT_ACTIVE"
	_tool({"tools": ["read"]}, inactive).error.fix == "grantwire activations activate mcp-github builtin:coder"
}

test_valid_names if {
	every n in ["a", "get_file", "repo.read", "ns/tool-1"] {
		tools.valid_name(n)
	}
	not tools.valid_name(concat("", ["a" | some _ in numbers.range(1, 129)]))
	tools.valid_name("get_file-1.2/x")
	not tools.valid_name("")
	not tools.valid_name("a b")
	not tools.valid_name("a,b")
	not tools.valid_name("it's")
	not tools.valid_name(1)
	tools.allow_cmd("mcp-github", "it's", ["a", "b"]) == `grantwire activations activate mcp-github 'it'\''s' --tools a,b`
	tools.allow_cmd("mcp-github", "builtin:x", []) == `grantwire activations activate mcp-github builtin:x --tools ''`
}
