package grantwire.activations_test

import data.grantwire.activations
import data.grantwire.fixtures_test as fx

_pair := {"connector": "mcp-github", "agent": "builtin:chat"}

_q(args, f) := {"op": "activate", "args": args, "facts": f}

_activate(args, f) := d if {
	d := activations.activate with input as _q(args, f) with data.catalog as fx.catalog
}

_deactivate(args, f) := d if {
	d := activations.deactivate with input as _q(args, f) with data.catalog as fx.catalog
}

_list(args, f) := d if {
	d := activations.list with input as _q(args, f) with data.catalog as fx.catalog
}

_visible(args, f) := d if {
	d := activations.visible with input as _q(args, f) with data.catalog as fx.catalog
}

_usage(m) := {"status": "done", "effects": [], "error": {"code": "USAGE", "fix": "", "message": m}}

_fail(err) := {"status": "done", "effects": [], "error": err}

# Agent registry entries.
_declares := {"found": true, "connectors": {"mcp-github": ["repo", "issues"], "google": ["gmail"]}, "consumes_mcp_servers": true}

_consumes := {"found": true, "connectors": {"google": ["gmail"]}, "consumes_mcp_servers": true}

_plain := {"found": true, "connectors": {}, "consumes_mcp_servers": false}

_fresh(agent) := {"grant": fx.absent, "active": fx.absent, "agent": agent}

_grant_put(list) := {
	"kind": "ledger.put", "ledger": "grants", "path": ["mcp-github", "builtin:chat"],
	"value": list, "expect": {"found": false},
}

_grant_event(list) := {
	"kind": "event.emit", "type": "connector.grant.changed",
	"payload": {"connector_id": "mcp-github", "agent_id": "builtin:chat", "scopes": list},
}

_activate_put(expect) := {
	"kind": "ledger.put", "ledger": "activations", "path": ["mcp-github", "builtin:chat"],
	"value": true, "expect": expect,
}

_activation_event(active) := {
	"kind": "event.emit", "type": "connector.activation.changed",
	"payload": {"connector_id": "mcp-github", "agent_id": "builtin:chat", "active": active},
}

_auto(source, list) := {
	"status": "done",
	"result": {
		"connector": "mcp-github", "agent": "builtin:chat", "active": true,
		"auto_granted": true, "grant_source": source, "scopes": list, "changed": true,
	},
	"effects": [_grant_put(list), _grant_event(list), _activate_put({"found": false}), _activation_event(true)],
}

_oauth_refused := _fail({
	"code": "CONFIGURATION", "connector": "google", "type": "oauth_pkce",
	"fix": "grantwire grants grant google builtin:chat --scopes <scopes>",
	"message": "configuration error: activations apply to MCP connectors only; google is type oauth_pkce (per-agent access to it is a grant); fix: grantwire grants grant google builtin:chat --scopes <scopes>",
})

_unknown := _fail({
	"code": "UNKNOWN_CONNECTOR", "connector": "nope", "fix": "grantwire catalog",
	"message": "unknown connector nope; fix: grantwire catalog",
})

# ---------------------------------------------------------------------------------------
# guards: checked before anything is read or written

test_activate_usage if {
	every args in [
		{},
		{"connector": "mcp-github"},
		{"agent": "builtin:chat"},
		fx.set(_pair, "agent", ""),
		fx.set(_pair, "connector", 7),
		fx.set(_pair, "scopes", "use"),
		fx.set(_pair, "scopes", ["use", 1]),
		fx.set(_pair, "scopes", false),
	] {
		_activate(args, {}) == _usage("usage: activate needs connector and agent (and optional scopes)")
	}
}

test_unknown_connector if {
	_activate(fx.set(_pair, "connector", "nope"), {}) == _unknown
	_deactivate(fx.set(_pair, "connector", "nope"), {}) == _unknown
}

test_oauth_connector_is_refused_before_anything_is_read if {
	_activate(fx.set(_pair, "connector", "google"), {}) == _oauth_refused
	_deactivate(fx.set(_pair, "connector", "google"), {}) == _oauth_refused
}

