# METADATA
# title: Storage layout
# description: |
#   Where grantwire keeps things, and how the core reads them back. Secrets live in the OS
#   credential store, one slot per secret or blob, in the layout GAIA's gaia.connections
#   uses: "<provider>:default" (the connection: account_email, client_id_hash, connected_at
#   in float seconds, refresh_token, scopes, tenant?, account_type?), "provider:<provider>"
#   (the OAuth client: client_id, client_secret, tenant?), "<connector>:<ENV_KEY>" (one value
#   of an MCP server), and grantwire's own "<provider>:access_token" (the access token with
#   expires_at, bound to the connection's client_id_hash and connected_at). Non-secret state
#   lives in JSON ledgers under the home. This package turns the host's answers into views
#   the operations judge, and says what a well-formed ledger looks like.
package grantwire.store

import data.grantwire.catalog
import data.grantwire.facts

# ---------------------------------------------------------------------------------------
# keyring slots

# METADATA
# title: connection slot
# description: The keyring user of a provider's connection blob.
conn_user(p) := concat("", [p, ":default"])

# METADATA
# title: client slot
# description: The keyring user of a provider's OAuth client.
client_user(p) := concat("", ["provider:", p])

# METADATA
# title: access token slot
# description: The keyring user of a provider's cached access token.
token_user(p) := concat("", [p, ":access_token"])

# METADATA
# title: MCP value slot
# description: The keyring user of one environment value of an MCP server.
mcp_user(c, k) := concat("", [c, ":", k])

# METADATA
# title: connection need
# description: Read a provider's connection (always from the store, never from memory).
conn_need(k, p) := facts.keyring(k, conn_user(p), ["refresh_token"], true)

# METADATA
# title: token need
# description: Read a provider's cached access token (the process's memory of the slot may answer).
token_need(k, p) := facts.keyring(k, token_user(p), ["access_token"], false)

# METADATA
# title: client needs
# description: |
#   Read a provider's OAuth client: the keyring slot (fresh re-reads the store; otherwise the
#   process's memory may answer) and, in the same round, the environment variables a client
#   may come from when none is stored (the catalog's client_id_env / client_secret_env, else
#   GRANTWIRE_<PROVIDER>_CLIENT_ID / _CLIENT_SECRET).
client_needs(k, p, fresh) := [
	facts.keyring(k, client_user(p), ["client_id", "client_secret"], fresh),
	facts.env(concat("", [k, "@env_id"]), env_name(p, "client_id_env", "CLIENT_ID"), true),
	facts.env(concat("", [k, "@env_secret"]), env_name(p, "client_secret_env", "CLIENT_SECRET"), true),
]

# METADATA
# title: store probe
# description: |
#   A read of one credential-store slot asked before an operation that writes secrets takes
#   its lock: with no credential store reachable the read fails (INSECURE_STORE) before
#   anything is written, neither a lock file nor a keyring generation file.
probe_need(p) := facts.keyring_secret("probe", conn_user(p))

# METADATA
# title: store probed
# description: The probe of probe_need has been answered.
probed(f) if facts.has(f, "probe")

# METADATA
# title: configure client command
# description: |
#   The command that configures a provider's OAuth client, asking for the secret on stdin
#   where the catalog entry requires one (without it, configure refuses the client).
configure_client_cmd(p) := concat("", ["grantwire configure ", p, " --client-id <id> --client-secret-stdin"]) if {
	catalog.connectors[p].client_secret_required == true
} else := concat("", ["grantwire configure ", p, " --client-id <id>"])

# METADATA
# title: client environment variable
# description: The environment variable a provider's client id or secret comes from.
env_name(p, field, suffix) := catalog.connectors[p][field] if {
	is_string(catalog.connectors[p][field])
	catalog.connectors[p][field] != ""
} else := concat("_", ["GRANTWIRE", upper(replace(replace(p, "-", "_"), ".", "_")), suffix])

_empty_digest := "sha256:e3b0c44298fc1c14"

