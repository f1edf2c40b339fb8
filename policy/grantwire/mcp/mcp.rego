# METADATA
# title: MCP servers
# description: |
#   Local MCP servers (`mcp_server`) take API keys in their environment. `configure_mcp`
#   stores the values in the credential store (the shell writes only keyring references to
#   mcp_servers.json); `credential` hands them to a granted agent for injection into the
#   server's environment. Values are read only after the grant check, and only as references.
package grantwire.mcp

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.scopes
import data.grantwire.step

_f := object.get(input, "facts", {})

_c := input.args.connector

_spec := catalog.connectors[_c]

_env_spec := e if {
	e := _spec.env
	is_array(e)
} else := []

_allowed := {k | some e in _env_spec; k := e.key}

_required := {k | some e in _env_spec; e.required == true; k := e.key}

_keys := scopes.sorted(input.args.env_keys)

_configure_args if {
	is_string(_c)
	is_array(input.args.env_keys)
	every k in input.args.env_keys {
		is_string(k)
		count(k) > 0
	}
}

_unknown_keys := sort([k | some k in _keys; not k in _allowed])

_missing_keys := sort([k | some k in _required; not k in scopes.set(_keys)])

_takes := concat("", ["it takes ", concat(", ", sort(_allowed))]) if {
	count(_allowed) > 0
} else := "it takes no environment values"

# Values come on stdin (the CLI never takes secrets from arguments; on a terminal it asks).
_configure_fix := concat("", ["grantwire configure ", _c, " --from-stdin"]) if count(_allowed) > 0

else := concat("", ["grantwire configure ", _c])

# METADATA
# title: configure_mcp decision
# description: |
#   Store an MCP server's environment (every declared required key, no undeclared key), under
#   the connector's lock; keys dropped from a previous configuration are deleted.
# entrypoint: true
configure := step.fail(errors.usage("configure_mcp needs connector and env_keys (names of the values passed)"), []) if {
	not _configure_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(
		concat("", [_c, " is not a local MCP server (type ", catalog.type_of(_c), ")"]),
		"", {"connector": _c},
	),
	[],
) if {
	_spec.type != "mcp_server"
} else := step.fail(
	errors.configuration(
		concat("", [_c, " does not take ", concat(", ", _unknown_keys), "; ", _takes]),
		_configure_fix,
		{"connector": _c, "unknown_keys": _unknown_keys},
	),
	[],
) if {
	count(_unknown_keys) > 0
} else := step.fail(
	errors.configuration(
		concat("", [_c, " needs ", concat(", ", _missing_keys)]),
		_configure_fix,
		{"connector": _c, "missing_keys": _missing_keys},
	),
	[],
) if {
	count(_missing_keys) > 0
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, [facts.lock("lock", _c, 5000)])
	count(m) > 0
} else := step.done({"connector": _c, "env_keys": _keys}, [
	{
		"kind": "mcp.put", "connector": _c,
		"command": object.get(_spec, "command", ""),
		"args": object.get(_spec, "args", []),
		"env": {k: facts.ref("arg", concat("", ["env.", k])) | some k in _keys},
	},
	{"kind": "event.emit", "type": "connector.configured", "payload": {"connector_id": _c, "account_id": ""}},
])

_a := input.args.agent

# A rule, so that a missing connector or agent is refused too (a negated call on an
# undefined argument is false, not true).
_credential_args if {
	is_string(_c)
	is_string(_a)
}

# METADATA
# title: credential decision
# description: |
#   The environment of a configured MCP server, for an agent that holds a grant for it
#   (as references the shell resolves from the credential store).
# entrypoint: true
credential := step.fail(errors.usage("credential needs connector and agent"), []) if {
	not _credential_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(
		concat("", [_c, " is not a local MCP server; use get_access_token for OAuth connectors"]),
		"", {"connector": _c},
	),
	[],
) if {
	_spec.type != "mcp_server"
} else := step.need(m) if {
	m := facts.missing(_f, [facts.ledger("grant", "grants", [_c, _a]), facts.mcp("mcp", _c)])
	count(m) > 0
} else := step.fail(errors.agent_not_granted(_c, _a, ["use"], []), []) if {
	not _f.grant.found == true
} else := step.fail(errors.not_connected_mcp(_c, sort(_allowed)), []) if {
	not _f.mcp.found == true
} else := step.need([facts.mcp_secrets("secrets", _c)]) if {
	not facts.has(_f, "secrets")
} else := step.fail(errors.not_connected_mcp(_c, sort(_allowed)), []) if {
	not _f.secrets.found == true
} else := step.done(
	{
		"connector": _c, "agent": _a,
		"command": object.get(_f.mcp, "command", ""),
		"args": object.get(_f.mcp, "args", []),
		"env": {k: facts.ref("secrets", k) | some k in _f.secrets.keys},
	},
	[],
)
