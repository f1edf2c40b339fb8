package grantwire.mcp_test

import data.grantwire.fixtures_test as fx
import data.grantwire.mcp

_doc(servers) := fx.entry(fx.mcp_file, [], {"mcpServers": servers})

_ref(k) := {"$keyring": concat("", ["grantwire.connections:mcp-github:", k])}

_github(keys) := {"command": "npx", "args": ["-y", "server-github"], "env": {k: _ref(k) | some k in keys}}

# ---------------------------------------------------------------------------------------
# helpers

test_entries_and_keys if {
	mcp.env_spec("mcp-github")[0].key == "GITHUB_TOKEN" with data.catalog as fx.catalog
	mcp.env_spec("mcp-memory") == [] with data.catalog as fx.catalog
	d := _doc({"mcp-github": _github(["GITHUB_TOKEN", "GITHUB_HOST"]), "odd": "x"})
	mcp.entry(d, "mcp-github") == _github(["GITHUB_TOKEN", "GITHUB_HOST"])
	not mcp.entry(d, "odd")
	not mcp.entry(d, "none")
	not mcp.entry(fx.no_file(fx.mcp_file, []), "mcp-github")
	mcp.entry(fx.entry(fx.mcp_file, [], {"servers": {"x": {}}}), "x") == {}
	mcp.keys(d, "mcp-github") == ["GITHUB_HOST", "GITHUB_TOKEN"]
	mcp.keys(_doc({"x": {"env": "no"}}), "x") == []
	mcp.keys(d, "none") == []
	mcp.missing_keys("mcp-github", _doc({})) == ["GITHUB_TOKEN"] with data.catalog as fx.catalog
	mcp.missing_keys("mcp-github", d) == [] with data.catalog as fx.catalog
	mcp.configure_fix("mcp-github") == "grantwire configure mcp-github --from-stdin" with data.catalog as fx.catalog
	mcp.configure_fix("mcp-memory") == "grantwire configure mcp-memory" with data.catalog as fx.catalog
}

# ---------------------------------------------------------------------------------------
# configure_mcp

_configure(args, f) := fx.decide(fx.q1("configure_mcp", args, object.union({"probe": fx.absent}, f)))

_values(keys) := {"arg": fx.arg({concat("", ["env.", k]): "6161616161616161" | some k in keys})}

_args := {"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN"]}

test_configure_usage if {
	msg := "configure_mcp needs connector and env_keys (names of the values passed)"
	every args in [{"env_keys": []}, {"connector": "mcp-github"}, {"connector": "mcp-github", "env_keys": "GITHUB_TOKEN"}, {"connector": "mcp-github", "env_keys": [""]}, {"connector": "mcp-github", "env_keys": [1]}] {
		_configure(args, {}) == fx.failed(fx.usage(msg), [])
	}
	_configure({"connector": "nope", "env_keys": []}, {}).error.code == "UNKNOWN_CONNECTOR"
	_configure({"connector": "mcp-remote", "env_keys": []}, {}) == fx.failed(
		fx.err("CONFIGURATION", "configuration error: mcp-remote is not a local MCP server (type mcp_remote)", "", {"connector": "mcp-remote"}),
		[],
	)
	_configure({"connector": "google", "env_keys": []}, {}).error.message == "configuration error: google is not a local MCP server (type oauth_pkce)"
}

test_configure_checks_the_keys if {
	_configure({"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN", "FOO", "BAR"]}, _values(["GITHUB_TOKEN", "FOO", "BAR"])) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: mcp-github does not take BAR, FOO; it takes GITHUB_HOST, GITHUB_TOKEN",
			"grantwire configure mcp-github --from-stdin", {"connector": "mcp-github", "unknown_keys": ["BAR", "FOO"]},
		),
		[],
	)
	_configure({"connector": "mcp-memory", "env_keys": ["X"]}, _values(["X"])) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: mcp-memory does not take X; it takes no environment values",
			"grantwire configure mcp-memory", {"connector": "mcp-memory", "unknown_keys": ["X"]},
		),
		[],
	)
	_configure({"connector": "mcp-github", "env_keys": ["GITHUB_HOST"]}, _values(["GITHUB_HOST"])) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: mcp-github needs GITHUB_TOKEN",
			"grantwire configure mcp-github --from-stdin", {"connector": "mcp-github", "missing_keys": ["GITHUB_TOKEN"]},
		),
		[],
	)
	_configure({"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN", "GITHUB_HOST"]}, _values(["GITHUB_TOKEN"])) == fx.failed(
		fx.usage("configure_mcp was given no value for GITHUB_HOST"),
		[],
	)
	_configure(_args, {}) == fx.failed(fx.usage("configure_mcp was given no value for GITHUB_TOKEN"), [])
}