# A description of a non-empty secret.
_secret(d) if {
	is_string(d["$ref"])
	d.digest != _empty_digest
}

_strings(v) if {
	is_array(v)
	every s in v {
		is_string(s)
	}
}

_is_secret(d) if _secret(d)

else := false

_str_or_null(v) := v if is_string(v)

else := null

# ---------------------------------------------------------------------------------------
# numbers: float seconds <-> integer milliseconds

# METADATA
# title: milliseconds
# description: |
#   Unix milliseconds of a time stored as seconds: an integer, or a {"$number": text} of a
#   decimal fraction (digits after the third are dropped). Undefined for anything else.
ms(x) := x * 1000 if {
	is_number(x)
	x == floor(x)
} else := n if {
	is_string(x["$number"])
	parts := split(x["$number"], ".")
	count(parts) <= 2
	_digits(parts[0])
	fraction := array.slice(parts, 1, 2)
	every d in fraction {
		_digits(concat("", ["1", substring(d, 0, 12)]))
	}
	frac := substring(concat("", array.concat(fraction, ["000"])), 0, 3)
	n := (to_number(parts[0]) * 1000) + to_number(frac)
}

# 1 to 15 decimal digits without a sign, an exponent or a leading zero, checked character by
# character: OPA's Wasm runtime reads "01", "1e400" or "1+5" with to_number where its Go
# evaluator refuses or rewrites them, so no round trip through to_number can tell. No
# regular expression on this hot path.
_digits(s) if {
	n := count(s)
	n > 0
	n <= 15
	every i in numbers.range(0, n - 1) {
		substring(s, i, 1) in _digit_chars
	}
	_no_leading_zero(s)
}

