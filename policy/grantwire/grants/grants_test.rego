package grantwire.grants_test

import data.grantwire.fixtures_test as fx

_grant_need(c, a) := {"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": [c, a]}

_agents_need := {"key": "agents", "kind": "ledger.read", "ledger": "agents.json", "path": []}

_args := {"connector": "google", "agent": "builtin:chat", "scopes": ["openid", "gmail.readonly", "openid"]}

_grant(args, f) := fx.decide(fx.q1("grant", args, f))

_event(c, a, list) := {"kind": "event.emit", "type": "connector.grant.changed", "payload": {"connector_id": c, "agent_id": a, "scopes": list}}

# ---------------------------------------------------------------------------------------
# grant

test_grant_usage if {
	msg := "grant needs connector, agent and scopes (array of strings)"
	every args in [
		{"agent": "builtin:chat", "scopes": []},
		{"connector": "google", "scopes": []},
		{"connector": "google", "agent": "", "scopes": []},
		{"connector": "google", "agent": "builtin:chat"},
		{"connector": "google", "agent": "builtin:chat", "scopes": "openid"},
		{"connector": "google", "agent": "builtin:chat", "scopes": [true]},
	] {
		_grant(args, {}) == fx.failed(fx.usage(msg), [])
	}
	_grant(object.union(_args, {"connector": "nope"}), {}).error.code == "UNKNOWN_CONNECTOR"
}

test_grant_reads_the_entry_and_the_registry if {
	fx.decide(fx.q("grant", _args, {})) == fx.need([_grant_need("google", "builtin:chat"), _agents_need])
	_grant(_args, {"agents": fx.no_agents}) == fx.need([_grant_need("google", "builtin:chat")])
	f := {
		"grant": fx.no_file(fx.grants_file, ["google", "builtin:chat"]),
		"agents": fx.entry(fx.agents_file, [], {"version": 1, "agents": [{"id": "custom:x", "source": "x.py"}]}),
	}
	_grant(_args, f) == fx.need([{"key": "agents|src|0", "kind": "file.digest", "path": "/home/u/.grantwire/x.py", "max_bytes": 16777216}])
}

test_a_new_grant if {
	f := {"grant": fx.no_file(fx.grants_file, ["google", "builtin:chat"]), "agents": fx.no_agents}
	_grant(_args, f) == fx.done(
		{"connector": "google", "agent": "builtin:chat", "scopes": ["gmail.readonly", "openid"], "changed": true, "warnings": []},
		[
			{"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [{"path": ["google", "builtin:chat"], "value": ["gmail.readonly", "openid"], "expect": {"exists": false}}]},
			_event("google", "builtin:chat", ["gmail.readonly", "openid"]),
		],
	)
}

test_a_grant_replaces_the_scopes if {
	f := {"grant": fx.entry(fx.grants_file, ["google", "builtin:chat"], ["calendar"]), "agents": fx.no_agents}
	d := _grant(_args, f)
	d.effects[0].ops == [{"path": ["google", "builtin:chat"], "value": ["gmail.readonly", "openid"], "expect": {"value": ["calendar"]}}]
	d.result.changed == true

	# narrowing to no scope at all is a grant too
	e := _grant(object.union(_args, {"scopes": []}), f)
	e.result.scopes == []
	e.effects == [
		{"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [{"path": ["google", "builtin:chat"], "value": [], "expect": {"value": ["calendar"]}}]},
		_event("google", "builtin:chat", []),
	]
}

test_the_same_grant_changes_nothing if {
	f := {"grant": fx.entry(fx.grants_file, ["google", "builtin:chat"], ["gmail.readonly", "openid"]), "agents": fx.no_agents}
	_grant(_args, f) == fx.done({"connector": "google", "agent": "builtin:chat", "scopes": ["gmail.readonly", "openid"], "changed": false, "warnings": []}, [])

	# a stored list in another order is rewritten sorted
	g := {"grant": fx.entry(fx.grants_file, ["google", "builtin:chat"], ["openid", "gmail.readonly"]), "agents": fx.no_agents}
	_grant(_args, g).result.changed == true
}

test_grant_warnings if {
	args := {"connector": "google", "agent": "installed:nobody", "scopes": ["Gmail.ReadOnly", "openid", "zzz"]}
	f := {"grant": fx.no_file(fx.grants_file, ["google", "installed:nobody"]), "agents": fx.no_agents}
	d := _grant(args, f)
	d.status == "done"
	d.result.changed == true
	d.result.warnings == [
		"the catalog does not list Gmail.ReadOnly zzz for google; a scope is an exact, case-sensitive string (grantwire catalog google)",
		"no agent registry knows installed:nobody; check the id (grantwire agents list)",
	]

	# a connector whose catalog lists no scopes takes any
	m := {"grant": fx.no_file(fx.grants_file, ["mcp-github", "builtin:chat"]), "agents": fx.no_agents}
	_grant({"connector": "mcp-github", "agent": "builtin:chat", "scopes": ["use"]}, m).result.warnings == []
}

test_an_unusable_registry_does_not_block_a_grant if {
	f := {"grant": fx.no_file(fx.grants_file, ["google", "builtin:chat"]), "agents": fx.corrupt(fx.agents_file, [], "not JSON")}
	d := _grant(_args, f)
	d.result.changed == true
	d.result.warnings == []
	g := {"grant": fx.no_file(fx.grants_file, ["google", "installed:x"]), "agents": fx.entry(fx.agents_file, [], {"version": 9})}
	_grant(object.union(_args, {"agent": "installed:x"}), g).result.warnings == ["no agent registry knows installed:x; check the id (grantwire agents list)"]
}

# ---------------------------------------------------------------------------------------
# revoke

_revoke(args, f) := fx.decide(fx.q1("revoke", args, f))

_pair := {"connector": "mcp-github", "agent": "builtin:chat"}

test_revoke_usage if {
	every args in [{"connector": "mcp-github"}, {"agent": "builtin:chat"}, {"connector": "mcp-github", "agent": ""}, {"connector": 1, "agent": "builtin:chat"}] {
		_revoke(args, {}) == fx.failed(fx.usage("revoke needs connector and agent"), [])
	}
	_revoke({"connector": "nope", "agent": "builtin:chat"}, {}).error.code == "UNKNOWN_CONNECTOR"
}

test_revoke_reads_the_grant_and_the_activation if {
	fx.decide(fx.q("revoke", _pair, {})) == fx.need([
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["mcp-github", "builtin:chat"]},
		{"key": "active", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "mcp-github", "builtin:chat"]},
	])
}

