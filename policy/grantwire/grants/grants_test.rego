package grantwire.grants_test

import data.grantwire.fixtures_test as fx
import data.grantwire.grants

_pair := {"connector": "google", "agent": "builtin:chat"}

_q(args, f) := {"op": "grant", "args": args, "facts": f}

_grant(args, f) := d if {
	d := grants.grant with input as _q(args, f) with data.catalog as fx.catalog
}

_revoke(args, f) := d if {
	d := grants.revoke with input as _q(args, f) with data.catalog as fx.catalog
}

_list(args, f) := d if {
	d := grants.list with input as _q(args, f) with data.catalog as fx.catalog
}

_usage(m) := {"status": "done", "effects": [], "error": {"code": "USAGE", "fix": "", "message": m}}

_unknown := {"status": "done", "effects": [], "error": {
	"code": "UNKNOWN_CONNECTOR", "connector": "nope", "fix": "grantwire catalog",
	"message": "unknown connector nope; fix: grantwire catalog",
}}

_changed(list) := {
	"kind": "event.emit", "type": "connector.grant.changed",
	"payload": {"connector_id": "google", "agent_id": "builtin:chat", "scopes": list},
}

# ---------------------------------------------------------------------------------------
# grant

test_grant_usage if {
	every args in [
		{"agent": "builtin:chat", "scopes": []},
		{"connector": "google", "scopes": []},
		{"connector": "google", "agent": "", "scopes": []},
		{"connector": "google", "agent": 7, "scopes": []},
		{"connector": 7, "agent": "builtin:chat", "scopes": []},
		_pair,
		fx.set(_pair, "scopes", "gmail"),
		fx.set(_pair, "scopes", ["gmail", null]),
	] {
		_grant(args, {}) == _usage("usage: grant needs connector, agent and scopes (array of strings)")
	}
}

test_grant_unknown_connector if {
	_grant({"connector": "nope", "agent": "builtin:chat", "scopes": []}, {}) == _unknown
}

test_grant_reads_the_pair_first if {
	_grant(fx.set(_pair, "scopes", ["gmail"]), {}) == {"status": "need", "needs": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": ["google", "builtin:chat"]},
	]}
}

test_new_grant_is_written_sorted_if_still_absent if {
	_grant(fx.set(_pair, "scopes", ["openid", "gmail", "openid"]), {"grant": fx.absent}) == {
		"status": "done",
		"result": {"connector": "google", "agent": "builtin:chat", "scopes": ["gmail", "openid"], "changed": true},
		"effects": [
			{
				"kind": "ledger.put", "ledger": "grants", "path": ["google", "builtin:chat"],
				"value": ["gmail", "openid"], "expect": {"found": false},
			},
			_changed(["gmail", "openid"]),
		],
	}
}

test_grant_replaces_the_scopes_it_read if {
	_grant(fx.set(_pair, "scopes", ["drive"]), {"grant": fx.entry(["gmail", "openid"])}) == {
		"status": "done",
		"result": {"connector": "google", "agent": "builtin:chat", "scopes": ["drive"], "changed": true},
		"effects": [
			{
				"kind": "ledger.put", "ledger": "grants", "path": ["google", "builtin:chat"],
				"value": ["drive"], "expect": {"found": true, "value": ["gmail", "openid"]},
			},
			_changed(["drive"]),
		],
	}
}

test_same_grant_writes_nothing if {
	_grant(fx.set(_pair, "scopes", ["openid", "gmail"]), {"grant": fx.entry(["gmail", "openid"])}) == {
		"status": "done",
		"result": {"connector": "google", "agent": "builtin:chat", "scopes": ["gmail", "openid"], "changed": false},
		"effects": [],
	}
}

test_unsorted_ledger_entry_is_rewritten_sorted if {
	# GAIA stores scopes in the caller's order; grantwire normalises on its next write.
	d := _grant(fx.set(_pair, "scopes", ["gmail", "openid"]), {"grant": fx.entry(["openid", "gmail"])})
	d.result.changed == true
	d.effects[0].expect == {"found": true, "value": ["openid", "gmail"]}
}

test_empty_grant_is_a_grant if {
	_grant(fx.set(_pair, "scopes", []), {"grant": fx.absent}).effects[0].value == []
}

test_grants_apply_to_every_connector_type if {
	every c in ["mcp-github", "mcp-remote", "microsoft"] {
		_grant({"connector": c, "agent": "builtin:chat", "scopes": ["use"]}, {"grant": fx.absent}).result.changed == true
	}
}

# ---------------------------------------------------------------------------------------
# revoke

test_revoke_usage if {
	every args in [{}, {"connector": "google"}, {"agent": "builtin:chat"}, fx.set(_pair, "agent", "")] {
		_revoke(args, {}) == _usage("usage: revoke needs connector and agent")
	}
}

test_revoke_unknown_connector if {
	_revoke({"connector": "nope", "agent": "builtin:chat"}, {}) == _unknown
}

