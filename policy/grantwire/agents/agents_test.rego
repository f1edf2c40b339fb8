package grantwire.agents_test

import data.grantwire.agents
import data.grantwire.fixtures_test as fx

_sha := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

_sha2 := "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

_file(list) := fx.entry(fx.agents_file, [], {"version": 1, "agents": list})

_digest(sha) := {"found": true, "sha256": sha}

_unreadable := {"found": false, "reason": "no such file"}

# The registry's facts under key "agents".
_facts(list, digests) := object.union({"agents": _file(list)}, {k: v | some i, v in digests; k := concat("", ["agents|src|", format_int(i, 10)])})

_registry(f) := r if {
	r := agents.registry(f, "agents") with data.agents as fx.agents
}

_builtin_ids := {"builtin:chat", "builtin:coder", "builtin:plain"}

# ---------------------------------------------------------------------------------------
# reading the registry

test_needs if {
	agents.needs({}, "agents") == [{"key": "agents", "kind": "ledger.read", "ledger": "agents.json", "path": []}]
	agents.needs({"agents": fx.no_agents}, "agents") == []
	agents.read({"agents": fx.no_agents}, "agents")
	not agents.read({}, "agents")

	# then the digest of every custom agent's source
	f := {"agents": _file([
		{"id": "custom:a", "source": "agents/a.py"},
		{"id": "builtin:x"},
		{"id": "custom:b", "source": "~/b.py"},
		{"id": "custom:c", "source": "/opt/c.py"},
	])}
	agents.needs(f, "agents") == [
		{"key": "agents|src|0", "kind": "file.digest", "path": "/home/u/.grantwire/agents/a.py", "max_bytes": 16777216},
		{"key": "agents|src|2", "kind": "file.digest", "path": "~/b.py", "max_bytes": 16777216},
		{"key": "agents|src|3", "kind": "file.digest", "path": "/opt/c.py", "max_bytes": 16777216},
	]
	not agents.read(f, "agents")
	g := object.union(f, {"agents|src|0": _digest(_sha), "agents|src|2": _unreadable})
	agents.needs(g, "agents") == [{"key": "agents|src|3", "kind": "file.digest", "path": "/opt/c.py", "max_bytes": 16777216}]
	agents.read(object.union(g, {"agents|src|3": _digest(_sha)}), "agents")
}

test_no_file_means_the_builtins if {
	r := _registry({"agents": fx.no_agents})
	object.keys(r) == _builtin_ids
	r["builtin:chat"] == {
		"id": "builtin:chat", "name": "Chat", "description": "reads mail", "origin": "builtin",
		"consumes_mcp_servers": false,
		"required_connectors": [
			{"connector": "google", "scopes": ["gmail.readonly"], "reason": "mail"},
			{"connector": "mcp-github", "scopes": ["repo:read"]},
		],
	}
	r["builtin:plain"] == {
		"id": "builtin:plain", "name": "Plain", "description": "", "origin": "builtin",
		"consumes_mcp_servers": false, "required_connectors": [],
	}
	agents.registry({"agents": fx.no_agents}, "agents") == {} with data.agents as {"builtin": "x"}
}

# File entries register under their id and replace a built-in of the same id.
test_file_entries_register if {
	r := _registry(_facts(
		[
			{"id": "installed:foo", "name": "Foo", "required_connectors": [{"connector": "google", "scopes": ["email"]}]},
			{"id": "builtin:plain", "description": "replaced"},
		],
		[],
	))
	r["installed:foo"] == {
		"id": "installed:foo", "name": "Foo", "description": "", "origin": "file",
		"consumes_mcp_servers": false, "required_connectors": [{"connector": "google", "scopes": ["email"]}],
	}
	r["builtin:plain"].origin == "file"
	r["builtin:plain"].description == "replaced"
	object.keys(r) == _builtin_ids | {"installed:foo"}
}

# The same, with "source": null (a non-string source), which the registry does read.
test_file_entries_with_a_null_source_register if {
	r := _registry(_facts(
		[
			{"id": "installed:foo", "source": null, "name": "Foo", "required_connectors": [{"connector": "google", "scopes": ["email"]}]},
			{"id": "builtin:plain", "source": null, "description": "replaced"},
		],
		[],
	))
	r["installed:foo"] == {
		"id": "installed:foo", "name": "Foo", "description": "", "origin": "file",
		"consumes_mcp_servers": false, "required_connectors": [{"connector": "google", "scopes": ["email"]}],
	}
	r["builtin:plain"].origin == "file"
	r["builtin:plain"].description == "replaced"
	object.keys(r) == _builtin_ids | {"installed:foo"}
}

