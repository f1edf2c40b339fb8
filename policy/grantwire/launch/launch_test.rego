package grantwire.launch_test

import data.grantwire.fixtures_test as fx
import data.grantwire.launch

_doc(servers) := fx.entry(fx.mcp_file, [], {"mcpServers": servers})

_ref(k) := {"$keyring": concat("", ["grantwire.connections:mcp-github:", k])}

_github(keys) := {"command": "npx", "args": ["-y", "server-github"], "env": {k: _ref(k) | some k in keys}}

_pair := {"connector": "mcp-github", "agent": "builtin:coder"}

_granted(c) := fx.entry(fx.grants_file, [c, "builtin:coder"], ["use"])

_active(c) := fx.entry(fx.activations_file, ["activations", c, "builtin:coder"], true)

_no_grant(c) := fx.no_entry(fx.grants_file, [c, "builtin:coder"])

_inactive(c) := fx.no_entry(fx.activations_file, ["activations", c, "builtin:coder"])

# The facts of the first question: granted and active, with mcp_servers.json holding doc.
_gate(c, doc) := {"grant": _granted(c), "active": _active(c), "mcp": doc}

_launch(args, f) := fx.decide(fx.q1("launch", args, f))

_stored := {
	"secret|GITHUB_TOKEN": fx.slot("secret|GITHUB_TOKEN", "v1", null),
	"secret|GITHUB_HOST": fx.slot("secret|GITHUB_HOST", "v2", null),
}

test_launch_usage if {
	msg := "launch needs connector and agent (and an optional boolean check)"
	every args in [{}, {"connector": "mcp-github"}, {"agent": "builtin:coder"}, {"connector": 1, "agent": "builtin:coder"}, object.union(_pair, {"check": "yes"})] {
		_launch(args, {}) == fx.failed(fx.usage(msg), [])
	}
	_launch({"connector": "nope", "agent": "builtin:coder"}, _gate("nope", fx.no_file(fx.mcp_file, []))).error.code == "UNKNOWN_CONNECTOR"
	_launch({"connector": "google", "agent": "builtin:coder"}, _gate("google", fx.no_file(fx.mcp_file, []))) == fx.failed(
		fx.err(
			"CONFIGURATION",
			"configuration error: google is not an MCP server (type oauth_pkce); agents get an OAuth provider's access tokens from grantwire token",
			"grantwire mcp list", {"connector": "google", "type": "oauth_pkce"},
		),
		[],
	)

	# check may be absent, null, true or false
	every check in [null, false, true] {
		_launch(object.union(_pair, {"check": check}), {}).status == "need"
	}
}

test_the_first_question_reads_the_ledgers_only if {
	fx.decide(fx.q("launch", _pair, {})) == fx.need([
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["mcp-github", "builtin:coder"]},
		{"key": "active", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "mcp-github", "builtin:coder"]},
		{"key": "mcp", "kind": "ledger.read", "ledger": "mcp_servers.json", "path": []},
	])
}

_not_granted := fx.err(
	"AGENT_NOT_GRANTED", "agent builtin:coder holds no grant for mcp-github",
	"grantwire activations activate mcp-github builtin:coder --scopes use",
	{"connector": "mcp-github", "agent": "builtin:coder", "missing_scopes": ["use"], "full_scopes": ["use"]},
)

_not_active := fx.err(
	"AGENT_NOT_ACTIVE", "agent builtin:coder is granted mcp-github but it is not active for it",
	"grantwire activations activate mcp-github builtin:coder",
	{"connector": "mcp-github", "agent": "builtin:coder"},
)

test_an_ungranted_agent_is_refused_before_the_keyring_is_read if {
	doc := _doc({"mcp-github": _github(["GITHUB_TOKEN"])})
	_launch(_pair, {"grant": _no_grant("mcp-github"), "active": _inactive("mcp-github"), "mcp": doc}) == fx.failed(_not_granted, [])

	# an activation left without its grant changes nothing
	_launch(_pair, {"grant": _no_grant("mcp-github"), "active": _active("mcp-github"), "mcp": doc}) == fx.failed(_not_granted, [])

	# no ledger at all: not granted, and then not configured either, said at once (issue 20 §1.13)
	d := _launch(_pair, {
		"grant": fx.no_file(fx.grants_file, ["mcp-github", "builtin:coder"]),
		"active": fx.no_file(fx.activations_file, ["activations", "mcp-github", "builtin:coder"]),
		"mcp": fx.no_file(fx.mcp_file, []),
	})
	d.error.code == "AGENT_NOT_GRANTED"
	d.error.fix == _not_granted.fix
	startswith(d.error.summary, concat("", [_not_granted.summary, "; then "]))
	contains(d.error.summary, "(fix: grantwire configure mcp-github")
	d.error.then.code == "NOT_CONNECTED"
	c := _launch(object.union(_pair, {"check": true}), {
		"grant": fx.no_file(fx.grants_file, ["mcp-github", "builtin:coder"]),
		"active": fx.no_file(fx.activations_file, ["activations", "mcp-github", "builtin:coder"]),
		"mcp": fx.no_file(fx.mcp_file, []),
	})
	contains(c.result.refusal.summary, "(fix: grantwire configure mcp-github")
}