test_revoke_reads_grant_and_activation if {
	_revoke(_pair, {}) == {"status": "need", "needs": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": ["google", "builtin:chat"]},
		{"key": "active", "kind": "ledger.get", "ledger": "activations", "path": ["google", "builtin:chat"]},
	]}
	_revoke(_pair, {"grant": fx.absent}).needs == [{"key": "active", "kind": "ledger.get", "ledger": "activations", "path": ["google", "builtin:chat"]}]
}

test_revoking_nothing_is_idempotent if {
	_revoke(_pair, {"grant": fx.absent, "active": fx.absent}) == {
		"status": "done",
		"result": {"connector": "google", "agent": "builtin:chat", "changed": false},
		"effects": [],
	}
}

test_revoke_removes_the_grant_if_unchanged if {
	_revoke(_pair, {"grant": fx.entry(["gmail"]), "active": fx.absent}) == {
		"status": "done",
		"result": {"connector": "google", "agent": "builtin:chat", "changed": true},
		"effects": [
			{"kind": "ledger.delete", "ledger": "grants", "path": ["google", "builtin:chat"], "expect": {"found": true, "value": ["gmail"]}},
			_changed([]),
		],
	}
}

test_revoke_removes_the_activation_too if {
	_revoke({"connector": "mcp-github", "agent": "builtin:chat"}, {"grant": fx.entry(["use"]), "active": fx.entry(true)}) == {
		"status": "done",
		"result": {"connector": "mcp-github", "agent": "builtin:chat", "changed": true},
		"effects": [
			{"kind": "ledger.delete", "ledger": "grants", "path": ["mcp-github", "builtin:chat"], "expect": {"found": true, "value": ["use"]}},
			{
				"kind": "event.emit", "type": "connector.grant.changed",
				"payload": {"connector_id": "mcp-github", "agent_id": "builtin:chat", "scopes": []},
			},
			{"kind": "ledger.delete", "ledger": "activations", "path": ["mcp-github", "builtin:chat"], "expect": {"found": true, "value": true}},
			{
				"kind": "event.emit", "type": "connector.activation.changed",
				"payload": {"connector_id": "mcp-github", "agent_id": "builtin:chat", "active": false},
			},
		],
	}
}

test_revoke_removes_a_stray_activation if {
	d := _revoke({"connector": "mcp-github", "agent": "builtin:chat"}, {"grant": fx.absent, "active": fx.entry(true)})
	d.result.changed == true
	[e.kind | some e in d.effects] == ["ledger.delete", "event.emit"]
	d.effects[0].ledger == "activations"
}

# ---------------------------------------------------------------------------------------
# list_grants

test_list_usage if {
	every args in [{"connector": 7}, {"connector": false}, {"connector": ["google"]}] {
		_list(args, {}) == _usage("usage: list_grants takes an optional connector")
	}
}

test_list_unknown_connector if {
	_list({"connector": "nope"}, {}) == _unknown
}

test_list_one_connector if {
	_list({"connector": "google"}, {}) == {"status": "need", "needs": [
		{"key": "grants", "kind": "ledger.get", "ledger": "grants", "path": ["google"]},
	]}
	_list({"connector": "google"}, {"grants": fx.entry({"builtin:chat": ["gmail"]})}) == {
		"status": "done", "effects": [],
		"result": {"connector": "google", "grants": {"builtin:chat": ["gmail"]}},
	}
	_list({"connector": "google"}, {"grants": fx.absent}).result == {"connector": "google", "grants": {}}
}

test_list_every_connector if {
	_list({}, {}) == {"status": "need", "needs": [{"key": "grants", "kind": "ledger.get", "ledger": "grants", "path": []}]}
	all := {"google": {"builtin:chat": ["gmail"]}, "mcp-github": {"builtin:dev": ["use"]}}
	_list({}, {"grants": fx.entry(all)}) == {"status": "done", "effects": [], "result": {"grants": all}}
	_list({"connector": null}, {"grants": fx.absent}).result == {"grants": {}}
}

# ---------------------------------------------------------------------------------------
# helpers other packages use

test_expect if {
	grants.expect(fx.entry(["a"])) == {"found": true, "value": ["a"]}
	grants.expect(fx.absent) == {"found": false}
}

test_put if {
	grants.put("google", "a", ["s"], fx.absent) == {
		"kind": "ledger.put", "ledger": "grants", "path": ["google", "a"],
		"value": ["s"], "expect": {"found": false},
	}
}

test_events if {
	grants.changed_event("c", "a", ["s"]) == {
		"kind": "event.emit", "type": "connector.grant.changed",
		"payload": {"connector_id": "c", "agent_id": "a", "scopes": ["s"]},
	}
	grants.activation_event("c", "a", true) == {
		"kind": "event.emit", "type": "connector.activation.changed",
		"payload": {"connector_id": "c", "agent_id": "a", "active": true},
	}
}
