package grantwire_test

import data.grantwire
import data.grantwire.errors
import data.grantwire.fixtures_test as fx
import data.grantwire.transport

# Well-formed arguments of every operation.
_ops := {
	"get_access_token": {"provider": "google", "agent": "builtin:chat", "scopes": ["gmail.readonly"]},
	"grant": {"connector": "google", "agent": "builtin:chat", "scopes": ["gmail.readonly"]},
	"revoke": {"connector": "google", "agent": "builtin:chat"},
	"list_grants": {"connector": "google"},
	"activate": {"connector": "mcp-github", "agent": "builtin:chat"},
	"deactivate": {"connector": "mcp-github", "agent": "builtin:chat"},
	"list_activations": {},
	"visible_servers": {"agent": "builtin:chat"},
	"activation_changes": {"before": {}},
	"grant_changes": {"before": {}},
	"disconnect": {"connector": "google"},
	"connect": {"connector": "google", "scopes": ["gmail.readonly"], "grant_agents": []},
	"configure_client": {"connector": "google"},
	"status": {},
	"connections": {},
	"test_connector": {"connector": "google"},
	"import_forwarded": {"provider": "google", "scopes": ["gmail.readonly"], "account_email": "a@example.com", "grant_agents": []},
	"configure_mcp": {"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN"]},
	"credential": {"connector": "mcp-github", "agent": "builtin:chat"},
	"mcp_list": {},
	"list_agents": {},
	"agent_id": {"source": "/src/agent.py"},
	"validate_catalog": {},
	"mcp_add": {"connector": "remote", "url": "https://mcp.example.com/mcp"},
	"mcp_auth": {"connector": "mcp-remote"},
	"mcp_token": {"connector": "mcp-remote", "agent": "builtin:chat"},
	"mcp_challenge": {"connector": "mcp-remote", "status": 401, "sent": "none"},
	"mcp_logout": {"connector": "mcp-remote"},
	"mcp_remove": {"connector": "mcp-remote"},
	"mcp_remote_list": {},
	"launch": {"connector": "mcp-github", "agent": "builtin:chat"},
	"mcp_tool": {"connector": "mcp-github", "agent": "builtin:chat", "tool": "t"},
	"connector_view": {},
	"start_flow": {"connector": "google", "kind": "pkce", "pending": []},
	"maintain": {},
	"configure": {"connector": "google"},
}

# The secret arguments of the operations that take some.
_secrets := {
	"configure_client": {"arg": fx.arg({"client_id": fx.id_a, "client_secret": "5ec5ec5ec5ec5ec5"})},
	"configure": {"arg": fx.arg({"client_id": fx.id_a, "client_secret": "5ec5ec5ec5ec5ec5"})},
	"configure_mcp": {"arg": fx.arg({"env.GITHUB_TOKEN": "6161616161616161"})},
	"import_forwarded": {"arg": fx.arg({"client_id": fx.id_a, "client_secret": "5ec5ec5ec5ec5ec5", "refresh_token": "7e7e7e7e7e7e7e7e"})},
}

test_the_manifest_lists_every_operation if {
	object.keys(grantwire.manifest.ops) == object.keys(_ops)
	every _, v in grantwire.manifest.ops {
		object.keys(v) == {"prefetch"}
		is_array(v.prefetch)
	}
	grantwire.manifest.errors == errors.table
	grantwire.manifest.loopback == transport.loopback
}

test_every_operation_routes if {
	every op, args in _ops {
		d := fx.decide(fx.q(op, args, object.get(_secrets, op, {})))
		d.status in {"need", "done"}
		not object.get(d, ["error", "code"], "") in {"INTERNAL", "USAGE"}
	}
}

