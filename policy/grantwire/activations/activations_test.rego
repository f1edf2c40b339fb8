package grantwire.activations_test

import data.grantwire.fixtures_test as fx

_pair(a) := {"connector": "mcp-github", "agent": a}

_act(args, f) := fx.decide(fx.q1("activate", args, f))

_deact(args, f) := fx.decide(fx.q1("deactivate", args, f))

_mcp_doc(servers) := fx.entry(fx.mcp_file, [], {"mcpServers": servers})

_configured := _mcp_doc({"mcp-github": {"command": "npx", "env": {"GITHUB_TOKEN": {"$keyring": "grantwire.connections:mcp-github:GITHUB_TOKEN"}}}})

# The facts of activate for agent a: no grant, no activation, a configured server.
_facts(a) := {
	"grant": fx.no_entry(fx.grants_file, ["mcp-github", a]),
	"active": fx.no_entry(fx.activations_file, ["activations", "mcp-github", a]),
	"mcp": _configured,
	"agents": fx.no_agents,
}

_event(a, active) := {"kind": "event.emit", "type": "connector.activation.changed", "payload": {"connector_id": "mcp-github", "agent_id": a, "active": active}}

_activation_write(ops) := {"kind": "ledger.write", "ledger": "connectors/activations.json", "ops": ops}

_set_active(a, expect) := {"path": ["activations", "mcp-github", a], "value": true, "expect": expect}

_grant_write(a, list) := {"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [{"path": ["mcp-github", a], "value": list, "expect": {"exists": false}}]}

_grant_event(a, list) := {"kind": "event.emit", "type": "connector.grant.changed", "payload": {"connector_id": "mcp-github", "agent_id": a, "scopes": list}}

# ---------------------------------------------------------------------------------------
# guards

test_guards if {
	every args in [
		{"connector": "mcp-github"}, {"agent": "builtin:chat"}, {"connector": "mcp-github", "agent": ""},
		{"connector": "mcp-github", "agent": "builtin:chat", "scopes": "use"},
		{"connector": "mcp-github", "agent": "builtin:chat", "scopes": [1]},
	] {
		_act(args, {}) == fx.failed(fx.usage("activate needs connector and agent (and optional scopes)"), [])
		_deact(args, {}) == fx.failed(fx.usage("deactivate needs connector and agent (and optional scopes)"), [])
	}
	_act({"connector": "nope", "agent": "builtin:chat"}, {}).error.code == "UNKNOWN_CONNECTOR"
	_deact({"connector": "nope", "agent": "builtin:chat"}, {}).error.code == "UNKNOWN_CONNECTOR"
}

test_activations_are_for_mcp_connectors_only if {
	# before anything is read
	_act({"connector": "google", "agent": "builtin:chat"}, {}) == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: activations apply to MCP connectors only; google is type oauth_pkce (per-agent access to it is a grant)",
			"grantwire grants grant google builtin:chat --scopes email,openid",
			{"connector": "google", "type": "oauth_pkce"},
		),
		[],
	)
	_deact({"connector": "local", "agent": "builtin:chat"}, {}).error.fix == "grantwire grants grant local builtin:chat --scopes read"
}

# ---------------------------------------------------------------------------------------
# activate

test_activate_reads if {
	fx.decide(fx.q("activate", _pair("builtin:chat"), {})) == fx.need([
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["mcp-github", "builtin:chat"]},
		{"key": "active", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "mcp-github", "builtin:chat"]},
		{"key": "mcp", "kind": "ledger.read", "ledger": "mcp_servers.json", "path": []},
		{"key": "agents", "kind": "ledger.read", "ledger": "agents.json", "path": []},
	])
}

test_activate_with_an_existing_grant if {
	f := fx.patch(_facts("builtin:plain"), {"grant": fx.entry(fx.grants_file, ["mcp-github", "builtin:plain"], ["x"])})
	_act(_pair("builtin:plain"), f) == fx.done(
		{
			"connector": "mcp-github", "agent": "builtin:plain", "active": true,
			"auto_granted": false, "grant_source": "existing", "scopes": ["x"],
			"changed": true, "missing_keys": [], "warnings": [],
		},
		[
			_activation_write([_set_active("builtin:plain", {"exists": false})]),
			_event("builtin:plain", true),
		],
	)

	# explicit scopes never overwrite an existing grant
	e := _act(object.union(_pair("builtin:plain"), {"scopes": ["y"]}), f)
	e.result.scopes == ["x"]
	e.result.grant_source == "existing"
	fx.kinds(e) == ["ledger.write", "event.emit"]
}