# Issue 20 §2.2: the fix of a missing key keeps the values given as arguments (quoted
# for the shell), so that running it asks only for what is still missing.
test_configure_fix_keeps_the_given_values if {
	_configure({"connector": "mcp-github", "env_keys": ["GITHUB_HOST"], "set": {"GITHUB_HOST": "ghe.example.com"}}, _values(["GITHUB_HOST"])) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: mcp-github needs GITHUB_TOKEN",
			"grantwire configure mcp-github --set GITHUB_HOST=ghe.example.com --from-stdin", {"connector": "mcp-github", "missing_keys": ["GITHUB_TOKEN"]},
		),
		[],
	)
	_configure({"connector": "mcp-github", "env_keys": ["GITHUB_HOST"], "set": {"GITHUB_HOST": "a b'c"}}, _values(["GITHUB_HOST"])).error.fix == `grantwire configure mcp-github --set 'GITHUB_HOST=a b'\''c' --from-stdin`
	_configure({"connector": "mcp-github", "env_keys": ["GITHUB_HOST"], "set": {}}, _values(["GITHUB_HOST"])).error.fix == "grantwire configure mcp-github --from-stdin"
	msg := "configure_mcp's set holds the values given as arguments: non-secret keys of env_keys, as strings"
	every set in [[], {"GITHUB_HOST": 1}, {"GITHUB_TOKEN": "t"}, {"OTHER": "x"}] {
		_configure({"connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"], "set": set}, _values(["GITHUB_HOST", "GITHUB_TOKEN"])) == fx.failed(fx.usage(msg), [])
	}
}

test_configure_under_the_lock if {
	fx.decide(fx.q("configure_mcp", _args, _values(["GITHUB_TOKEN"]))) == fx.need([{"key": "probe", "kind": "keyring.get", "user": "mcp-github:default", "fresh": true}])
	fx.decide(fx.q("configure_mcp", _args, object.union(_values(["GITHUB_TOKEN"]), {"probe": fx.absent}))) == fx.need([
		{"key": "lock", "kind": "lock.acquire", "name": "mcp-github", "wait_ms": 5000},
		{"key": "mcp", "kind": "ledger.read", "ledger": "mcp_servers.json", "path": [], "after": "lock"},
		{"key": "keyring", "kind": "keyring.info", "after": "lock"},
	])
	_configure(_args, object.union(_values(["GITHUB_TOKEN"]), {"lock": "busy"})).error.code == "BUSY"
}

_locked(keys, doc) := object.union(_values(keys), {"lock": "held", "mcp": doc, "keyring": {"service": "grantwire.connections"}})

_configured := {"kind": "event.emit", "type": "connector.configured", "payload": {"connector_id": "mcp-github", "account_id": ""}}

test_configure if {
	_configure(_args, _locked(["GITHUB_TOKEN"], fx.no_file(fx.mcp_file, []))) == fx.done(
		{"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN"]},
		[
			{"kind": "keyring.set", "user": "mcp-github:GITHUB_TOKEN", "value": {"$ref": "arg#env.GITHUB_TOKEN"}},
			{"kind": "ledger.write", "ledger": "mcp_servers.json", "ops": [{"path": ["mcpServers", "mcp-github"], "value": _github(["GITHUB_TOKEN"])}]},
			_configured,
		],
	)
}

test_reconfigure_deletes_dropped_keys if {
	doc := fx.entry(fx.mcp_file, [], {"servers": {"mcp-github": _github(["GITHUB_TOKEN", "GITHUB_HOST"])}})
	_configure(_args, _locked(["GITHUB_TOKEN"], doc)) == fx.done(
		{"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN"]},
		[
			{"kind": "keyring.set", "user": "mcp-github:GITHUB_TOKEN", "value": {"$ref": "arg#env.GITHUB_TOKEN"}},
			{"kind": "keyring.delete", "user": "mcp-github:GITHUB_HOST"},
			{"kind": "ledger.write", "ledger": "mcp_servers.json", "ops": [{"path": ["servers", "mcp-github"], "value": _github(["GITHUB_TOKEN"])}]},
			_configured,
		],
	)
}

