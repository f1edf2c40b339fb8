package grantwire.mcp_test

import data.grantwire.fixtures_test as fx
import data.grantwire.mcp

_cfg := {"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN"]}

_cred := {"connector": "mcp-github", "agent": "builtin:chat"}

_configure(args, f) := d if {
	d := mcp.configure with input as {"op": "configure_mcp", "args": args, "facts": f}
		with data.catalog as fx.catalog
}

_credential(args, f) := d if {
	d := mcp.credential with input as {"op": "credential", "args": args, "facts": f}
		with data.catalog as fx.catalog
}

_fail(err) := {"status": "done", "effects": [], "error": err}

_usage(m) := _fail({"code": "USAGE", "fix": "", "message": m})

_unknown := _fail({
	"code": "UNKNOWN_CONNECTOR", "connector": "nope", "fix": "grantwire catalog",
	"message": "unknown connector nope; fix: grantwire catalog",
})

_busy := _fail({
	"code": "BUSY", "connector": "mcp-github", "fix": "", "retry_after_ms": 500,
	"message": "another grantwire operation holds the mcp-github lock; nothing was changed, retry shortly",
})

# ---------------------------------------------------------------------------------------
# configure_mcp

test_configure_usage if {
	every args in [
		{"env_keys": ["GITHUB_TOKEN"]},
		{"connector": "mcp-github"},
		fx.set(_cfg, "env_keys", "GITHUB_TOKEN"),
		fx.set(_cfg, "env_keys", [1]),
		fx.set(_cfg, "env_keys", [""]),
	] {
		_configure(args, {}) == _usage("usage: configure_mcp needs connector and env_keys (names of the values passed)")
	}
}

test_configure_unknown_connector if {
	_configure(fx.set(_cfg, "connector", "nope"), {}) == _unknown
}

test_configure_only_local_mcp_servers if {
	_configure(fx.set(_cfg, "connector", "google"), {}) == _fail({
		"code": "CONFIGURATION", "connector": "google", "fix": "",
		"message": "configuration error: google is not a local MCP server (type oauth_pkce)",
	})
	_configure(fx.set(_cfg, "connector", "mcp-remote"), {}).error.message == "configuration error: mcp-remote is not a local MCP server (type mcp_remote)"
}

test_configure_refuses_undeclared_keys if {
	_configure(fx.set(_cfg, "env_keys", ["GITHUB_TOKEN", "FOO", "BAR"]), {}) == _fail({
		"code": "CONFIGURATION", "connector": "mcp-github", "unknown_keys": ["BAR", "FOO"],
		"fix": "grantwire configure mcp-github --from-stdin",
		"message": "configuration error: mcp-github does not take BAR, FOO; it takes GITHUB_HOST, GITHUB_TOKEN; fix: grantwire configure mcp-github --from-stdin",
	})
	_configure({"connector": "mcp-memory", "env_keys": ["X"]}, {}) == _fail({
		"code": "CONFIGURATION", "connector": "mcp-memory", "unknown_keys": ["X"],
		"fix": "grantwire configure mcp-memory",
		"message": "configuration error: mcp-memory does not take X; it takes no environment values; fix: grantwire configure mcp-memory",
	})
}

test_configure_needs_every_required_key if {
	err := _fail({
		"code": "CONFIGURATION", "connector": "mcp-github", "missing_keys": ["GITHUB_TOKEN"],
		"fix": "grantwire configure mcp-github --from-stdin",
		"message": "configuration error: mcp-github needs GITHUB_TOKEN; fix: grantwire configure mcp-github --from-stdin",
	})
	_configure(fx.set(_cfg, "env_keys", []), {}) == err
	_configure(fx.set(_cfg, "env_keys", ["GITHUB_HOST"]), {}) == err
}

test_configure_takes_the_lock if {
	_configure(_cfg, {}) == {"status": "need", "needs": [{"key": "lock", "kind": "lock.acquire", "name": "mcp-github", "wait_ms": 5000}]}
	_configure(_cfg, {"lock": "busy"}) == _busy
	_configure(_cfg, {"lock": "timeout"}) == _busy
}