test_the_first_activation_gives_the_file_its_version if {
	f := fx.patch(_facts("builtin:plain"), {
		"grant": fx.entry(fx.grants_file, ["mcp-github", "builtin:plain"], ["x"]),
		"active": fx.no_file(fx.activations_file, ["activations", "mcp-github", "builtin:plain"]),
	})
	_act(_pair("builtin:plain"), f).effects[0] == _activation_write([
		{"path": ["version"], "value": 1, "expect": {"exists": false}},
		_set_active("builtin:plain", {"exists": false}),
	])
}

test_activating_an_active_pair_changes_nothing if {
	f := fx.patch(_facts("builtin:plain"), {
		"grant": fx.entry(fx.grants_file, ["mcp-github", "builtin:plain"], ["x"]),
		"active": fx.entry(fx.activations_file, ["activations", "mcp-github", "builtin:plain"], true),
	})
	d := _act(_pair("builtin:plain"), f)
	d.effects == []
	d.result.changed == false
	d.result.active == true

	# a stored false is made true
	g := fx.patch(f, {"active": fx.entry(fx.activations_file, ["activations", "mcp-github", "builtin:plain"], false)})
	_act(_pair("builtin:plain"), g).effects == [
		_activation_write([_set_active("builtin:plain", {"value": false})]),
		_event("builtin:plain", true),
	]
}

test_one_click_with_explicit_scopes if {
	d := _act(object.union(_pair("builtin:plain"), {"scopes": ["write", "read", "write"]}), _facts("builtin:plain"))
	d == fx.done(
		{
			"connector": "mcp-github", "agent": "builtin:plain", "active": true,
			"auto_granted": true, "grant_source": "explicit", "scopes": ["read", "write"],
			"changed": true, "missing_keys": [], "warnings": [],
		},
		[
			_grant_write("builtin:plain", ["read", "write"]),
			_grant_event("builtin:plain", ["read", "write"]),
			_activation_write([_set_active("builtin:plain", {"exists": false})]),
			_event("builtin:plain", true),
		],
	)

	# explicit null is no scopes given
	_act(object.union(_pair("builtin:coder"), {"scopes": null}), _facts("builtin:coder")).result.grant_source == "consumes_mcp_servers"
}

test_one_click_with_declared_scopes if {
	d := _act(_pair("builtin:chat"), _facts("builtin:chat"))
	d.result.grant_source == "declared"
	d.result.auto_granted == true
	d.result.scopes == ["repo:read"]
	d.effects[0] == _grant_write("builtin:chat", ["repo:read"])
}

test_one_click_for_an_agent_that_consumes_mcp_servers if {
	d := _act(_pair("builtin:coder"), _facts("builtin:coder"))
	d.result.grant_source == "consumes_mcp_servers"
	d.result.scopes == ["use"]
	d.effects == [
		_grant_write("builtin:coder", ["use"]),
		_grant_event("builtin:coder", ["use"]),
		_activation_write([_set_active("builtin:coder", {"exists": false})]),
		_event("builtin:coder", true),
	]
}

test_one_click_needs_something_to_grant if {
	_act(_pair("builtin:plain"), _facts("builtin:plain")) == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: agent builtin:plain holds no grant for mcp-github, declares no scopes for it and does not consume MCP servers; pass the scopes to grant",
			"grantwire activations activate mcp-github builtin:plain --scopes use",
			{"connector": "mcp-github", "agent": "builtin:plain"},
		),
		[],
	)

	# an agent no registry knows declares nothing
	_act(_pair("installed:nobody"), _facts("installed:nobody")).error.code == "CONFIGURATION"
}