test_revoking_nothing_changes_nothing if {
	f := {"grant": fx.no_file(fx.grants_file, ["mcp-github", "builtin:chat"]), "active": fx.no_entry(fx.activations_file, ["activations", "mcp-github", "builtin:chat"])}
	_revoke(_pair, f) == fx.done({"connector": "mcp-github", "agent": "builtin:chat", "changed": false, "summary": "builtin:chat held no grant on mcp-github; nothing to revoke.", "warnings": []}, [])
}

test_revoke_removes_the_grant_and_the_activation if {
	f := {
		"grant": fx.entry(fx.grants_file, ["mcp-github", "builtin:chat"], ["use"]),
		"active": fx.entry(fx.activations_file, ["activations", "mcp-github", "builtin:chat"], true),
	}
	_revoke(_pair, f) == fx.done(
		{"connector": "mcp-github", "agent": "builtin:chat", "changed": true, "summary": "Revoked builtin:chat's grant on mcp-github.", "warnings": []},
		[
			{"kind": "ledger.write", "ledger": "connectors/grants.json", "ops": [{"path": ["mcp-github", "builtin:chat"], "delete": true, "prune": true, "expect": {"value": ["use"]}}]},
			_event("mcp-github", "builtin:chat", []),
			{"kind": "ledger.write", "ledger": "connectors/activations.json", "ops": [{"path": ["activations", "mcp-github", "builtin:chat"], "delete": true, "prune": true, "expect": {"value": true}}]},
			{"kind": "event.emit", "type": "connector.activation.changed", "payload": {"connector_id": "mcp-github", "agent_id": "builtin:chat", "active": false}},
		],
	)

	# an activation without a grant is removed too
	g := fx.patch(f, {"grant": fx.no_entry(fx.grants_file, ["mcp-github", "builtin:chat"])})
	fx.kinds(_revoke(_pair, g)) == ["ledger.write", "event.emit"]
	_revoke(_pair, g).effects[0].ledger == "connectors/activations.json"
	_revoke(_pair, g).result.summary == "Revoked builtin:chat's activation on mcp-github (it held no grant)."
	n := fx.patch(g, {"active": fx.no_entry(fx.activations_file, ["activations", "mcp-github", "builtin:chat"])})
	_revoke(_pair, n).result.summary == "builtin:chat held no grant on mcp-github; nothing to revoke."
}

# Revoking access is always possible: an unreadable ledger is left as it is and named, and
# the other is still cleaned.
test_revoke_with_an_unreadable_ledger if {
	grant := fx.entry(fx.grants_file, ["mcp-github", "builtin:chat"], ["use"])
	active := fx.entry(fx.activations_file, ["activations", "mcp-github", "builtin:chat"], true)
	bad_actives := fx.corrupt(fx.activations_file, ["activations", "mcp-github", "builtin:chat"], "invalid JSON")
	d := _revoke(_pair, {"grant": grant, "active": bad_actives})
	d.result.changed == true
	fx.kinds(d) == ["ledger.write", "event.emit"]
	d.effects[0].ledger == "connectors/grants.json"
	d.result.warnings == ["could not clean /home/u/.grantwire/connectors/activations.json (invalid JSON); everything else was removed; move it aside: mv /home/u/.grantwire/connectors/activations.json /home/u/.grantwire/connectors/activations.json.corrupt"]

	bad_grants := fx.corrupt(fx.grants_file, ["mcp-github", "builtin:chat"], "trailing data")
	e := _revoke(_pair, {"grant": bad_grants, "active": active})
	fx.kinds(e) == ["ledger.write", "event.emit"]
	e.effects[0].ledger == "connectors/activations.json"
	e.result.warnings == ["could not clean /home/u/.grantwire/connectors/grants.json (trailing data); no agent gets any credential while it is unreadable; move it aside: mv /home/u/.grantwire/connectors/grants.json /home/u/.grantwire/connectors/grants.json.corrupt"]

	# issue 20 §1.19: never "held no grant" about a ledger it could not read
	e.result.summary == "could not read /home/u/.grantwire/connectors/grants.json, so builtin:chat's grant on mcp-github was not revoked (see the warning)"

	# decide lets revoke through (any other operation stops on the unreadable ledger)
	fx.decide(fx.q1("revoke", _pair, {"grant": bad_grants, "active": active})).result.changed == true
	fx.decide(fx.q1("grant", {"connector": "mcp-github", "agent": "builtin:chat", "scopes": ["use"]}, {"grant": bad_grants, "agents": fx.no_agents})).error.code == "CORRUPT_LEDGER"
}

