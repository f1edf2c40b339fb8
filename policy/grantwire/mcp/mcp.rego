# METADATA
# title: MCP servers
# description: |
#   Local MCP servers (`mcp_server`) take API keys in their environment. `configure_mcp`
#   stores each value in its own credential-store slot and writes the server to
#   mcp_servers.json with keyring references only; `credential` hands the values to a
#   granted agent for injection into the server's environment (read only after the grant
#   check, and only as references); `mcp_list` lists the configured servers with the names
#   of their keys, who is granted and who they are active for.
package grantwire.mcp

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store

# METADATA
# title: configure lock wait
# description: How long configuring a server waits for its lock.
lock_wait_ms := 5000

_f := object.get(input, "facts", {})

_c := input.args.connector

_spec := catalog.connectors[_c]

# METADATA
# title: environment keys
# description: The environment values a catalog MCP server takes ({key, required, secret, description}).
env_spec(c) := e if {
	e := catalog.connectors[c].env
	is_array(e)
} else := []

_allowed(c) := {k | some e in env_spec(c); k := e.key}

_required(c) := {k | some e in env_spec(c); e.required == true; k := e.key}

# METADATA
# title: server entry
# description: A server's entry of mcp_servers.json from a whole-file fact (undefined when absent).
entry(fact, c) := e if {
	fact.exists == true
	e := fact.value[store.mcp_key(fact.value)][c]
	is_object(e)
}

# METADATA
# title: configured keys
# description: The names of the environment values stored for a server, sorted.
keys(fact, c) := sort(object.keys(e.env)) if {
	e := entry(fact, c)
	is_object(e.env)
} else := []

# METADATA
# title: missing keys
# description: The required keys of a catalog MCP server that are not configured, sorted.
missing_keys(c, fact) := sort([k | some k in _required(c); not k in keys(fact, c)])

# METADATA
# title: configure fix
# description: The command that configures a server's values (secrets come on stdin, never in arguments).
configure_fix(c) := concat("", ["grantwire configure ", c, " --from-stdin"]) if count(_allowed(c)) > 0

else := concat("", ["grantwire configure ", c])

# METADATA
# title: configure fix keeping values
# description: |
#   configure_fix with the values the user gave as arguments (--set KEY=VALUE, never a
#   secret key's) kept, so that running it asks only for what is still missing.
configure_fix_given(c, given) := concat("", [
	"grantwire configure ", c,
	concat("", [concat("", [" --set ", scopes.quote(concat("=", [k, given[k]]))]) |
		some k in sort(object.keys(given))
	]),
	" --from-stdin",
]) if {
	count(given) > 0
} else := configure_fix(c)

_keys := scopes.sorted(input.args.env_keys)

# The values given as arguments ("set": {KEY: value}): never a secret key's.
_given := object.get(input.args, "set", {})

_secret_keys := {k | some e in env_spec(_c); e.secret == true; k := e.key}

_given_args if {
	is_object(_given)
	every k, v in _given {
		k in scopes.set(_keys)
		not k in _secret_keys
		is_string(v)
	}
}

_configure_args if {
	is_string(_c)
	is_array(input.args.env_keys)
	every k in input.args.env_keys {
		is_string(k)
		count(k) > 0
	}
}

_unknown_keys := sort([k | some k in _keys; not k in _allowed(_c)])

_missing := sort([k | some k in _required(_c); not k in scopes.set(_keys)])

# Keys whose value was not passed as a secret argument ("env.<KEY>").
_no_value := sort([k | some k in _keys; not facts.arg(_f, concat("", ["env.", k]))])

_takes := concat("", ["it takes ", concat(", ", sort(_allowed(_c)))]) if {
	count(_allowed(_c)) > 0
} else := "it takes no environment values"

_configure_needs := [
	facts.lock("lock", _c, lock_wait_ms),
	facts.after(facts.ledger("mcp", store.mcp_file, []), "lock"),
	facts.after(facts.keyring_info("keyring"), "lock"),
]

_mcp_doc := facts.value(_f, "mcp", {})

_server := {
	"command": object.get(_spec, "command", ""),
	"args": object.get(_spec, "args", []),
	"env": {k: {"$keyring": concat(":", [_f.keyring.service, store.mcp_user(_c, k)])} | some k in _keys},
}

_configure_effects := array.concat(
	array.concat(
		[{"kind": "keyring.set", "user": store.mcp_user(_c, k), "value": facts.ref("arg", concat("", ["env.", k]))} |
			some k in _keys
		],
		[{"kind": "keyring.delete", "user": store.mcp_user(_c, k)} |
			some k in keys(_f.mcp, _c)
			not k in scopes.set(_keys)
		],
	),
	[
		store.write(store.mcp_file, [{"path": [store.mcp_key(_mcp_doc), _c], "value": _server}]),
		{"kind": "event.emit", "type": "connector.configured", "payload": {"connector_id": _c, "account_id": ""}},
	],
)