_digit_chars := {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

_no_leading_zero("0")

_no_leading_zero(s) if not startswith(s, "0")

# METADATA
# title: seconds
# description: |
#   A Unix-milliseconds time as the float seconds GAIA stores, {"$number": "s.mmm"}. Whole
#   seconds by exact division, not floor(): for a negative time (a host clock before 1970)
#   OPA's Go evaluator and its Wasm runtime round floor() differently.
seconds(t) := {"$number": concat("", [json.marshal((t - (t % 1000)) / 1000), ".", _pad3(t % 1000)])}

_pad3(n) := concat("", ["00", format_int(n, 10)]) if n < 10

else := concat("", ["0", format_int(n, 10)]) if n < 100

else := format_int(n, 10)

# ---------------------------------------------------------------------------------------
# views

# METADATA
# title: connection
# description: |
#   A connection fact as the operations judge it: {found:false}; {found, valid:false,
#   version} for a blob that is not a valid connection (not a JSON object, no refresh token,
#   scopes not a list of strings, no readable connected_at); else {found, valid, account,
#   scopes, connected_at (ms), client_id_hash, tenant, account_type, refresh (the refresh
#   token's description), version, blob (the parsed blob, to write it back with changes)}.
connection(fact) := {"found": false} if {
	not fact.found == true
} else := v if {
	j := fact.json
	is_object(j)
	_secret(j.refresh_token)
	_strings(j.scopes)
	t := ms(j.connected_at)
	v := {
		"found": true, "valid": true,
		"account": _account(j),
		"scopes": j.scopes,
		"connected_at": t,
		"client_id_hash": object.get(j, "client_id_hash", null),
		"tenant": _str_or_null(object.get(j, "tenant", null)),
		"account_type": _str_or_null(object.get(j, "account_type", null)),
		"refresh": j.refresh_token,
		"version": fact.version,
		"blob": j,
	}
} else := {"found": true, "valid": false, "version": fact.version}

_account(j) := j.account_email if is_string(j.account_email)

else := ""

# METADATA
# title: connection blob
# description: |
#   A connection blob to store (GAIA's layout): the refresh token and client id hash given,
#   connected_at (ms) written as float seconds, the tenant and account type only when set.
conn_blob(account, scopes, connected_at, client_id_hash, tenant, account_type, refresh) := object.union(
	{
		"account_email": account, "client_id_hash": client_id_hash,
		"connected_at": seconds(connected_at), "refresh_token": refresh, "scopes": scopes,
	},
	object.union(_opt("tenant", tenant), _opt("account_type", account_type)),
)

_opt(name, v) := {name: v} if is_string(v)

else := {}

# METADATA
# title: client
# description: |
#   The provider's OAuth client from the facts of client_needs(k, p, _): the stored client
#   (source "keyring"), else the environment (source "env"), else {found:false}. A found
#   client has client_id and client_secret (descriptions, the secret null when there is
#   none), client_id_hash, has_secret, tenant (the stored one, else the catalog's) and a
#   version (the slot's, or "env:<hash>").
client(f, k, p) := c if {
	fact := f[k]
	fact.found == true
	j := fact.json
	is_object(j)
	_secret(j.client_id)
	c := {
		"found": true, "source": "keyring", "version": fact.version,
		"client_id": j.client_id, "client_id_hash": j.client_id.crc32,
		"client_secret": _secret_or_null(object.get(j, "client_secret", null)),
		"has_secret": _is_secret(object.get(j, "client_secret", null)),
		"tenant": _tenant(j, p),
	}
} else := c if {
	id := f[concat("", [k, "@env_id"])]
	id.found == true
	_secret(id.value)
	sec := f[concat("", [k, "@env_secret"])]
	c := {
		"found": true, "source": "env", "version": concat("", ["env:", id.value.crc32]),
		"client_id": id.value, "client_id_hash": id.value.crc32,
		"client_secret": _env_secret(sec),
		"has_secret": _env_secret(sec) != null,
		"tenant": catalog_tenant(p),
	}
} else := {"found": false}

_secret_or_null(d) := d if _secret(d)

else := null

_env_secret(sec) := sec.value if {
	sec.found == true
	_secret(sec.value)
} else := null

_tenant(j, p) := j.tenant if is_string(j.tenant)

else := catalog_tenant(p)

# METADATA
# title: catalog tenant
# description: The catalog's default tenant of a provider, or null.
catalog_tenant(p) := t if {
	t := catalog.connectors[p].tenant
	is_string(t)
} else := null

# METADATA
# title: client read
# description: The facts of client_needs(k, ...) are all present.
client_read(f, k) if {
	facts.has(f, k)
	facts.has(f, concat("", [k, "@env_id"]))
	facts.has(f, concat("", [k, "@env_secret"]))
}

# METADATA
# title: client slot expectation
# description: |
#   The precondition for replacing a provider's stored client, given the client read under
#   the lock: that version, or an empty slot when no client is stored there.
client_expect(f, k) := {"version": f[k].version} if f[k].found == true

else := {"found": false}

# METADATA
# title: slot expectation
# description: The precondition that a keyring slot is still as the fact under k read it.
slot_expect(fact) := {"version": fact.version} if fact.found == true

else := {"found": false}

# METADATA
# title: restore slot
# description: The effects that put a keyring slot back as the fact under k read it (an undo).
restore(k, user, fact) := [{"kind": "keyring.set", "user": user, "value": facts.ref(k, "value")}] if {
	fact.found == true
} else := [{"kind": "keyring.delete", "user": user}]

# METADATA
# title: access token
# description: |
#   The cached access token of a token fact, usable for a connection when it is bound to it
#   (same client_id_hash and connected_at) and stays valid for more than margin ms after
#   now: {token (description), expires_at}. Undefined otherwise.
token(fact, conn, now, margin) := {"token": j.access_token, "expires_at": j.expires_at} if {
	fact.found == true
	j := fact.json
	is_object(j)
	_secret(j.access_token)
	is_number(j.expires_at)
	j.expires_at - now > margin
	j.client_id_hash == conn.client_id_hash
	j.connected_at == conn.connected_at
}

# METADATA
# title: store access token
# description: The effect that caches an access token, bound to the connection it came from.
put_token(p, access, expires_at, client_id_hash, connected_at) := {
	"kind": "keyring.set", "user": token_user(p),
	"value": {
		"access_token": access, "expires_at": expires_at,
		"client_id_hash": client_id_hash, "connected_at": connected_at,
	},
}

# METADATA
# title: drop access token
# description: The effect that deletes a provider's cached access token.
drop_token(p) := {"kind": "keyring.delete", "user": token_user(p)}

# ---------------------------------------------------------------------------------------
# ledgers

# METADATA
# title: ledger files
# description: The ledgers, as paths relative to the home.
grants_file := "connectors/grants.json"

# METADATA
# title: activations file
# description: The activations ledger.
activations_file := "connectors/activations.json"

# METADATA
# title: state file
# description: The non-secret mirror of connections (listings; decisions read the keyring).
state_file := "connectors/state.json"

# METADATA
# title: MCP servers file
# description: MCP servers in the ecosystem's form, secrets only as keyring references.
mcp_file := "mcp_servers.json"

# METADATA
# title: agents file
# description: The agent registry (read only).
agents_file := "agents.json"

# METADATA
# title: ledger expectation
# description: The precondition of a ledger write op that an entry is still as the fact read it.
expect(fact) := {"value": fact.value} if fact.exists == true

else := {"exists": false}

# METADATA
# title: ledger write
# description: One atomic write of a ledger file (ops in order).
write(file, ops) := {"kind": "ledger.write", "ledger": file, "ops": ops}

# METADATA
# title: tool rules need
# description: |
#   A connector's tool rules (the activations file's tools member), read under the lock of
#   an operation that deletes the connector so that they go with it.
tool_rules_need(k, c) := facts.ledger(k, activations_file, ["tools", c])

# METADATA
# title: tool rules wipe
# description: |
#   The write deleting a connector's tool rules as the fact read them (pruning an empty
#   tools member); none when there are none or the file cannot be read.
wipe_tool_rules(fact, c) := [write(activations_file, [{
	"path": ["tools", c], "delete": true, "prune": true,
	"expect": expect(fact),
}])] if {
	not problem(fact)
	fact.exists == true
} else := []

# METADATA
# title: ledger problem
# description: |
#   Why a ledger fact cannot be used: the host found the file unreadable, or the entry read
#   does not have its ledger's shape. Undefined for a usable fact.
problem(fact) := fact.corrupt if {
	is_string(fact.corrupt)
} else := concat("", ["it holds ", _a(t), " where an object belongs"]) if {
	is_array(fact.shape)
	t := [t | some i, t in fact.shape; i < count(fact.path); t != "object"][0]
} else := "it does not have the shape of that ledger" if {
	fact.exists == true
	not shaped(fact.ledger, fact.path, fact.value)
}

_a(t) := "an array" if t == "array"

else := concat("", ["a ", t])

# METADATA
# title: ledger name
# description: The short name of a ledger file ("grants", "activations", "state", "mcp_servers", "agents").
ledger_name(file) := trim_suffix(split(file, "/")[count(split(file, "/")) - 1], ".json")

# METADATA
# title: ledger shape
# description: The value at path of a ledger has that ledger's shape (docs/behaviour.md#files).
shaped(file, path, v) if {
	file == grants_file
	_grants(count(path), v)
}

shaped(file, path, v) if {
	file == activations_file
	_activations(path, v)
}

shaped(file, path, v) if {
	file == state_file
	_state(count(path), v)
}

shaped(file, path, v) if {
	file == mcp_file
	_mcp(path, v)
}

shaped(file, _, _) if not file in {grants_file, activations_file, state_file, mcp_file, remote_file}

_grants(2, v) if _strings(v)

_grants(1, v) if _grant_map(v)

_grants(0, v) if {
	is_object(v)
	every _, m in v {
		_grant_map(m)
	}
}

_grant_map(v) if {
	is_object(v)
	every _, x in v {
		_strings(x)
	}
}

_bools(v) if {
	is_object(v)
	every _, b in v {
		is_boolean(b)
	}
}

_act_map(m) if {
	is_object(m)
	every _, c in m {
		_bools(c)
	}
}

_activations(path, v) if {
	count(path) == 0
	is_object(v)
	_act_map(object.get(v, "activations", {}))
	_tool_map(object.get(v, "tools", {}))
}

_activations(path, v) if {
	count(path) == 1
	not _tool_path(path)
	_act_map(v)
}

_activations(path, v) if {
	count(path) == 2
	not _tool_path(path)
	_bools(v)
}

_activations(path, v) if {
	count(path) == 3
	not _tool_path(path)
	is_boolean(v)
}

# The tool rules (tools.<connector>.<agent>: tool names) sit beside the activations.
_tool_path(path) if path[0] == "tools"

_activations(path, v) if {
	_tool_path(path)
	_tools(count(path), v)
}

_tools(1, v) if _tool_map(v)

_tools(2, v) if _grant_map(v)

_tools(3, v) if _strings(v)

_tool_map(m) if {
	is_object(m)
	every _, c in m {
		_grant_map(c)
	}
}

_objects(v) if {
	is_object(v)
	every _, e in v {
		is_object(e)
	}
}

_state(0, v) if _objects(v)

_state(1, v) if is_object(v)

_mcp(path, v) if {
	count(path) == 0
	is_object(v)
	_objects(object.get(v, mcp_key(v), {}))
}

_mcp(path, v) if {
	count(path) == 1
	_objects(v)
}

_mcp(path, v) if {
	count(path) == 2
	is_object(v)
}

# METADATA
# title: MCP servers key
# description: The member of mcp_servers.json that holds the servers ("mcpServers", or the legacy "servers").
mcp_key(doc) := "servers" if {
	not doc.mcpServers
	doc.servers
} else := "mcpServers"

# METADATA
# title: state entry
# description: The non-secret mirror of a connection in connectors/state.json.
state_entry(account, scopes, connected_at, client_id_hash, tenant) := {
	"configured": true, "account": account, "scopes": scopes,
	"connected_at": connected_at, "client_id_hash": client_id_hash, "tenant": tenant,
}

# ---------------------------------------------------------------------------------------
# remote MCP servers (docs/behaviour.md#remote-mcp-servers)

# METADATA
# title: remote MCP servers file
# description: |
#   Remote MCP servers added with mcp_add and what their authorization holds (no secret):
#   {"version": 1, "servers": {id: {url, scopes?, client_metadata_url?, preregistered?,
#   added_at, auth?: {issuer, resource, scopes, authorized_at, registration}}}}.
remote_file := "mcp_remote.json"

# METADATA
# title: remote MCP servers fact
# description: The key under which every operation reads the whole remote servers file.
remote_key := "mcp_remote"

# METADATA
# title: remote registration slot
# description: |
#   The keyring user of a remote MCP server's client registration at its authorization
#   server (dynamic or client ID metadata document), stamped with that server's issuer.
remote_client_user(c) := concat("", [c, ":mcp_client"])

# METADATA
# title: remote pre-registered client slot
# description: The keyring user of a remote MCP server's pre-registered OAuth client (mcp_add --client-id).
remote_prereg_user(c) := concat("", [c, ":mcp_preregistered"])

# METADATA
# title: remote token slot
# description: |
#   The keyring user of a remote MCP server's tokens, stamped with the issuer, the resource
#   and the client they were issued to.
remote_token_user(c) := concat("", [c, ":mcp_token"])

shaped(file, path, v) if {
	file == remote_file
	_remote(path, v)
}

_remote(path, v) if {
	count(path) == 0
	is_object(v)
	_objects(object.get(v, "servers", {}))
}

_remote(path, v) if {
	count(path) == 1
	_objects(v)
}

_remote(path, v) if {
	count(path) == 2
	is_object(v)
}