test_custom_agents_are_named_by_their_source_digest if {
	f := _facts(
		[
			{"id": "custom:mine", "source": "agents/mine.py", "name": "Mine"},
			{"id": "custom:0123456789abcdef:kept", "source": "agents/kept.py"},
			{"id": "custom:0123456789abcdef:moved", "source": "agents/moved.py"},
			{"id": "custom:gone", "source": "agents/gone.py"},
		],
		[_digest(_sha), _digest(_sha), _digest(_sha2), _unreadable],
	)
	r := _registry(f)
	object.keys(r) == _builtin_ids | {"custom:0123456789abcdef:mine", "custom:0123456789abcdef:kept"}
	r["custom:0123456789abcdef:mine"] == {
		"id": "custom:0123456789abcdef:mine", "name": "Mine", "description": "", "origin": "file",
		"consumes_mcp_servers": false, "required_connectors": [],
	}
	agents.problems(f, "agents") == [
		{"agent": "custom:0123456789abcdef:moved", "message": "its source changed: the agent is now custom:fedcba9876543210:moved and inherits nothing from custom:0123456789abcdef:moved; update the id to grant it again"},
		{"agent": "custom:gone", "message": "its source /home/u/.grantwire/agents/gone.py cannot be read: no such file"},
	]
}

test_declarations_the_catalog_does_not_have if {
	f := _facts(
		[{"id": "installed:x", "source": null, "required_connectors": [
			{"connector": "nope", "scopes": ["a"]},
			{"connector": "google", "scopes": ["email", "drive", "photos"]},
			{"connector": "mcp-github", "scopes": ["anything"]},
		]}],
		[],
	)
	p := agents.problems(f, "agents") with data.agents as fx.agents with data.catalog as fx.catalog
	p == [
		{"agent": "installed:x", "message": `declares connector "nope", which the catalog does not have`},
		{"agent": "installed:x", "message": "declares scopes drive photos on google that the catalog does not offer"},
	]
}

test_declared_and_custom_id if {
	chat := _registry({"agents": fx.no_agents})["builtin:chat"]
	agents.declared(chat, "google") == ["gmail.readonly"]
	not agents.declared(chat, "github")
	agents.custom_id(_sha, "mine") == "custom:0123456789abcdef:mine"
}

# ---------------------------------------------------------------------------------------
# an unusable registry

_unusable(fact) := agents.unusable({"agents": fact}, "agents")

_why(list) := _unusable(_file(list)).message

_move := "mv /home/u/.grantwire/agents.json /home/u/.grantwire/agents.json.corrupt"

_summary(problem) := concat("", ["the agents ledger at /home/u/.grantwire/agents.json is unreadable (", problem, "); nothing was changed"])

_msg(problem) := concat("", [_summary(problem), "; fix: ", _move])

# The error of an unusable agents.json: CORRUPT_LEDGER with the command that moves it aside.
_corrupt(problem) := fx.err("CORRUPT_LEDGER", _summary(problem), _move, {"ledger": "agents", "path": "/home/u/.grantwire/agents.json"})

test_unusable_files if {
	_unusable(fx.corrupt(fx.agents_file, [], "duplicate key \"agents\"")) == _corrupt("duplicate key \"agents\"")
	_unusable(fx.entry(fx.agents_file, [], [])).message == _msg("it must be a JSON object")
	_unusable(fx.entry(fx.agents_file, [], {"version": 2, "agents": []})).message == _msg("version 2 is not supported (this grantwire reads version 1)")
	_unusable(fx.entry(fx.agents_file, [], {"version": "1"})).message == _msg(`version "1" is not supported (this grantwire reads version 1)`)
	_unusable(fx.entry(fx.agents_file, [], {"version": 1, "agents": {}})).message == _msg(`"agents" must be a list`)
	not _unusable(fx.no_agents)
	not _unusable(fx.entry(fx.agents_file, [], {"version": 1}))
	not _unusable(_file([]))
}

test_unusable_entries if {
	_why(["builtin:x"]) == _msg("agents[0]: an agent must be an object")
	_why([{"id": "builtin:ok", "source": null}, {"id": "builtin:x", "scopes": [], "Name": "x"}]) == _msg("agents[1]: unknown field Name, scopes")
	_why([{"id": 5}]) == _msg(`agents[0]: "id" is required`)
	_why([{"id": "installed:x", "source": "x.py"}]) == _msg(`agents[0]: "source" is for custom agents; write the id as "custom:<name>"`)
	_why([{"id": "custom:bad name", "source": "x.py"}]) == _msg(`agents[0]: 'custom:bad name': custom agents with a source are custom:<name> or custom:<16 hex>:<name>`)
	_why([{"id": "installed:x", "source": null, "consumes_mcp_servers": "yes"}]) == _msg(`agents[0]: "consumes_mcp_servers" must be true or false`)
}