test_prefetch_templates if {
	grantwire.manifest.ops.get_access_token.prefetch == [
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": [{"$arg": "provider"}, {"$arg": "agent"}]},
		{"key": "now", "kind": "clock.now"},
	]
	grantwire.manifest.ops.grant.prefetch == [
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": [{"$arg": "connector"}, {"$arg": "agent"}]},
		{"key": "agents", "kind": "ledger.read", "ledger": "agents.json", "path": []},
	]
	grantwire.manifest.ops.revoke.prefetch[1] == {"key": "active", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", {"$arg": "connector"}, {"$arg": "agent"}]}
	grantwire.manifest.ops.visible_servers.prefetch == [
		{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": []},
		{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations"]},
		{"key": "mcp_remote", "kind": "ledger.read", "ledger": "mcp_remote.json", "path": []},
	]
	grantwire.manifest.ops.credential.prefetch == [
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": [{"$arg": "connector"}, {"$arg": "agent"}]},
		{"key": "mcp", "kind": "ledger.read", "ledger": "mcp_servers.json", "path": []},
	]

	# never the credential store before a grant decision
	every _, v in grantwire.manifest.ops {
		every n in v.prefetch {
			n.kind in {"ledger.read", "clock.now"}
		}
	}
}

# A prefetch instantiated with an operation's arguments is exactly what its first question
# asks for, so a host that prefetches saves that question.
test_prefetch_matches_the_first_needs if {
	every op in ["get_access_token", "grant", "revoke", "visible_servers", "credential", "launch", "mcp_tool"] {
		d := fx.decide({"op": op, "args": _ops[op], "facts": {}, "attempt": 0, "round": 0})
		d.needs == [_instantiate(n, _ops[op]) | some n in grantwire.manifest.ops[op].prefetch]
	}
}

_instantiate(n, args) := object.union(n, {"path": [_arg(p, args) | some p in n.path]}) if n.path

else := n

_arg(p, args) := args[p["$arg"]] if is_object(p)

else := p

# ---------------------------------------------------------------------------------------
# the central rules, in their order

test_args_must_be_an_object if {
	every q in [
		{"op": "grant"},
		{"op": "grant", "args": "connector=google"},
		{"op": "grant", "args": []},
		{"op": "grant", "args": null},
	] {
		fx.decide(q) == fx.failed(fx.usage("the query needs an object of args"), [])
	}
}

_he := {"code": "INSECURE_STORE", "detail": "no Secret Service provider on the session bus", "fix": "apt-get install gnome-keyring"}

test_a_host_failure_is_the_operations_error if {
	f := {"grant": fx.entry(fx.grants_file, ["google", "builtin:chat"], ["gmail.readonly"]), "now": 1, "conn": {"host_error": _he}}
	fx.decide(fx.q1("get_access_token", _ops.get_access_token, f)) == fx.failed(
		fx.err(
			"INSECURE_STORE",
			"no secure credential store is available (no Secret Service provider on the session bus); grantwire never stores secrets in a file",
			"apt-get install gnome-keyring", {},
		),
		[],
	)
	io := {"mcp": {"host_error": {"code": "IO", "detail": "open mcp_servers.json: permission denied"}}}
	fx.decide(fx.q1("mcp_list", {}, io)) == fx.failed(fx.err("IO_ERROR", "the host failed: open mcp_servers.json: permission denied", "", {}), [])

	# a failed apply is reported the same way
	fx.decide(fx.q1("grant", _ops.grant, {"apply@0": {"host_error": {"code": "IO", "detail": "rename: no space left on device"}}})).error.message == "the host failed: rename: no space left on device"
}

test_a_host_failure_comes_before_everything_but_the_args_object if {
	f := {"grants": fx.corrupt(fx.grants_file, [], "x"), "k": {"host_error": _he}}
	fx.decide(fx.q("list_grants", {"connector": "bad\"id"}, f)).error.code == "INSECURE_STORE"
	fx.decide({"op": "nope", "args": {}, "facts": f, "attempt": 99}).error.code == "INSECURE_STORE"
	fx.decide({"op": "grant", "facts": f}).error.code == "USAGE"
}

_corrupt(name, path, reason) := fx.err(
	"CORRUPT_LEDGER",
	concat("", ["the ", name, " ledger at ", path, " is unreadable (", reason, "); nothing was changed"]),
	concat("", ["mv ", path, " ", path, ".corrupt"]),
	{"ledger": name, "path": path},
)

test_a_corrupt_ledger_is_refused if {
	f := {"grants": fx.corrupt(fx.grants_file, [], "duplicate key \"google\" at byte 40")}
	fx.decide(fx.q1("list_grants", {}, f)) == fx.failed(_corrupt("grants", "/home/u/.grantwire/connectors/grants.json", "duplicate key \"google\" at byte 40"), [])
	g := {"grants": fx.entry(fx.grants_file, [], {"google": ["x"]})}
	fx.decide(fx.q1("list_grants", {}, g)) == fx.failed(_corrupt("grants", "/home/u/.grantwire/connectors/grants.json", "it does not have the shape of that ledger"), [])
	h := {"grant": {
		"ledger": fx.grants_file, "path": ["google", "builtin:chat"], "file": fx.path_of(fx.grants_file),
		"found": true, "version": "l1", "exists": false, "shape": ["object", "array"],
	}}
	fx.decide(fx.q1("get_access_token", {"provider": "google", "agent": "builtin:chat", "scopes": []}, h)) == fx.failed(_corrupt("grants", "/home/u/.grantwire/connectors/grants.json", "it holds an array where an object belongs"), [])
	m := {"mcp": fx.entry(fx.mcp_file, [], {"mcpServers": {"x": 1}})}
	fx.decide(fx.q1("mcp_list", {}, m)).error.path == "/home/u/.grantwire/mcp_servers.json"

	# before the argument rules and BUSY
	fx.decide(object.union(fx.q("list_grants", {"connector": "bad\"id"}, f), {"attempt": 20})).error.code == "CORRUPT_LEDGER"
}

test_state_and_agents_files_are_left_to_the_operations if {
	f := {"actives": fx.no_file(fx.activations_file, ["activations"]), "rules": fx.no_file(fx.activations_file, ["tools"]), "x": fx.corrupt(fx.state_file, ["google"], "bad"), "y": fx.corrupt(fx.agents_file, [], "bad")}
	fx.decide(fx.q1("list_activations", {}, f)) == fx.done({"activations": {}, "tools": {}}, [])
}

test_disconnect_tolerates_corrupt_ledgers if {
	f := {"probe": fx.absent, "lock": "busy", "grants": fx.corrupt(fx.grants_file, ["google"], "bad")}
	fx.decide(fx.q1("disconnect", {"connector": "google"}, f)).error.code == "BUSY"
}

test_argument_rules if {
	clean := "usage: arguments must not contain double quotes, backslashes or control characters"
	every args in [
		{"connector": "goo\"gle"}, {"connector": "goo\\gle"}, {"connector": "goo\ngle"},
		{"connector": "google", "x": ["a\u0000"]}, {"connector": "google", "k\u007f": 1},
	] {
		fx.decide(fx.q("list_grants", args, {})) == fx.failed({"code": "USAGE", "fix": "", "message": clean, "summary": clean}, [])
	}
	agent := "usage: an agent id is namespaced (builtin:, installed:, native: or custom:<16 hex>:) with a name of 1 to 128 letters, digits and _ . @ + -"
	every args in [
		{"connector": "google", "agent": "chat", "scopes": []},
		{"connector": "google", "agent": "builtin:chät", "scopes": []},
		{"connector": "google", "agent": "builtin:chat\u200b", "scopes": []},
		{"connector": "google", "agent": "builtin:", "scopes": []},
	] {
		fx.decide(fx.q("grant", args, {})).error.message == agent
	}
	fx.decide(fx.q("connect", {"connector": "google", "scopes": [], "grant_agents": ["builtin:a", "bad"]}, {})).error.message == agent

	# what a ledger holds (a GAIA home's un-namespaced my-agent) can always be taken away
	every op in ["revoke", "deactivate"] {
		every a in ["my-agent", "chat", "builtin:chät", "Mon Agent"] {
			fx.decide(fx.q(op, {"connector": "mcp-github", "agent": a}, {})).status == "need"
		}
		fx.decide(fx.q(op, {"connector": "mcp-github", "agent": ""}, {})).error.code == "USAGE"
		fx.decide(fx.q(op, {"connector": "mcp-github", "agent": concat("", [x | some _ in numbers.range(1, 257); x := "a"])}, {})).error.message == "usage: an agent id is 1 to 256 characters"
		fx.decide(fx.q(op, {"connector": "mcp-github", "agent": "my\"agent"}, {})).error.message == clean
	}

	# no fix grants an id that cannot be granted
	fx.decide(fx.q("deactivate", {"connector": "google", "agent": "my-agent"}, {})).error.fix == ""
	every op in ["grant", "activate", "get_access_token", "credential", "launch"] {
		fx.decide(fx.q(op, {"connector": "google", "provider": "google", "agent": "my-agent", "scopes": ["x"]}, {})).error.message == agent
	}
	scope := "usage: a scope is 1 to 512 visible ASCII characters without spaces or commas"
	every s in ["a b", "a,b", "", "gmäil"] {
		fx.decide(fx.q("grant", {"connector": "google", "agent": "builtin:chat", "scopes": ["ok", s]}, {})).error.message == scope
	}
}

test_argument_rules_run_on_the_first_question_only if {
	args := {"connector": "google", "agent": "chat", "scopes": ["a b"]}
	fx.decide(fx.q("grant", args, {})).error.code == "USAGE"
	fx.decide({"op": "grant", "args": args}).error.code == "USAGE"
	fx.decide(fx.q1("grant", args, {})).status == "need"
	fx.decide({"op": "grant", "args": args, "round": "1"}).error.code == "USAGE"
}

test_an_earlier_view_is_not_an_argument if {
	before := {"m\"x": {"a\\b": true}}
	d := fx.decide(fx.q("activation_changes", {"before": before}, {"actives": fx.entry(fx.activations_file, ["activations"], {})}))
	d.status == "done"
	d.result == {"activations": {}}
	count(d.effects) == 1
}

test_busy_after_max_attempts if {
	q := fx.q1("list_grants", {}, {"grants": fx.no_file(fx.grants_file, [])})
	fx.decide(object.union(q, {"attempt": 16})).status == "done"
	fx.decide(object.union(q, {"attempt": 16})).result == {"grants": {}}
	fx.decide(object.union(q, {"attempt": 17})) == fx.failed(
		fx.err(
			"BUSY", "gave up after 17 attempts: other writers kept changing the same entries; retry shortly", "",
			{"retry_after_ms": 500, "attempts": 17},
		),
		[],
	)
	fx.decide(object.union(q, {"attempt": "17"})).status == "done"
	grantwire.max_attempts == 16
}

test_unknown_operations if {
	fx.decide(fx.q("nope", {}, {})) == fx.failed(fx.usage("unknown operation nope"), [])
	fx.decide({"args": {}}) == fx.failed(fx.usage("unknown operation (missing)"), [])
	fx.decide({"op": 5, "args": {}}) == fx.failed(fx.usage("unknown operation (missing)"), [])
}

_never(_, _) := x if {
	x := input.never
}

test_no_rule_matched if {
	d := fx.decide(fx.q1("list_grants", {}, {"grants": fx.no_file(fx.grants_file, [])})) with data.grantwire.step.done as _never
	d == fx.failed(fx.err("INTERNAL", "internal: no decision for list_grants (malformed facts?)", "", {}), [])
}