test_configure_a_server_without_values if {
	d := _configure({"connector": "mcp-memory", "env_keys": []}, object.union(_locked([], _doc({})), {"keyring": {"service": "gaia.connections"}}))
	d.effects == [
		{"kind": "ledger.write", "ledger": "mcp_servers.json", "ops": [{"path": ["mcpServers", "mcp-memory"], "value": {"command": "npx", "args": ["-y", "server-memory"], "env": {}}}]},
		{"kind": "event.emit", "type": "connector.configured", "payload": {"connector_id": "mcp-memory", "account_id": ""}},
	]
	k := _configure(_args, object.union(_locked(["GITHUB_TOKEN"], _doc({})), {"keyring": {"service": "gaia.connections"}}))
	k.effects[1].ops[0].value.env == {"GITHUB_TOKEN": {"$keyring": "gaia.connections:mcp-github:GITHUB_TOKEN"}}
}

# ---------------------------------------------------------------------------------------
# credential

_credential(args, f) := fx.decide(fx.q1("credential", args, f))

_pair := {"connector": "mcp-github", "agent": "builtin:coder"}

_granted := fx.entry(fx.grants_file, ["mcp-github", "builtin:coder"], ["use"])

test_credential_usage if {
	every args in [{}, {"connector": "mcp-github"}, {"agent": "builtin:coder"}, {"connector": 1, "agent": "builtin:coder"}] {
		_credential(args, {}) == fx.failed(fx.usage("credential needs connector and agent"), [])
	}
	_credential({"connector": "nope", "agent": "builtin:coder"}, {}).error.code == "UNKNOWN_CONNECTOR"
	_credential({"connector": "mcp-remote", "agent": "builtin:coder"}, {}) == fx.failed(
		fx.err("CONFIGURATION", "configuration error: mcp-remote is not a local MCP server; use get_access_token for OAuth connectors", "", {"connector": "mcp-remote"}),
		[],
	)
}

test_credential_is_read_only_after_the_grant if {
	fx.decide(fx.q("credential", _pair, {})) == fx.need([
		{"key": "grant", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": ["mcp-github", "builtin:coder"]},
		{"key": "mcp", "kind": "ledger.read", "ledger": "mcp_servers.json", "path": []},
	])
	_credential(_pair, {"grant": fx.no_entry(fx.grants_file, ["mcp-github", "builtin:coder"]), "mcp": _doc({"mcp-github": _github(["GITHUB_TOKEN"])})}) == fx.failed(
		fx.err(
			"AGENT_NOT_GRANTED", "agent builtin:coder is not granted use on mcp-github",
			"grantwire grants grant mcp-github builtin:coder --scopes use",
			{"connector": "mcp-github", "agent": "builtin:coder", "missing_scopes": ["use"], "full_scopes": ["use"]},
		),
		[],
	)
}

test_credential_of_an_unconfigured_server if {
	_credential(_pair, {"grant": _granted, "mcp": _doc({})}) == fx.failed(
		fx.err(
			"NOT_CONNECTED", "mcp-github is not configured", "grantwire configure mcp-github --from-stdin",
			{"connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"]},
		),
		[],
	)
}

test_credential if {
	f := {"grant": _granted, "mcp": _doc({"mcp-github": _github(["GITHUB_TOKEN", "GITHUB_HOST"])})}
	_credential(_pair, f) == fx.need([
		{"key": "secret|GITHUB_HOST", "kind": "keyring.get", "user": "mcp-github:GITHUB_HOST", "fresh": true},
		{"key": "secret|GITHUB_TOKEN", "kind": "keyring.get", "user": "mcp-github:GITHUB_TOKEN", "fresh": true},
	])
	g := object.union(f, {
		"secret|GITHUB_HOST": fx.slot("secret|GITHUB_HOST", "v1", null),
		"secret|GITHUB_TOKEN": fx.slot("secret|GITHUB_TOKEN", "v2", null),
	})
	_credential(_pair, g) == fx.done(
		{
			"connector": "mcp-github", "agent": "builtin:coder", "command": "npx", "args": ["-y", "server-github"],
			"env": {"GITHUB_HOST": {"$ref": "secret|GITHUB_HOST#value"}, "GITHUB_TOKEN": {"$ref": "secret|GITHUB_TOKEN#value"}},
		},
		[],
	)

	# a value missing from the store fails closed
	_credential(_pair, fx.patch(g, {"secret|GITHUB_TOKEN": fx.absent})).error.code == "NOT_CONNECTED"

	# an entry without command or args
	m := {"grant": fx.entry(fx.grants_file, ["mcp-memory", "builtin:coder"], []), "mcp": _doc({"mcp-memory": {}})}
	_credential({"connector": "mcp-memory", "agent": "builtin:coder"}, m) == fx.done(
		{"connector": "mcp-memory", "agent": "builtin:coder", "command": "", "args": [], "env": {}},
		[],
	)
}

