# METADATA
# title: Launch gate
# description: |
#   Whether agent A may use MCP server S now, and what using it takes. `launch` is the gate
#   in front of `grantwire mcp run` (a local mcp_server started with its API keys in its
#   environment) and `grantwire mcp proxy` (a remote mcp_remote server reached with a
#   bearer token): the server must be an MCP server of the catalog, the agent must hold a
#   grant for it AND be active for it, and a local server must be configured with every
#   required key, each value still in the credential store. The credential store is read
#   only once everything else has passed, and only as references the host resolves: the
#   values never reach the policy, a result or a decision log. Every refusal carries the
#   command that fixes it. With check: true no secret is read and a refusal is a result
#   ({ready: false, refusal}), for surfaces that prepare a launch (grantwire mcp config).
package grantwire.launch

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
import data.grantwire.mcp
import data.grantwire.step
import data.grantwire.store

_f := object.get(input, "facts", {})

_c := input.args.connector

_a := input.args.agent

# A rule, so that a missing connector or agent is refused too (a negated call on an
# undefined argument is false, not true).
_launch_args if {
	is_string(_c)
	is_string(_a)
	_check_arg
}

_check_arg if object.get(input.args, "check", null) == null

_check_arg if is_boolean(input.args.check)

_check if input.args.check == true

_type := catalog.type_of(_c)

# METADATA
# title: gate needs
# description: |
#   The facts the gate judges for agent a on MCP server c: the pair's grant entry (key
#   "grant") and activation entry (key "active").
gate_needs(c, a) := [grants.grant_need("grant", c, a), grants.active_need("active", c, a)]

# METADATA
# title: gate refusal
# description: |
#   The gate's refusal from the facts of gate_needs: no grant (AGENT_NOT_GRANTED, fixed by
#   activating with --scopes use, which grants as well), else not active (AGENT_NOT_ACTIVE,
#   fixed by activating). Undefined when the agent may use the server. The same rule holds
#   for a local server (mcp run) and a remote one (mcp proxy).
refusal(f, c, a) := errors.mcp_not_granted(c, a) if {
	not f.grant.exists == true
} else := errors.agent_not_active(c, a) if {
	not f.active.value == true
}

_needs := array.concat(gate_needs(_c, _a), [facts.ledger("mcp", store.mcp_file, [])])

_local if _type == "mcp_server"

_entry := mcp.entry(_f.mcp, _c)

_spec := catalog.connectors[_c]

# The entry of mcp_servers.json says how to start the server (the user may have edited it);
# the catalog's command and args stand in for what it lacks.
_command := e.command if {
	e := _entry
	is_string(e.command)
	e.command != ""
} else := object.get(_spec, "command", "")

_server_args := e.args if {
	e := _entry
	is_array(e.args)
	every x in e.args {
		is_string(x)
	}
} else := object.get(_spec, "args", [])

_keys := mcp.keys(_f.mcp, _c) if _local

else := []

_missing := mcp.missing_keys(_c, _f.mcp)

_local_refusal := errors.not_connected_mcp(_c, sort([e.key | some e in mcp.env_spec(_c)])) if {
	not _entry
} else := errors.configuration(
	concat("", [_c, " lacks ", concat(", ", _missing)]),
	mcp.configure_fix(_c),
	{"connector": _c, "missing_keys": _missing},
) if {
	count(_missing) > 0
} else := errors.configuration(
	concat("", [_c, " has no command: neither mcp_servers.json nor the catalog says how to start it"]),
	"", {"connector": _c},
) if {
	_command == ""
}

_gate_refusals := [e] if {
	e := refusal(_f, _c, _a)
} else := []

_local_refusals := [e] if {
	_local
	e := _local_refusal
} else := []

_refusals := array.concat(_gate_refusals, _local_refusals)

# Every refusal at once (issue 20 §1.13): the first, with what the next one takes after it.
_refusal := _refusals[0] if {
	count(_refusals) == 1
} else := object.union(_refusals[0], {
	"summary": s,
	"message": concat("", [s, "; fix: ", _refusals[0].fix]),
	"then": _refusals[1],
}) if {
	count(_refusals) > 1
	s := concat("", [_refusals[0].summary, "; then ", _then_text(_refusals[1])])
}

_then_text(e) := concat("", [e.summary, " (fix: ", e.fix, ")"]) if e.fix != ""

else := e.summary

_secret_key(k) := facts.key(["secret", k])

_secret_needs := [facts.keyring_secret(_secret_key(k), store.mcp_user(_c, k)) | some k in _keys]

_all_stored if {
	every k in _keys {
		_f[_secret_key(k)].found == true
	}
}

_about := {"connector": _c, "agent": _a, "type": _type}

_ready := object.union(_about, {"ready": true, "scopes": _f.grant.value, "env_keys": _keys}) if {
	_local
} else := object.union(_about, {"ready": true, "scopes": _f.grant.value, "url": object.get(_spec, "url", "")})

_launch := object.union(_ready, {
	"command": _command,
	"args": _server_args,
	"env": {k: facts.ref(_secret_key(k), "value") | some k in _keys},
}) if {
	_local
} else := _ready

_not_mcp := errors.configuration(
	concat("", [
		_c, " is not an MCP server (type ", _type,
		"); agents get an OAuth provider's access tokens from grantwire token",
	]),
	"grantwire mcp list",
	{"connector": _c, "type": _type},
)

# METADATA
# title: launch decision
# description: |
#   May agent use MCP server connector now? The pair's grant and activation and
#   mcp_servers.json are read first; a local server's values are read from the credential
#   store only when the pair is granted and active and the server is configured with every
#   required key. The result (all: connector, agent, type, ready, scopes — the grant's):
#   a local server adds command, args (mcp_servers.json's, else the catalog's), env_keys
#   and env ({KEY: a secret reference the host resolves}); a remote one adds url. A value
#   missing from the store fails closed (NOT_CONNECTED). With check: true nothing secret is
#   read: the result has no command or env, and a refusal is {ready: false, refusal}.
# entrypoint: true
decision := step.fail(errors.usage("launch needs connector and agent (and an optional boolean check)"), []) if {
	not _launch_args
} else := step.need(m) if {
	# the remote servers a person added (mcp_remote.json) first: they are MCP servers too
	m := facts.missing(_f, array.concat([facts.ledger(store.remote_key, store.remote_file, [])], _needs))
	count(m) > 0
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(_not_mcp, []) if {
	not catalog.mcp(_c)
} else := step.done(object.union(_about, {"ready": false, "refusal": e}), []) if {
	_check
	e := _refusal
} else := step.fail(e, []) if {
	e := _refusal
} else := step.done(_ready, []) if {
	_check
} else := step.need(m) if {
	m := facts.missing(_f, _secret_needs)
	count(m) > 0
} else := step.fail(errors.not_connected_mcp(_c, sort([e.key | some e in mcp.env_spec(_c)])), []) if {
	not _all_stored
} else := step.done(_launch, [])
