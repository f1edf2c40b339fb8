package grantwire_test

import data.grantwire
import data.grantwire.activations
import data.grantwire.connections
import data.grantwire.errors
import data.grantwire.fixtures_test as fx
import data.grantwire.forwarded
import data.grantwire.gate
import data.grantwire.grants
import data.grantwire.mcp
import data.grantwire.transport

_decide(q) := d if {
	d := grantwire.decide with input as q with data.catalog as fx.catalog
}

_usage(message) := {"status": "done", "effects": [], "error": {"code": "USAGE", "fix": "", "message": message}}

# Well-formed arguments of every operation.
_ops := {
	"get_access_token": {"provider": "google", "agent": "builtin:chat", "scopes": ["gmail"]},
	"grant": {"connector": "google", "agent": "builtin:chat", "scopes": ["gmail"]},
	"revoke": {"connector": "google", "agent": "builtin:chat"},
	"list_grants": {"connector": "google"},
	"activate": {"connector": "mcp-github", "agent": "builtin:chat"},
	"deactivate": {"connector": "mcp-github", "agent": "builtin:chat"},
	"list_activations": {},
	"visible_servers": {"agent": "builtin:chat"},
	"disconnect": {"connector": "google"},
	"connect": {"connector": "google", "scopes": ["gmail"], "grant_agents": []},
	"configure_client": {"connector": "google", "client_id_hash": fx.hash_a, "has_secret": true},
	"status": {},
	"connections": {},
	"import_forwarded": {
		"provider": "google", "client_id_hash": fx.hash_a, "has_client_secret": true,
		"scopes": ["gmail"], "account_email": "user@example.com", "grant_agents": ["builtin:chat"],
	},
	"configure_mcp": {"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN"]},
	"credential": {"connector": "mcp-github", "agent": "builtin:chat"},
	"check_url": {
		"url": {"scheme": "https", "host": "example.com", "ip": "", "userinfo": false},
		"hop": 0, "purpose": "token", "from": null,
	},
}

# The decision rule of every operation, evaluated directly.
_direct("get_access_token") := gate.decision

_direct("grant") := grants.grant

_direct("revoke") := grants.revoke

_direct("list_grants") := grants.list

_direct("activate") := activations.activate

_direct("deactivate") := activations.deactivate

_direct("list_activations") := activations.list

_direct("visible_servers") := activations.visible

_direct("disconnect") := connections.disconnect

_direct("connect") := connections.connect

_direct("configure_client") := connections.configure_client

_direct("status") := connections.status

_direct("connections") := connections.connections

_direct("import_forwarded") := forwarded.decision

_direct("configure_mcp") := mcp.configure

_direct("credential") := mcp.credential

_direct("check_url") := transport.check_url

test_manifest_lists_every_operation if {
	object.keys(grantwire.manifest.ops) == object.keys(_ops)
}

test_every_operation_is_routed_to_its_rule if {
	every op, args in _ops {
		q := {"op": op, "args": args, "facts": {}}
		d := _decide(q)
		d == _direct(op) with input as q with data.catalog as fx.catalog
		not d.error.code == "USAGE"
		not d.error.code == "INTERNAL"
	}
}

test_routes_are_distinct if {
	# No two operations answer the same first question with the same decision (except the
	# trivially equal listings), so the routing cannot have crossed wires unnoticed.
	firsts := {op: _decide({"op": op, "args": args, "facts": {}}) | some op, args in _ops}
	count({d | some d in firsts}) == count(firsts)
}

test_unknown_operation_is_a_usage_error if {
	_decide({"op": "steal", "args": {}}) == _usage("usage: unknown operation steal")
	_decide({"args": {}}) == _usage("usage: unknown operation (missing)")
	_decide({"op": 7, "args": {}}) == _usage("usage: unknown operation (missing)")
}

test_args_must_be_an_object if {
	every q in [{"op": "status"}, {"op": "status", "args": []}, {"op": "status", "args": "x"}] {
		_decide(q) == _usage("usage: the query needs an object of args")
	}
}

test_known_operation_with_unmatched_facts_is_internal if {
	# A grant fact that is found but has no value, for an agent that declares nothing.
	q := {"op": "activate", "args": _ops.activate, "facts": {
		"grant": {"found": true}, "active": fx.absent,
		"agent": {"found": true, "connectors": {}, "consumes_mcp_servers": false},
	}}
	_decide(q) == {"status": "done", "effects": [], "error": {
		"code": "INTERNAL", "fix": "",
		"message": "internal: no decision for activate (malformed facts?)",
	}}
}

# ---------------------------------------------------------------------------------------
# attempts: concurrent writers

test_too_many_attempts_is_busy if {
	grantwire.max_attempts == 16
	_decide({"op": "grant", "args": _ops.grant, "attempt": 17}) == {"status": "done", "effects": [], "error": {
		"code": "BUSY", "fix": "", "retry_after_ms": 500, "attempts": 17,
		"message": "gave up after 17 attempts: other writers kept changing the same entries; retry shortly",
	}}
}

test_attempts_up_to_the_maximum_decide_normally if {
	every a in [0, 1, 16, "17", null] {
		_decide({"op": "grant", "args": _ops.grant, "attempt": a}) == _decide({"op": "grant", "args": _ops.grant})
	}
}