# METADATA
# title: configure_mcp decision
# description: |
#   Store an MCP server's environment (every declared required key, no undeclared key), under
#   the connector's lock; keys dropped from a previous configuration are deleted.
# entrypoint: true
configure := step.fail(errors.usage("configure_mcp needs connector and env_keys (names of the values passed)"), []) if {
	not _configure_args
} else := step.fail(errors.usage("configure_mcp's set holds the values given as arguments: non-secret keys of env_keys, as strings"), []) if {
	not _given_args
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(concat("", [_c, " is not a local MCP server (type ", catalog.type_of(_c), ")"]), "", {"connector": _c}),
	[],
) if {
	_spec.type != "mcp_server"
} else := step.fail(
	errors.configuration(
		concat("", [_c, " does not take ", concat(", ", _unknown_keys), "; ", _takes]),
		configure_fix(_c),
		{"connector": _c, "unknown_keys": _unknown_keys},
	),
	[],
) if {
	count(_unknown_keys) > 0
} else := step.fail(
	errors.configuration(concat("", [_c, " needs ", concat(", ", _missing)]), configure_fix_given(_c, _given), {"connector": _c, "missing_keys": _missing}),
	[],
) if {
	count(_missing) > 0
} else := step.fail(errors.usage(concat("", ["configure_mcp was given no value for ", concat(", ", _no_value)])), []) if {
	count(_no_value) > 0
} else := step.need([store.probe_need(_c)]) if {
	not store.probed(_f)
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _configure_needs)
	count(m) > 0
} else := step.done({"connector": _c, "env_keys": _keys}, _configure_effects)

_a := input.args.agent

# A rule, so that a missing connector or agent is refused too (a negated call on an
# undefined argument is false, not true).
_credential_args if {
	is_string(_c)
	is_string(_a)
}

_secret_needs := [facts.keyring_secret(facts.key(["secret", k]), store.mcp_user(_c, k)) | some k in keys(_f.mcp, _c)]

_all_stored if {
	every k in keys(_f.mcp, _c) {
		_f[facts.key(["secret", k])].found == true
	}
}

# METADATA
# title: credential decision
# description: |
#   The environment of a configured MCP server, for an agent that holds a grant for it
#   (as references the host resolves from the credential store). A value missing from the
#   store fails closed (NOT_CONNECTED).
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
	m := facts.missing(_f, [grants.grant_need("grant", _c, _a), facts.ledger("mcp", store.mcp_file, [])])
	count(m) > 0
} else := step.fail(errors.agent_not_granted(_c, _a, ["use"], []), []) if {
	not _f.grant.exists == true
} else := step.fail(errors.not_connected_mcp(_c, sort(_allowed(_c))), []) if {
	not entry(_f.mcp, _c)
} else := step.need(m) if {
	m := facts.missing(_f, _secret_needs)
	count(m) > 0
} else := step.fail(errors.not_connected_mcp(_c, sort(_allowed(_c))), []) if {
	not _all_stored
} else := step.done(
	{
		"connector": _c, "agent": _a,
		"command": object.get(entry(_f.mcp, _c), "command", ""),
		"args": object.get(entry(_f.mcp, _c), "args", []),
		"env": {k: facts.ref(facts.key(["secret", k]), "value") | some k in keys(_f.mcp, _c)},
	},
	[],
)

# ---------------------------------------------------------------------------------------
# mcp_list

_list_agent := input.args.agent if is_string(input.args.agent)

_list_args if object.get(input.args, "agent", null) == null

_list_args if is_string(input.args.agent)

_servers := {c |
	some c, _ in object.get(_mcp_doc, store.mcp_key(_mcp_doc), {})
} | {c | some c in catalog.ids; catalog.type_of(c) == "mcp_server"}

_grants_doc := facts.value(_f, "grants", {})

_actives_doc := facts.value(_f, "actives", {})

_row(c) := {
	"id": c,
	"name": object.get(object.get(catalog.connectors, c, {}), "display_name", c),
	"in_catalog": _known_bool(c),
	"command": _command(c),
	"args": _args_of(c),
	"configured": _configured_bool(c),
	"env_keys": keys(_f.mcp, c),
	"missing_keys": missing_keys(c, _f.mcp),
	"grants": object.get(_grants_doc, c, {}),
	"active_for": sort([a | some a, v in object.get(_actives_doc, c, {}); v == true]),
}

_configured(c) if entry(_f.mcp, c)

_configured_bool(c) if _configured(c)

else := false

_known_bool(c) if catalog.known(c)

else := false

_command(c) := e.command if {
	e := entry(_f.mcp, c)
	is_string(e.command)
} else := object.get(object.get(catalog.connectors, c, {}), "command", "")

_args_of(c) := a if {
	a := entry(_f.mcp, c).args
	is_array(a)
} else := object.get(object.get(catalog.connectors, c, {}), "args", [])

_listed(c) if {
	not _list_agent
	entry(_f.mcp, c)
}

_listed(c) if {
	_list_agent
	_ = _grants_doc[c][_list_agent]
	_actives_doc[c][_list_agent] == true
}

# METADATA
# title: mcp_list decision
# description: |
#   The MCP servers of mcp_servers.json (with the names of their keys, never the values, the
#   required keys still missing, the agents granted and those it is active for), or with an
#   agent, the servers that agent sees (granted and active).
# entrypoint: true
list := step.fail(errors.usage("mcp_list takes an optional agent"), []) if {
	not _list_args
} else := step.need(m) if {
	m := facts.missing(_f, [
		facts.ledger("mcp", store.mcp_file, []),
		facts.ledger("grants", store.grants_file, []),
		facts.ledger("actives", store.activations_file, ["activations"]),
	])
	count(m) > 0
} else := step.done({"servers": [r | some c in sort(_servers); _listed(c); r := _row(c)]}, [])