test_invalid_ids_in_entries if {
	_why([{"id": "installed:bad name", "source": null}]) == _msg("agents[0]: 'installed:bad name' is not a valid agent id (builtin:<name>, installed:<name>, native:<name> or custom:<16 hex>:<name>; a name is 1 to 128 of letters, digits and _ . @ + -)")
}

# An entry without an id, with an invalid id (and no source), or a requirement without a
# connector makes the registry unusable.
test_entries_missing_members if {
	_why([{"name": "no id"}]) == _msg(`agents[0]: "id" is required`)
	_why([{"id": "installed:bad name"}]) == _msg("agents[0]: 'installed:bad name' is not a valid agent id (builtin:<name>, installed:<name>, native:<name> or custom:<16 hex>:<name>; a name is 1 to 128 of letters, digits and _ . @ + -)")
	_why([{"id": "installed:x", "required_connectors": [{"scopes": ["a"]}]}]) == _msg(`agents[0]: required_connectors[0]: "connector" is required`)
}

# A requirement without scopes makes the registry unusable too (policy bug: `not
# _nonempty(r.scopes)` fails when scopes is absent, so nothing is reported and the agent
# silently declares nothing for the connector; see the report).
test_a_requirement_without_scopes if {
	_why([{"id": "installed:x", "required_connectors": [{"connector": "google"}]}]) == _msg(`agents[0]: required_connectors[0] (google): declare at least one scope ("use" for an MCP server)`)
}

test_unusable_requirements if {
	_why([{"id": "installed:x", "source": null, "required_connectors": {}}]) == _msg(`agents[0]: "required_connectors" must be a list`)
	_why([{"id": "installed:x", "source": null, "required_connectors": [{"connector": 5, "scopes": ["a"]}]}]) == _msg(`agents[0]: required_connectors[0]: "connector" is required`)
	_why([{"id": "installed:x", "source": null, "required_connectors": [
		{"connector": "google", "scopes": ["a"]},
		{"connector": "google", "scopes": ["b"]},
	]}]) == _msg("agents[0]: required_connectors: google appears twice")
	_why([{"id": "installed:x", "source": null, "required_connectors": [{"connector": "google", "scopes": []}]}]) == _msg(`agents[0]: required_connectors[0] (google): declare at least one scope ("use" for an MCP server)`)
	_why([{"id": "installed:x", "source": null, "required_connectors": [{"connector": "google", "scopes": "a"}]}]) == _msg(`agents[0]: required_connectors[0] (google): declare at least one scope ("use" for an MCP server)`)
	not _unusable(_file([{"id": "installed:x", "source": null, "required_connectors": [{"connector": "google", "scopes": ["a", "b"], "reason": "r"}]}]))
	every bad in [["a b"], ["a", "a"], ["a,b"], [1]] {
		_why([{"id": "installed:x", "source": null, "required_connectors": [{"connector": "google", "scopes": bad}]}]) == _msg("agents[0]: required_connectors[0] (google): not a list of valid, distinct scopes")
	}
}

test_duplicate_ids if {
	_why([{"id": "installed:x", "source": null}, {"id": "builtin:y", "source": null}, {"id": "installed:x", "source": null}]) == _msg("agents[0] and agents[2] both declare installed:x")

	# custom agents with a source are named by their digest, so two "custom:a" entries are
	# not duplicates before the digests are known
	not _unusable(_file([{"id": "custom:a", "source": "a.py"}, {"id": "custom:a", "source": "b.py"}]))
}

# ---------------------------------------------------------------------------------------
# list_agents

test_list_agents_reads_the_file_then_the_sources if {
	fx.decide(fx.q("list_agents", {}, {})) == fx.need([{"key": "agents", "kind": "ledger.read", "ledger": "agents.json", "path": []}])
	f := {"agents": _file([{"id": "custom:mine", "source": "~/mine.py"}])}
	fx.decide(fx.q1("list_agents", {}, f)) == fx.need([{"key": "agents|src|0", "kind": "file.digest", "path": "~/mine.py", "max_bytes": 16777216}])
}