test_activate_reads_grant_activation_and_agent if {
	_activate(_pair, {}) == {"status": "need", "needs": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": ["mcp-github", "builtin:chat"]},
		{"key": "active", "kind": "ledger.get", "ledger": "activations", "path": ["mcp-github", "builtin:chat"]},
		{"key": "agent", "kind": "agent.get", "agent": "builtin:chat"},
	]}
}

# ---------------------------------------------------------------------------------------
# one-click activation: explicit > declared > ["use"] for MCP consumers > error

test_explicit_scopes_win if {
	_activate(fx.set(_pair, "scopes", ["write", "read", "write"]), _fresh(_declares)) == _auto("explicit", ["read", "write"])
	_activate(fx.set(_pair, "scopes", []), _fresh(_declares)) == _auto("explicit", [])
}

test_declared_scopes_come_next if {
	_activate(_pair, _fresh(_declares)) == _auto("declared", ["issues", "repo"])
	_activate(fx.set(_pair, "scopes", null), _fresh(_declares)) == _auto("declared", ["issues", "repo"])
}

test_use_for_an_agent_that_consumes_mcp_servers if {
	_activate(_pair, _fresh(_consumes)) == _auto("consumes_mcp_servers", ["use"])
}

test_declared_must_be_a_list_for_this_connector if {
	agent := fx.set(_consumes, "connectors", {"mcp-github": "repo"})
	_activate(_pair, _fresh(agent)) == _auto("consumes_mcp_servers", ["use"])
}

test_nothing_to_grant_is_a_configuration_error if {
	err := _fail({
		"code": "CONFIGURATION", "connector": "mcp-github", "agent": "builtin:chat",
		"fix": "grantwire activations activate mcp-github builtin:chat --scopes use",
		"message": "configuration error: agent builtin:chat holds no grant for mcp-github, declares no scopes for it and does not consume MCP servers; pass the scopes to grant; fix: grantwire activations activate mcp-github builtin:chat --scopes use",
	})
	_activate(_pair, _fresh(_plain)) == err
	_activate(_pair, _fresh(fx.absent)) == err
	_activate(_pair, _fresh({"found": false, "consumes_mcp_servers": true})) == err
}

test_existing_grant_is_never_overwritten if {
	f := fx.set(_fresh(_declares), "grant", fx.entry(["admin"]))
	expected := {
		"status": "done",
		"result": {
			"connector": "mcp-github", "agent": "builtin:chat", "active": true,
			"auto_granted": false, "grant_source": "existing", "scopes": ["admin"], "changed": true,
		},
		"effects": [_activate_put({"found": false}), _activation_event(true)],
	}
	_activate(_pair, f) == expected
	_activate(fx.set(_pair, "scopes", ["read"]), f) == expected
	_activate(_pair, fx.set(f, "agent", _plain)) == expected
}

test_already_active_changes_nothing if {
	_activate(_pair, {"grant": fx.entry(["use"]), "active": fx.entry(true), "agent": _plain}) == {
		"status": "done",
		"result": {
			"connector": "mcp-github", "agent": "builtin:chat", "active": true,
			"auto_granted": false, "grant_source": "existing", "scopes": ["use"], "changed": false,
		},
		"effects": [],
	}
}

test_a_non_true_entry_is_replaced_if_unchanged if {
	d := _activate(_pair, {"grant": fx.entry(["use"]), "active": fx.entry(false), "agent": _plain})
	d.effects == [_activate_put({"found": true, "value": false}), _activation_event(true)]
}

test_remote_mcp_connectors_activate_too if {
	d := _activate(fx.set(_pair, "connector", "mcp-remote"), _fresh(_consumes))
	d.result.grant_source == "consumes_mcp_servers"
	d.effects[2].path == ["mcp-remote", "builtin:chat"]
}

# ---------------------------------------------------------------------------------------
# deactivate keeps the grant