# ---------------------------------------------------------------------------------------
# list_grants

_list(args, f) := fx.decide(fx.q1("list_grants", args, f))

test_list_grants if {
	_list({}, {}) == fx.need([{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": []}])
	_list({"connector": null}, {}) == fx.need([{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": []}])
	_list({"connector": "google"}, {}) == fx.need([{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["google"]}])
	all := {"google": {"builtin:chat": ["openid"]}, "mcp-github": {"builtin:coder": ["use"]}}
	_list({}, {"grants": fx.entry(fx.grants_file, [], all)}) == fx.done({"grants": all}, [])
	_list({}, {"grants": fx.no_file(fx.grants_file, [])}) == fx.done({"grants": {}}, [])
	_list({"connector": "google"}, {"grants": fx.entry(fx.grants_file, ["google"], all.google)}) == fx.done({"connector": "google", "grants": {"builtin:chat": ["openid"]}}, [])
	_list({"connector": "google"}, {"grants": fx.no_entry(fx.grants_file, ["google"])}) == fx.done({"connector": "google", "grants": {}}, [])
}

test_list_grants_usage if {
	_list({"connector": 5}, {}) == fx.failed(fx.usage("list_grants takes an optional connector"), [])
	_list({"connector": "nope"}, {}).error.code == "UNKNOWN_CONNECTOR"
}

# ---------------------------------------------------------------------------------------
# grant_changes

_changes(args, f) := fx.decide(fx.q1("grant_changes", args, f))

_gev(c, a, list) := {"kind": "event.emit", "type": "connector.grant.changed", "payload": {"connector_id": c, "agent_id": a, "scopes": list}}

_changes_usage := fx.failed(fx.usage("grant_changes needs before ({connector: {agent: [scopes]}}) and an optional after"), [])

test_grant_changes if {
	_changes({}, {}) == _changes_usage
	_changes({"before": ["x"]}, {}) == _changes_usage
	_changes({"before": {}}, {}) == fx.need([{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": []}])
	now := {"google": {"a:1": ["email"], "a:2": ["email", "openid"]}, "mcp-github": {"a:1": ["use"]}}
	before := {"google": {"a:1": ["email"], "a:2": ["email"], "a:4": ["openid"]}, "local": {"a:1": ["read"]}}
	want := [
		_gev("google", "a:2", ["email", "openid"]),
		_gev("google", "a:4", []),
		_gev("local", "a:1", []),
		_gev("mcp-github", "a:1", ["use"]),
	]
	_changes({"before": before}, {"grants": fx.entry(fx.grants_file, [], now)}) == fx.done({"grants": now}, want)
	_changes({"before": now}, {"grants": fx.entry(fx.grants_file, [], now)}) == fx.done({"grants": now}, [])
	_changes({"before": now}, {"grants": fx.no_file(fx.grants_file, [])}) == fx.done(
		{"grants": {}},
		[_gev("google", "a:1", []), _gev("google", "a:2", []), _gev("mcp-github", "a:1", [])],
	)

	# a later view given: nothing is read
	_changes({"before": before, "after": now}, {}) == fx.done({"grants": now}, want)
}

# Entries that are not lists of strings are no grant.
test_grant_changes_ignores_what_is_not_a_grant if {
	before := {"google": {"a:1": ["email"], "a:5": [1]}, "slack": "junk", "version": 1}
	after := {"google": {"a:1": "x", "a:5": ["email"]}, "mcp-github": {"a:3": {"use": true}}}
	_changes({"before": before, "after": after}, {}) == fx.done(
		{"grants": after},
		[_gev("google", "a:1", []), _gev("google", "a:5", ["email"])],
	)
}

# The views are ledger content: the argument rules do not apply to them.
test_grant_changes_views_are_not_arguments if {
	d := fx.decide(fx.q("grant_changes", {"before": {"m\"x": {"a\\b": ["s p"]}}}, {"grants": fx.entry(fx.grants_file, [], {})}))
	d.status == "done"
	d.result == {"grants": {}}
	d.effects == [_gev("m\"x", "a\\b", [])]
}