test_one_click_with_an_unusable_registry if {
	f := fx.patch(_facts("builtin:chat"), {"agents": fx.entry(fx.agents_file, [], {"version": 2})})
	_act(_pair("builtin:chat"), f).error == fx.err(
		"CORRUPT_LEDGER",
		"the agents ledger at /home/u/.grantwire/agents.json is unreadable (version 2 is not supported (this grantwire reads version 1)); nothing was changed",
		"mv /home/u/.grantwire/agents.json /home/u/.grantwire/agents.json.corrupt",
		{"ledger": "agents", "path": "/home/u/.grantwire/agents.json"},
	)

	# not needed with explicit scopes or an existing grant
	_act(object.union(_pair("builtin:chat"), {"scopes": ["use"]}), f).status == "done"
	g := fx.patch(f, {"grant": fx.entry(fx.grants_file, ["mcp-github", "builtin:chat"], ["use"])})
	_act(_pair("builtin:chat"), g).result.grant_source == "existing"
}

test_activate_says_which_keys_are_missing if {
	every mcp in [
		fx.no_file(fx.mcp_file, []),
		_mcp_doc({}),
		_mcp_doc({"mcp-github": {"command": "npx", "env": {"GITHUB_HOST": {"$keyring": "s:u"}}}}),
	] {
		d := _act(_pair("builtin:coder"), fx.patch(_facts("builtin:coder"), {"mcp": mcp}))
		d.result.missing_keys == ["GITHUB_TOKEN"]
		d.result.warnings == ["mcp-github still needs GITHUB_TOKEN before it can start; configure it: grantwire configure mcp-github --from-stdin"]
		d.result.active == true
		fx.kinds(d) == ["ledger.write", "event.emit", "ledger.write", "event.emit"]
	}

	# a remote server has no keys
	r := {
		"grant": fx.no_entry(fx.grants_file, ["mcp-remote", "builtin:coder"]),
		"active": fx.no_entry(fx.activations_file, ["activations", "mcp-remote", "builtin:coder"]),
		"mcp": fx.no_file(fx.mcp_file, []), "agents": fx.no_agents,
	}
	_act({"connector": "mcp-remote", "agent": "builtin:coder"}, r).result.missing_keys == []
}

# ---------------------------------------------------------------------------------------
# deactivate

test_deactivate if {
	fx.decide(fx.q("deactivate", _pair("builtin:chat"), {})) == fx.need([
		{"key": "active", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "mcp-github", "builtin:chat"]},
	])
	_deact(_pair("builtin:chat"), {"active": fx.no_file(fx.activations_file, ["activations", "mcp-github", "builtin:chat"])}) == fx.done(
		{"connector": "mcp-github", "agent": "builtin:chat", "active": false, "changed": false},
		[],
	)
	_deact(_pair("builtin:chat"), {"active": fx.entry(fx.activations_file, ["activations", "mcp-github", "builtin:chat"], true)}) == fx.done(
		{"connector": "mcp-github", "agent": "builtin:chat", "active": false, "changed": true},
		[
			_activation_write([{"path": ["activations", "mcp-github", "builtin:chat"], "delete": true, "prune": true, "expect": {"value": true}}]),
			_event("builtin:chat", false),
		],
	)
}

# ---------------------------------------------------------------------------------------
# list_activations, visible_servers, activation_changes

_list(args, f) := fx.decide(fx.q1("list_activations", args, f))

_rules(path, v) := fx.entry(fx.activations_file, path, v)