test_a_granted_agent_must_be_active if {
	doc := _doc({"mcp-github": _github(["GITHUB_TOKEN"])})
	_launch(_pair, {"grant": _granted("mcp-github"), "active": _inactive("mcp-github"), "mcp": doc}) == fx.failed(_not_active, [])

	# an entry that is not true is not an activation
	f := {"grant": _granted("mcp-github"), "active": fx.entry(fx.activations_file, ["activations", "mcp-github", "builtin:coder"], false), "mcp": doc}
	_launch(_pair, f) == fx.failed(_not_active, [])
}

test_a_local_server_must_be_configured_with_its_required_keys if {
	_launch(_pair, _gate("mcp-github", fx.no_file(fx.mcp_file, []))) == fx.failed(
		fx.err(
			"NOT_CONNECTED", "mcp-github is not configured", "grantwire configure mcp-github --from-stdin",
			{"connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"]},
		),
		[],
	)
	_launch(_pair, _gate("mcp-github", _doc({"mcp-github": _github(["GITHUB_HOST"])}))) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: mcp-github lacks GITHUB_TOKEN", "grantwire configure mcp-github --from-stdin",
			{"connector": "mcp-github", "missing_keys": ["GITHUB_TOKEN"]},
		),
		[],
	)

	# a server that takes no key still needs its entry: configuring it is one command
	m := {"connector": "mcp-memory", "agent": "builtin:coder"}
	_launch(m, _gate("mcp-memory", _doc({}))).error.fix == "grantwire configure mcp-memory"
}

test_a_server_without_a_command_is_refused if {
	cat := {"connectors": fx.patch(fx.catalog.connectors, {"mcp-memory": object.remove(fx.catalog.connectors["mcp-memory"], ["command"])})}
	d := fx.decide_with(fx.q1("launch", {"connector": "mcp-memory", "agent": "builtin:coder"}, _gate("mcp-memory", _doc({"mcp-memory": {"env": {}}}))), cat)
	d == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: mcp-memory has no command: neither mcp_servers.json nor the catalog says how to start it",
			"", {"connector": "mcp-memory"},
		),
		[],
	)
}

test_launch_reads_the_values_and_answers_references if {
	f := _gate("mcp-github", _doc({"mcp-github": _github(["GITHUB_TOKEN", "GITHUB_HOST"])}))
	_launch(_pair, f) == fx.need([
		{"key": "secret|GITHUB_HOST", "kind": "keyring.get", "user": "mcp-github:GITHUB_HOST", "fresh": true},
		{"key": "secret|GITHUB_TOKEN", "kind": "keyring.get", "user": "mcp-github:GITHUB_TOKEN", "fresh": true},
	])
	_launch(_pair, object.union(f, _stored)) == fx.done(
		{
			"connector": "mcp-github", "agent": "builtin:coder", "type": "mcp_server", "ready": true, "scopes": ["use"],
			"command": "npx", "args": ["-y", "server-github"], "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"],
			"env": {"GITHUB_HOST": {"$ref": "secret|GITHUB_HOST#value"}, "GITHUB_TOKEN": {"$ref": "secret|GITHUB_TOKEN#value"}},
		},
		[],
	)

	# a value missing from the store fails closed
	_launch(_pair, fx.patch(object.union(f, _stored), {"secret|GITHUB_TOKEN": fx.absent})) == fx.failed(
		fx.err(
			"NOT_CONNECTED", "mcp-github is not configured", "grantwire configure mcp-github --from-stdin",
			{"connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"]},
		),
		[],
	)
}