test_list_agents if {
	f := _facts([{"id": "custom:mine", "source": "~/mine.py"}, {"id": "custom:gone", "source": "~/gone.py"}], [_digest(_sha), _unreadable])
	d := fx.decide(fx.q1("list_agents", {}, f))
	d.status == "done"
	d.effects == []
	[a.id | some a in d.result.agents] == ["builtin:chat", "builtin:coder", "builtin:plain", "custom:0123456789abcdef:mine"]
	d.result.agents[3].origin == "file"
	d.result.problems == [{"agent": "custom:gone", "message": "its source ~/gone.py cannot be read: no such file"}]
}

test_list_agents_without_a_file if {
	d := fx.decide(fx.q1("list_agents", {}, {"agents": fx.no_agents}))
	[a.id | some a in d.result.agents] == ["builtin:chat", "builtin:coder", "builtin:plain"]
	d.result.problems == []
}

test_list_agents_unusable if {
	fx.decide(fx.q1("list_agents", {}, {"agents": fx.entry(fx.agents_file, [], {"version": 3})})) == fx.failed(
		_corrupt("version 3 is not supported (this grantwire reads version 1)"),
		[],
	)

	# agents.json is judged by the registry, not by the central ledger check
	fx.decide(fx.q1("list_agents", {}, {"agents": fx.corrupt(fx.agents_file, [], "not JSON")})).error.message == _msg("not JSON")
}

# ---------------------------------------------------------------------------------------
# agent_id

test_agent_id if {
	fx.decide(fx.q("agent_id", {"source": "/src/my.agent.py"}, {})) == fx.need([{"key": "source", "kind": "file.digest", "path": "/src/my.agent.py", "max_bytes": 16777216}])
	fx.decide(fx.q1("agent_id", {"source": "/src/my.agent.py"}, {"source": _digest(_sha)})) == fx.done({"id": "custom:0123456789abcdef:my.agent", "source": "/src/my.agent.py"}, [])
	fx.decide(fx.q1("agent_id", {"source": "/src/agent"}, {"source": _digest(_sha)})).result.id == "custom:0123456789abcdef:agent"
	fx.decide(fx.q1("agent_id", {"source": "rel/bot.js", "name": "Bot-1"}, {"source": _digest(_sha)})).result.id == "custom:0123456789abcdef:Bot-1"
	fx.decide(fx.q1("agent_id", {"source": "rel/bot.js", "name": ""}, {"source": _digest(_sha)})).result.id == "custom:0123456789abcdef:bot"
}

test_agent_id_errors if {
	fx.decide(fx.q("agent_id", {"source": 5}, {})) == fx.failed(fx.usage("agent_id needs source (a file path) and an optional name"), [])
	fx.decide(fx.q1("agent_id", {"source": "/src/a.py"}, {"source": {"found": false, "reason": "not a regular file"}})) == fx.failed(
		fx.usage("the agent source cannot be read: not a regular file"),
		[],
	)
	fx.decide(fx.q1("agent_id", {"source": "/src/.hidden"}, {"source": _digest(_sha)})) == fx.failed(
		fx.usage("agent name '' must be 1-128 of letters, digits and _ . @ + - (starting with a letter or digit)"),
		[],
	)
	fx.decide(fx.q1("agent_id", {"source": "/src/a.py", "name": "my bot"}, {"source": _digest(_sha)})).error.message == "usage: agent name 'my bot' must be 1-128 of letters, digits and _ . @ + - (starting with a letter or digit)"
}

# agent_id without a source is a usage error (not INTERNAL).
test_agent_id_without_a_source if {
	fx.decide(fx.q("agent_id", {}, {})) == fx.failed(fx.usage("agent_id needs source (a file path) and an optional name"), [])
}

# Two custom agents whose sources have the same digest and name register the same id: the
# registry is unusable ("both declare", as for two entries with the same id), and no
# decision fails (policy bug: the registry's object comprehension raises
# eval_conflict_error, so list_agents, grant, activate, connect and import_forwarded return
# no decision at all; see the report).
test_two_entries_registering_the_same_id if {
	f := _facts(
		[{"id": "custom:a", "source": "a.py", "name": "A"}, {"id": "custom:a", "source": "b.py", "name": "B"}],
		[_digest(_sha), _digest(_sha)],
	)
	d := fx.decide(fx.q1("list_agents", {}, f))
	d.error.code == "CORRUPT_LEDGER"
	contains(d.error.message, "both declare custom:0123456789abcdef:a")
	g := fx.decide(fx.q1("grant", {"connector": "google", "agent": "builtin:chat", "scopes": ["email"]}, object.union(f, {"grant": fx.no_file(fx.grants_file, ["google", "builtin:chat"])})))
	g.status == "done"
}