test_configure_stores_references_only if {
	_configure(fx.set(_cfg, "env_keys", ["GITHUB_TOKEN", "GITHUB_HOST", "GITHUB_TOKEN"]), {"lock": "held"}) == {
		"status": "done",
		"result": {"connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"]},
		"effects": [
			{
				"kind": "mcp.put", "connector": "mcp-github", "command": "npx", "args": ["-y", "server-github"],
				"env": {
					"GITHUB_HOST": {"$ref": "arg#env.GITHUB_HOST"},
					"GITHUB_TOKEN": {"$ref": "arg#env.GITHUB_TOKEN"},
				},
			},
			{"kind": "event.emit", "type": "connector.configured", "payload": {"connector_id": "mcp-github", "account_id": ""}},
		],
	}
}

test_configure_a_server_without_env if {
	d := _configure({"connector": "mcp-memory", "env_keys": []}, {"lock": "held"})
	d.result == {"connector": "mcp-memory", "env_keys": []}
	d.effects[0] == {"kind": "mcp.put", "connector": "mcp-memory", "command": "npx", "args": ["-y", "server-memory"], "env": {}}
}

# ---------------------------------------------------------------------------------------
# credential

test_credential_usage if {
	every args in [{}, {"connector": "mcp-github"}, {"agent": "builtin:chat"}, fx.set(_cred, "agent", 7), fx.set(_cred, "connector", 7)] {
		_credential(args, {}) == _usage("usage: credential needs connector and agent")
	}
}

test_credential_unknown_connector if {
	_credential(fx.set(_cred, "connector", "nope"), {}) == _unknown
}

test_credential_only_for_local_mcp_servers if {
	every c in ["google", "mcp-remote"] {
		_credential(fx.set(_cred, "connector", c), {}) == _fail({
			"code": "CONFIGURATION", "connector": c, "fix": "",
			"message": concat("", ["configuration error: ", c, " is not a local MCP server; use get_access_token for OAuth connectors"]),
		})
	}
}

test_credential_reads_grant_and_configuration if {
	_credential(_cred, {}) == {"status": "need", "needs": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": ["mcp-github", "builtin:chat"]},
		{"key": "mcp", "kind": "mcp.get", "connector": "mcp-github"},
	]}
}

test_ungranted_agent_gets_no_credential_and_learns_nothing if {
	err := _fail({
		"code": "AGENT_NOT_GRANTED", "connector": "mcp-github", "agent": "builtin:chat",
		"missing_scopes": ["use"], "full_scopes": ["use"],
		"fix": "grantwire grants grant mcp-github builtin:chat --scopes use",
		"message": "agent builtin:chat is not granted use on mcp-github; fix: grantwire grants grant mcp-github builtin:chat --scopes use",
	})
	_credential(_cred, {"grant": fx.absent, "mcp": fx.absent}) == err
	_credential(_cred, {"grant": fx.absent, "mcp": {"found": true, "keys": ["GITHUB_TOKEN"]}}) == err
}

_not_configured := _fail({
	"code": "NOT_CONNECTED", "connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"],
	"fix": "grantwire configure mcp-github --from-stdin",
	"message": "mcp-github is not configured; fix: grantwire configure mcp-github --from-stdin",
})

_configured := {"found": true, "keys": ["GITHUB_TOKEN"], "command": "npx", "args": ["-y", "server-github"]}

test_unconfigured_server_is_not_connected if {
	_credential(_cred, {"grant": fx.entry([]), "mcp": fx.absent}) == _not_configured
}

test_secrets_are_read_only_after_the_grant_check if {
	_credential(_cred, {"grant": fx.entry(["use"]), "mcp": _configured}) == {"status": "need", "needs": [
		{"key": "secrets", "kind": "mcp.secrets", "connector": "mcp-github"},
	]}
}

test_missing_secret_values_fail_closed if {
	_credential(_cred, {"grant": fx.entry(["use"]), "mcp": _configured, "secrets": fx.absent}) == _not_configured
}

test_credential_returns_references if {
	_credential(_cred, {"grant": fx.entry(["use"]), "mcp": _configured, "secrets": {"found": true, "keys": ["GITHUB_TOKEN"]}}) == {
		"status": "done", "effects": [],
		"result": {
			"connector": "mcp-github", "agent": "builtin:chat", "command": "npx", "args": ["-y", "server-github"],
			"env": {"GITHUB_TOKEN": {"$ref": "secrets#GITHUB_TOKEN"}},
		},
	}
}

test_credential_defaults_command_and_args if {
	d := _credential(_cred, {"grant": fx.entry(["use"]), "mcp": {"found": true, "keys": []}, "secrets": {"found": true, "keys": []}})
	d.result == {"connector": "mcp-github", "agent": "builtin:chat", "command": "", "args": [], "env": {}}
}