test_list_activations if {
	_list({}, {}) == fx.need([
		{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations"]},
		{"key": "rules", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["tools"]},
	])
	_list({"connector": "mcp-github"}, {}) == fx.need([
		{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "mcp-github"]},
		{"key": "rules", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["tools", "mcp-github"]},
	])
	all := {"mcp-github": {"builtin:chat": true}}
	none := fx.no_file(fx.activations_file, ["tools"])
	_list({}, {"actives": fx.entry(fx.activations_file, ["activations"], all), "rules": none}) == fx.done({"activations": all, "tools": {}}, [])
	rules := {"mcp-github": {"builtin:chat": ["read"]}}
	_list({}, {"actives": fx.entry(fx.activations_file, ["activations"], all), "rules": _rules(["tools"], rules)}) == fx.done({"activations": all, "tools": rules}, [])
	_list({"connector": null}, {"actives": fx.no_file(fx.activations_file, ["activations"]), "rules": none}) == fx.done({"activations": {}, "tools": {}}, [])
	_list({"connector": "mcp-github"}, {
		"actives": fx.entry(fx.activations_file, ["activations", "mcp-github"], all["mcp-github"]),
		"rules": _rules(["tools", "mcp-github"], rules["mcp-github"]),
	}) == fx.done(
		{"connector": "mcp-github", "activations": {"builtin:chat": true}, "tools": {"builtin:chat": ["read"]}},
		[],
	)
	_list({"connector": []}, {}) == fx.failed(fx.usage("list_activations takes an optional connector"), [])
	_list({"connector": "nope"}, {}).error.code == "UNKNOWN_CONNECTOR"
}

# ---------------------------------------------------------------------------------------
# activate with a tool rule

_rule_path(a) := ["tools", "mcp-github", a]

_with_rule(a, rule) := fx.patch(_facts(a), {"rule": rule})