test_deactivate_usage if {
	_deactivate({"connector": "mcp-github"}, {}) == _usage("usage: deactivate needs connector and agent (and optional scopes)")
}

test_deactivate_reads_the_activation if {
	_deactivate(_pair, {}) == {"status": "need", "needs": [
		{"key": "active", "kind": "ledger.get", "ledger": "activations", "path": ["mcp-github", "builtin:chat"]},
	]}
}

test_deactivating_an_inactive_pair_is_idempotent if {
	_deactivate(_pair, {"active": fx.absent}) == {
		"status": "done", "effects": [],
		"result": {"connector": "mcp-github", "agent": "builtin:chat", "active": false, "changed": false},
	}
}

test_deactivate_deletes_the_entry_and_keeps_the_grant if {
	_deactivate(_pair, {"active": fx.entry(true), "grant": fx.entry(["use"])}) == {
		"status": "done",
		"result": {"connector": "mcp-github", "agent": "builtin:chat", "active": false, "changed": true},
		"effects": [
			{"kind": "ledger.delete", "ledger": "activations", "path": ["mcp-github", "builtin:chat"], "expect": {"found": true, "value": true}},
			_activation_event(false),
		],
	}
}

# ---------------------------------------------------------------------------------------
# list_activations

test_list_usage if {
	every args in [{"connector": 7}, {"connector": false}] {
		_list(args, {}) == _usage("usage: list_activations takes an optional connector")
	}
	_list({"connector": "nope"}, {}) == _unknown
}

test_list_one_connector if {
	_list({"connector": "mcp-github"}, {}) == {"status": "need", "needs": [
		{"key": "actives", "kind": "ledger.get", "ledger": "activations", "path": ["mcp-github"]},
	]}
	_list({"connector": "mcp-github"}, {"actives": fx.entry({"builtin:chat": true})}) == {
		"status": "done", "effects": [],
		"result": {"connector": "mcp-github", "activations": {"builtin:chat": true}},
	}
}

test_list_every_connector if {
	_list({}, {}).needs == [{"key": "actives", "kind": "ledger.get", "ledger": "activations", "path": []}]
	_list({"connector": null}, {"actives": fx.absent}) == {"status": "done", "effects": [], "result": {"activations": {}}}
}

# ---------------------------------------------------------------------------------------
# visible_servers: granted AND active, MCP connectors only

test_visible_usage if {
	every args in [{}, {"agent": 7}] {
		_visible(args, {}) == _usage("usage: visible_servers needs agent")
	}
}

test_visible_reads_the_agent_entries if {
	_visible({"agent": "builtin:chat"}, {}) == {"status": "need", "needs": [
		{"key": "agent_grants", "kind": "ledger.get", "ledger": "grants", "path": ["*", "builtin:chat"]},
		{"key": "agent_actives", "kind": "ledger.get", "ledger": "activations", "path": ["*", "builtin:chat"]},
	]}
}

test_visible_iff_granted_and_active if {
	f := {
		"agent_grants": fx.entry({
			"mcp-remote": ["use"], "mcp-github": [], "mcp-memory": ["use"],
			"google": ["gmail"], "gone": ["use"],
		}),
		"agent_actives": fx.entry({
			"mcp-remote": true, "mcp-github": true, "mcp-memory": false,
			"google": true, "gone": true, "mcp-other": true,
		}),
	}
	_visible({"agent": "builtin:chat"}, f) == {
		"status": "done", "effects": [],
		"result": {"agent": "builtin:chat", "servers": ["mcp-github", "mcp-remote"]},
	}
}

test_absent_means_inactive if {
	_visible({"agent": "builtin:chat"}, {"agent_grants": fx.entry({"mcp-github": ["use"]}), "agent_actives": fx.absent}).result.servers == []
	_visible({"agent": "builtin:chat"}, {"agent_grants": fx.absent, "agent_actives": fx.entry({"mcp-github": true})}).result.servers == []
}