test_the_entry_says_how_to_start_the_server if {
	# the user's entry wins (legacy "servers" member too) ...
	own := {"command": "/opt/gh-mcp", "args": ["--stdio", "--ro"], "env": {"GITHUB_TOKEN": _ref("GITHUB_TOKEN")}}
	f := object.union(_gate("mcp-github", fx.entry(fx.mcp_file, [], {"servers": {"mcp-github": own}})), _stored)
	d := _launch(_pair, f)
	d.result.command == "/opt/gh-mcp"
	d.result.args == ["--stdio", "--ro"]
	d.result.env == {"GITHUB_TOKEN": {"$ref": "secret|GITHUB_TOKEN#value"}}

	# ... and the catalog stands in for what it lacks or garbles
	odd := {"command": "", "args": ["ok", 7], "env": {"GITHUB_TOKEN": _ref("GITHUB_TOKEN")}}
	e := _launch(_pair, fx.patch(f, {"mcp": _doc({"mcp-github": odd})}))
	e.result.command == "npx"
	e.result.args == ["-y", "server-github"]
}

test_check_reads_no_secret_and_answers_refusals if {
	c := object.union(_pair, {"check": true})
	f := _gate("mcp-github", _doc({"mcp-github": _github(["GITHUB_TOKEN"])}))
	_launch(c, f) == fx.done(
		{"connector": "mcp-github", "agent": "builtin:coder", "type": "mcp_server", "ready": true, "scopes": ["use"], "env_keys": ["GITHUB_TOKEN"]},
		[],
	)
	_launch(c, fx.patch(f, {"active": _inactive("mcp-github")})) == fx.done(
		{"connector": "mcp-github", "agent": "builtin:coder", "type": "mcp_server", "ready": false, "refusal": _not_active},
		[],
	)
	_launch(c, fx.patch(f, {"mcp": _doc({})})).result.refusal.code == "NOT_CONNECTED"

	# what is not a refusal of the gate stays an error
	_launch({"connector": "google", "agent": "builtin:coder", "check": true}, _gate("google", fx.no_file(fx.mcp_file, []))).error.code == "CONFIGURATION"
}

test_a_remote_server_passes_the_same_gate if {
	r := {"connector": "mcp-remote", "agent": "builtin:coder"}
	fx.decide(fx.q("launch", r, {})).needs[0].path == ["mcp-remote", "builtin:coder"]
	_launch(r, _gate("mcp-remote", fx.no_file(fx.mcp_file, []))) == fx.done(
		{"connector": "mcp-remote", "agent": "builtin:coder", "type": "mcp_remote", "ready": true, "scopes": ["use"], "url": "https://mcp.example.com/mcp"},
		[],
	)
	_launch(r, {"grant": _no_grant("mcp-remote"), "active": _inactive("mcp-remote"), "mcp": fx.no_file(fx.mcp_file, [])}).error.fix == "grantwire activations activate mcp-remote builtin:coder --scopes use"
	_launch(r, {"grant": _granted("mcp-remote"), "active": _inactive("mcp-remote"), "mcp": fx.no_file(fx.mcp_file, [])}).error.code == "AGENT_NOT_ACTIVE"
	_launch(object.union(r, {"check": true}), _gate("mcp-remote", fx.no_file(fx.mcp_file, []))).result.ready == true
}

# A remote server a person added (mcp_remote.json) is an MCP server too (issue 20 §1.4).
test_an_added_remote_server_is_known if {
	r := {"connector": "notes", "agent": "builtin:coder"}
	f := object.union(_gate("notes", fx.no_file(fx.mcp_file, [])), {"mcp_remote": fx.entry("mcp_remote.json", [], {"servers": {"notes": {"url": "https://notes.example.com/mcp"}}})})
	_launch(r, f).result.type == "mcp_remote"
	_launch(r, _gate("notes", fx.no_file(fx.mcp_file, []))).error.code == "UNKNOWN_CONNECTOR"
}

test_the_gate_helpers if {
	launch.gate_needs("mcp-remote", "builtin:chat") == [
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["mcp-remote", "builtin:chat"]},
		{"key": "active", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations", "mcp-remote", "builtin:chat"]},
	]
	launch.refusal({"grant": _no_grant("mcp-github"), "active": _active("mcp-github")}, "mcp-github", "builtin:coder") == _not_granted
	launch.refusal({"grant": _granted("mcp-github"), "active": _inactive("mcp-github")}, "mcp-github", "builtin:coder") == _not_active
	not launch.refusal({"grant": _granted("mcp-github"), "active": _active("mcp-github")}, "mcp-github", "builtin:coder")
}