# ---------------------------------------------------------------------------------------
# the argument rules every operation shares

_unclean := _usage("usage: arguments must not contain double quotes, backslashes or control characters")

_bad_agent := _usage("usage: an agent id is 1 to 256 characters without spaces")

_bad_scope := _usage("usage: a scope is 1 to 512 characters without spaces or commas")

test_unclean_args_are_refused_without_echo if {
	every v in [`a"b`, `a\b`, "a\nb", "a\tb", "a\u001b[31mb", "a\u0000b", "a\u007fb"] {
		_decide({"op": "grant", "args": fx.set(_ops.grant, "agent", v)}) == _unclean
		_decide({"op": "connect", "args": fx.set(_ops.connect, "scopes", [v])}) == _unclean
		_decide({"op": "check_url", "args": fx.set(_ops.check_url, "purpose", v)}) == _unclean
	}

	# Keys count too.
	_decide({"op": "status", "args": {"x\ny": 1}}) == _unclean
}

test_agent_ids_are_words if {
	every a in ["", "builtin:my agent", concat("", ["x", substring(json.marshal([1 | some _ in numbers.range(1, 300)]), 0, 256)])] {
		_decide({"op": "grant", "args": fx.set(_ops.grant, "agent", a)}) == _bad_agent
	}
	_decide({"op": "connect", "args": fx.set(_ops.connect, "grant_agents", ["builtin:a", "b c"])}) == _bad_agent
	_decide({"op": "import_forwarded", "args": fx.set(_ops.import_forwarded, "grant_agents", [""])}) == _bad_agent
}

test_scopes_are_words_without_commas if {
	every s in ["", "a b", "a,b", concat("", [s | some _ in numbers.range(1, 513); s := "x"])] {
		_decide({"op": "grant", "args": fx.set(_ops.grant, "scopes", [s])}) == _bad_scope
	}
}

test_well_formed_ids_and_scopes_pass if {
	long_agent := concat("", [s | some _ in numbers.range(1, 256); s := "a"])
	long_scope := concat("", [s | some _ in numbers.range(1, 512); s := "s"])
	every args in [
		fx.set(_ops.grant, "agent", "custom:0123456789abcdef:tool-agent"),
		fx.set(_ops.grant, "agent", "native:é-ü-日本"),
		fx.set(_ops.grant, "agent", long_agent),
		fx.set(_ops.grant, "scopes", ["https://www.googleapis.com/auth/gmail.readonly", "Mail.Read", long_scope]),
		fx.set(_ops.grant, "scopes", []),
	] {
		_decide({"op": "grant", "args": args}).status == "need"
	}
}

test_malformed_lists_are_left_to_the_operation if {
	# Only strings in arrays are judged here; each operation reports its own usage error.
	_decide({"op": "connect", "args": fx.set(_ops.connect, "grant_agents", "a b")}) == _usage("usage: connect needs connector, scopes and grant_agents (arrays of strings)")
	_decide({"op": "grant", "args": fx.set(_ops.grant, "scopes", "a b")}) == _usage("usage: grant needs connector, agent and scopes (array of strings)")
	_decide({"op": "grant", "args": fx.set(_ops.grant, "agent", 7)}) == _usage("usage: grant needs connector, agent and scopes (array of strings)")
}

# ---------------------------------------------------------------------------------------
# manifest: the prefetch templates and the error table

_sub(v, args) := args[v["$arg"]] if {
	is_object(v)
} else := v

_instantiate(templates, args) := [{k: w |
	some k, v in t
	w := _path(v, args)
} |
	some t in templates
]

_path(v, args) := [_sub(x, args) | some x in v] if is_array(v)

else := _sub(v, args)

test_prefetch_is_the_first_question if {
	# For every operation that publishes a prefetch, the templates (with the arguments put
	# in) are exactly what the decision asks first: the shell's first round answers it.
	some_prefetch := [op | some op, m in grantwire.manifest.ops; count(m.prefetch) > 0]
	some_prefetch == ["credential", "get_access_token", "grant", "revoke", "visible_servers"]
	every op in some_prefetch {
		needs := _instantiate(grantwire.manifest.ops[op].prefetch, _ops[op])
		_decide({"op": op, "args": _ops[op], "facts": {}}) == {"status": "need", "needs": needs}
	}
}

test_prefetch_templates_name_arguments if {
	grantwire.manifest.ops.get_access_token.prefetch[0] == {
		"key": "grant", "kind": "ledger.get", "ledger": "grants",
		"path": [{"$arg": "provider"}, {"$arg": "agent"}],
	}
}

test_manifest_publishes_the_error_table if {
	grantwire.manifest.errors == errors.table
}

test_argument_rules_are_checked_on_the_first_question_only if {
	bad := {"op": "grant", "args": {"connector": "google", "agent": "two words", "scopes": []}}
	_decide(bad) == _usage("usage: an agent id is 1 to 256 characters without spaces")
	_decide(object.union(bad, {"round": 0})) == _usage("usage: an agent id is 1 to 256 characters without spaces")
	_decide(object.union(bad, {"round": 1})).status == "need"
}