test_activate_asks_for_the_rule_only_with_tools if {
	d := _act(object.union(_pair("builtin:coder"), {"tools": ["b", "a"]}), _facts("builtin:coder"))
	d.status == "need"
	d.needs == [{"key": "rule", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": _rule_path("builtin:coder")}]
	_act(_pair("builtin:coder"), _facts("builtin:coder")).status == "done"
}

test_activate_writes_the_rule_with_the_activation if {
	f := _with_rule("builtin:coder", fx.no_file(fx.activations_file, _rule_path("builtin:coder")))
	d := _act(object.union(_pair("builtin:coder"), {"tools": ["b", "a", "b"]}), f)
	d.result.tools == ["a", "b"]
	d.result.changed == true
	some w in d.effects
	w.kind == "ledger.write"
	w.ledger == "connectors/activations.json"
	{"path": _rule_path("builtin:coder"), "value": ["a", "b"], "expect": {"exists": false}} in w.ops
	{"path": ["activations", "mcp-github", "builtin:coder"], "value": true, "expect": {"exists": false}} in w.ops
}

_active_with_rule(rule) := fx.patch(_facts("builtin:coder"), {
	"grant": fx.entry(fx.grants_file, ["mcp-github", "builtin:coder"], ["use"]),
	"active": fx.entry(fx.activations_file, ["activations", "mcp-github", "builtin:coder"], true),
	"rule": rule,
})

test_activate_changes_only_the_rule_of_an_active_pair if {
	old := fx.entry(fx.activations_file, _rule_path("builtin:coder"), ["a"])
	d := _act(object.union(_pair("builtin:coder"), {"tools": ["a", "b"]}), _active_with_rule(old))
	d.effects == [_activation_write([{"path": _rule_path("builtin:coder"), "value": ["a", "b"], "expect": {"value": ["a"]}}])]

	# the same rule again changes nothing
	same := _act(object.union(_pair("builtin:coder"), {"tools": ["a"]}), _active_with_rule(old))
	same.effects == []
	same.result.changed == false

	# all_tools removes the rule; without one it is nothing to do
	all := _act(object.union(_pair("builtin:coder"), {"all_tools": true}), _active_with_rule(old))
	all.effects == [_activation_write([{"path": _rule_path("builtin:coder"), "delete": true, "prune": true, "expect": {"value": ["a"]}}])]
	all.result.tools == null
	nothing := fx.no_entry(fx.activations_file, _rule_path("builtin:coder"))
	_act(object.union(_pair("builtin:coder"), {"all_tools": true}), _active_with_rule(nothing)).effects == []
}

test_activate_refuses_bad_tools if {
	msg := "activate takes tools (tool names of 1 to 128 letters, digits and _ - . /) or all_tools: true, not both"
	every extra in [
		{"tools": "a"}, {"tools": ["a b"]}, {"tools": [""]}, {"tools": [1]}, {"tools": ["a,b"]},
		{"all_tools": false}, {"tools": ["a"], "all_tools": true},
	] {
		_act(object.union(_pair("builtin:coder"), extra), {}) == fx.failed(fx.usage(msg), [])
	}
	_act(object.union(_pair("builtin:coder"), {"tools": []}), _with_rule("builtin:coder", fx.no_file(fx.activations_file, _rule_path("builtin:coder")))).result.tools == []
}

_visible(args, f) := fx.decide(fx.q1("visible_servers", args, f))

test_visible_servers if {
	_visible({}, {}) == fx.failed(fx.usage("visible_servers needs agent"), [])
	_visible({"agent": 5}, {}) == fx.failed(fx.usage("visible_servers needs agent"), [])
	fx.decide(fx.q("visible_servers", {"agent": "builtin:chat"}, {})) == fx.need([
		{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": []},
		{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations"]},
	])
	f := {
		"grants": fx.entry(fx.grants_file, [], {
			"mcp-remote": {"builtin:chat": ["use"]},
			"mcp-github": {"builtin:chat": []},
			"mcp-memory": {"builtin:chat": ["use"]},
			"google": {"builtin:chat": ["openid"]},
			"gone": {"builtin:chat": ["use"]},
		}),
		"actives": fx.entry(fx.activations_file, ["activations"], {
			"mcp-remote": {"builtin:chat": true},
			"mcp-github": {"builtin:chat": true, "builtin:coder": true},
			"mcp-memory": {"builtin:chat": false},
			"google": {"builtin:chat": true},
			"gone": {"builtin:chat": true},
		}),
	}
	_visible({"agent": "builtin:chat"}, f) == fx.done({"agent": "builtin:chat", "servers": ["mcp-github", "mcp-remote"]}, [])

	# granted is not enough, active is not enough
	_visible({"agent": "builtin:coder"}, f) == fx.done({"agent": "builtin:coder", "servers": []}, [])
	_visible({"agent": "builtin:chat"}, {"grants": fx.no_file(fx.grants_file, []), "actives": fx.no_file(fx.activations_file, ["activations"])}).result.servers == []
}

_changes(args, f) := fx.decide(fx.q1("activation_changes", args, f))

_ev(c, a, active) := {"kind": "event.emit", "type": "connector.activation.changed", "payload": {"connector_id": c, "agent_id": a, "active": active}}

test_activation_changes if {
	_changes({"before": "x"}, {}) == fx.failed(fx.usage("activation_changes needs before ({connector: {agent: true}}) and an optional after"), [])
	_changes({"before": {}}, {}) == fx.need([{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations"]}])
	now := {"m1": {"a:1": true, "a:2": true}, "m2": {"a:1": true, "a:3": false}}
	before := {"m1": {"a:1": true, "a:4": true}, "m3": {"a:1": true}, "m4": "junk"}
	_changes({"before": before}, {"actives": fx.entry(fx.activations_file, ["activations"], now)}) == fx.done(
		{"activations": now},
		[_ev("m1", "a:2", true), _ev("m1", "a:4", false), _ev("m2", "a:1", true), _ev("m3", "a:1", false)],
	)
	_changes({"before": now}, {"actives": fx.entry(fx.activations_file, ["activations"], now)}) == fx.done({"activations": now}, [])
	_changes({"before": now}, {"actives": fx.no_file(fx.activations_file, ["activations"])}) == fx.done(
		{"activations": {}},
		[_ev("m1", "a:1", false), _ev("m1", "a:2", false), _ev("m2", "a:1", false)],
	)

	# a later view given: nothing is read
	_changes({"before": before, "after": now}, {}) == fx.done(
		{"activations": now},
		[_ev("m1", "a:2", true), _ev("m1", "a:4", false), _ev("m2", "a:1", true), _ev("m3", "a:1", false)],
	)
	fx.decide(fx.q("activation_changes", {"before": {}, "after": {"m\"1": {"a": true}}}, {})).status == "done"
}

# Without before, activation_changes is a usage error.
test_activation_changes_without_before if {
	_changes({}, {}) == fx.failed(fx.usage("activation_changes needs before ({connector: {agent: true}}) and an optional after"), [])
}