# ---------------------------------------------------------------------------------------
# mcp_list

_list(args, f) := fx.decide(fx.q1("mcp_list", args, f))

_list_facts := {
	"mcp": _doc({
		"mcp-github": _github(["GITHUB_HOST"]),
		"custom-srv": {"command": "/opt/srv", "args": ["--x"], "env": {}},
		"bare": {},
	}),
	"grants": fx.entry(fx.grants_file, [], {"mcp-github": {"builtin:coder": ["use"]}, "mcp-memory": {"builtin:coder": ["use"]}, "bare": {"builtin:chat": ["use"]}}),
	"actives": fx.entry(fx.activations_file, ["activations"], {"mcp-github": {"builtin:coder": true, "builtin:chat": true}, "mcp-memory": {"builtin:coder": true}}),
}

_github_row := {
	"id": "mcp-github", "name": "GitHub (MCP)", "in_catalog": true, "command": "npx", "args": ["-y", "server-github"],
	"configured": true, "env_keys": ["GITHUB_HOST"], "missing_keys": ["GITHUB_TOKEN"],
	"grants": {"builtin:coder": ["use"]}, "active_for": ["builtin:chat", "builtin:coder"],
}

test_mcp_list if {
	_list({"agent": 5}, {}) == fx.failed(fx.usage("mcp_list takes an optional agent"), [])
	_list({}, {}) == fx.need([
		{"key": "mcp", "kind": "ledger.read", "ledger": "mcp_servers.json", "path": []},
		{"key": "grants", "kind": "ledger.read", "ledger": "connectors/grants.json", "path": []},
		{"key": "actives", "kind": "ledger.read", "ledger": "connectors/activations.json", "path": ["activations"]},
	])
	f := {
		"mcp": _doc({"mcp-github": _github(["GITHUB_HOST"])}),
		"grants": fx.entry(fx.grants_file, [], {"mcp-github": {"builtin:coder": ["use"]}}),
		"actives": fx.entry(fx.activations_file, ["activations"], {"mcp-github": {"builtin:coder": true, "builtin:chat": true}}),
	}
	_list({}, f) == fx.done({"servers": [_github_row]}, [])
	_list({"agent": "builtin:coder"}, f) == fx.done({"servers": [_github_row]}, [])

	# granted but not active, active but not granted
	_list({"agent": "builtin:chat"}, f).result.servers == []

	# an entry without command or args takes the catalog's
	m := fx.patch(f, {"mcp": _doc({"mcp-memory": {"env": {}}})})
	_list({}, m).result.servers == [{
		"id": "mcp-memory", "name": "Memory", "in_catalog": true, "command": "npx", "args": ["-y", "server-memory"],
		"configured": true, "env_keys": [], "missing_keys": [], "grants": {}, "active_for": [],
	}]
	_list({"agent": null}, {"mcp": fx.no_file(fx.mcp_file, []), "grants": fx.no_file(fx.grants_file, []), "actives": fx.no_file(fx.activations_file, ["activations"])}) == fx.done({"servers": []}, [])
}

# Servers of mcp_servers.json that the catalog does not know are listed with
# "in_catalog": false (policy bug: `"in_catalog": catalog.known(c)` is undefined, not
# false, for them, so their row is undefined and they are never listed; see the report).
test_mcp_list_servers_outside_the_catalog if {
	[s.id | some s in _list({}, _list_facts).result.servers] == ["bare", "custom-srv", "mcp-github"]
	_list({}, _list_facts).result.servers[1] == {
		"id": "custom-srv", "name": "custom-srv", "in_catalog": false, "command": "/opt/srv", "args": ["--x"],
		"configured": true, "env_keys": [], "missing_keys": [], "grants": {}, "active_for": [],
	}
}

# With an agent, the servers it sees include catalog servers not configured yet, with
# "configured": false (policy bug: `"configured": _configured(c)` is undefined, not false,
# so such a row is undefined and dropped; see the report).
test_mcp_list_for_an_agent if {
	d := _list({"agent": "builtin:coder"}, _list_facts)
	[s.id | some s in d.result.servers] == ["mcp-github", "mcp-memory"]
	d.result.servers[1] == {
		"id": "mcp-memory", "name": "Memory", "in_catalog": true, "command": "npx", "args": ["-y", "server-memory"],
		"configured": false, "env_keys": [], "missing_keys": [], "grants": {"builtin:coder": ["use"]}, "active_for": ["builtin:coder"],
	}
}
