# METADATA
# title: Catalog access
# description: |
#   The catalog of connectors is data (`data.catalog.connectors`), shipped in the bundle and
#   overridable at start-up. Types: oauth_pkce (an OAuth 2.0 + PKCE provider), mcp_server (a
#   local MCP server with API keys in its environment) and mcp_remote (a remote MCP server
#   behind OAuth 2.1).
package grantwire.catalog

# METADATA
# title: connectors
# description: Every catalog entry by id.
connectors := object.union(_added, _base) if {
	_has_added
} else := _base

# Checked first so that queries without the file (the gate's) build nothing.
_has_added if {
	input.facts.mcp_remote.exists == true
	count(_added) > 0
}

_base := c if {
	c := data.catalog.connectors
	is_object(c)
} else := {}

# Remote MCP servers a person added (mcp_remote.json, read under the fact key "mcp_remote"
# by operations that name a connector the catalog does not have; package store defines
# the file, which this package cannot import): entries of type mcp_remote beside the
# catalog's. A catalog id always wins.
_added := {id: {"type": "mcp_remote", "display_name": id, "tier": "remote", "url": s.url} |
	fact := input.facts.mcp_remote
	fact.exists == true
	some id, s in object.get(fact.value, "servers", {})
	is_string(id)
	regex.match(`^[a-z0-9][a-z0-9_.-]{0,63}$`, id)
	is_string(s.url)
}

# METADATA
# title: known
# description: The connector id names a catalog entry (or a remote MCP server a person added, when read).
known(c) if {
	is_string(c)
	is_object(connectors[c])
}

# METADATA
# title: in the catalog itself
# description: The connector id names an entry of the catalog data (not an added remote server).
base_known(c) if {
	is_string(c)
	is_object(_base[c])
}

# METADATA
# title: type
# description: The type of a catalog entry.
type_of(c) := connectors[c].type

# METADATA
# title: oauth
# description: The connector is an OAuth 2.0 + PKCE provider.
oauth(c) if connectors[c].type == "oauth_pkce"

# METADATA
# title: mcp types
# description: Connector types whose tools an agent can see (activations apply to these only).
mcp_types := {"mcp_server", "mcp_remote"}

# METADATA
# title: mcp
# description: The connector is an MCP server (local or remote).
mcp(c) if connectors[c].type in mcp_types

# METADATA
# title: default scopes
# description: The scopes a connection asks for when none are given.
default_scopes(c) := s if {
	s := connectors[c].default_scopes
	is_array(s)
} else := []

# METADATA
# title: ids
# description: Every catalog id, sorted.
ids := sort(object.keys(connectors)) if {
	_has_added
} else := _base_ids

# Read only data: computed once per engine.
_base_ids := sort(object.keys(_base))

# ---------------------------------------------------------------------------------------
# validation

_fields := {
	"type", "display_name", "description", "tier", "category", "docs_url",
	"authorization_url", "token_url", "userinfo_url", "revocation_url", "issuer",
	"token_endpoint_auth_method", "device_authorization_url", "device_scopes", "auth_params",
	"client_id_env", "client_secret_env", "client_secret_required", "tenant",
	"scope_separator", "default_scopes", "available_scopes", "command", "args", "env", "url",
	"refresh_token_inactivity_days",
}

_url_fields := ["authorization_url", "token_url", "userinfo_url", "revocation_url", "device_authorization_url", "issuer", "docs_url", "url"]

_oauth_only := ["authorization_url", "token_url", "userinfo_url", "revocation_url", "device_authorization_url", "device_scopes", "issuer", "client_id_env", "client_secret_env", "tenant", "refresh_token_inactivity_days"]

_types := {"oauth_pkce", "mcp_server", "mcp_remote"}

_str(e, f) := e[f] if is_string(e[f])

_id_ok(id) if regex.match(`^[a-z0-9][a-z0-9_.-]{0,63}$`, id)

_env_var(v) if regex.match(`^[A-Z_][A-Z0-9_]{0,127}$`, v)

_env_key(v) if regex.match(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`, v)

_tenant(t) if regex.match(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`, t)

_scope_list(xs) if {
	is_array(xs)
	every s in xs {
		is_string(s)
		count(s) > 0
		count(s) <= 512
		not regex.match(`[\s",\\]`, s)
	}
	count({s | some s in xs}) == count(xs)
}

# A URL of the catalog: what the transport rule allows, with "{tenant}" only where a tenant
# is configured (OAuth endpoints of a provider with a default tenant).
_url_problem(e, f) := concat("", [f, ": ", data.grantwire.transport.refusal(u)]) if {
	u := replace(_str(e, f), "{tenant}", "tenant")
	data.grantwire.transport.refusal(u)
} else := concat("", [f, " holds {tenant}, but only the endpoints of a provider with a tenant may"]) if {
	contains(_str(e, f), "{tenant}")
	not _tenant_url(e, f)
}

_tenant_url(e, f) if {
	e.type == "oauth_pkce"
	is_string(e.tenant)
	f in {"authorization_url", "token_url", "userinfo_url", "revocation_url", "device_authorization_url"}
}

# METADATA
# title: entry problems
# description: |
#   What is wrong with one catalog entry (empty when nothing). Strict (a user's override
#   file) also refuses unknown fields and requires what a working connector needs.
entry_problems(id, e, strict) := array.concat(_base_problems(id, e), _strict_problems(e, strict))

_base_problems(id, e) := array.concat(
	array.flatten([
		[m | not _id_ok(id); m := concat("", ["the id must be 1-64 of a-z 0-9 _ . - starting with a letter or digit"])],
		[m | not is_object(e); m := "an entry must be an object"],
		[m | not object.get(e, "type", null) in _types; m := concat("", ["unknown type ", json.marshal(object.get(e, "type", null)), " (oauth_pkce, mcp_server or mcp_remote)"])],
		[m | not _scope_list(object.get(e, "default_scopes", [])); m := "default_scopes must be distinct scopes (no spaces, quotes, commas or backslashes)"],
		[m | not _scope_list(object.get(e, "available_scopes", [])); m := "available_scopes must be distinct scopes (no spaces, quotes, commas or backslashes)"],
		[m | _defaults_unavailable(e); m := "every default scope must be among available_scopes"],
		[m | not object.get(e, "scope_separator", " ") in {"", " ", ","}; m := "scope_separator must be a space or a comma"],
		[m | _bad_env_var(e); m := "client_id_env and client_secret_env must be environment variable names (A-Z 0-9 _)"],
		[m | _bad_tenant(e); m := "tenant must be a tenant name or id (letters, digits, - _ .)"],
		[m | _bad_auth_method(e); m := "token_endpoint_auth_method must be client_secret_basic, client_secret_post or none"],
		[m | _oauth_field_elsewhere(e); m := concat("", [concat(", ", _oauth_fields_set(e)), " are for oauth_pkce connectors only"])],
		[m | _mcp_field_elsewhere(e); m := "command, args and env are for mcp_server connectors only"],
		[m | _bad_env(e); m := "env must be a list of {key, required, secret, description} with distinct environment variable names"],
		[m | _bad_params(e); m := "auth_params must be an object of strings"],
		[m | _bad_device_scopes(e); m := "device_scopes must be distinct scopes among available_scopes, with a device_authorization_url"],
		[m | _bad_inactivity(e); m := "refresh_token_inactivity_days must be a whole number of days from 15 to 3650"],
	]),
	[p | some f in _url_fields; p := _url_problem(e, f)],
)

_defaults_unavailable(e) if {
	count(object.get(e, "available_scopes", [])) > 0
	some s in object.get(e, "default_scopes", [])
	not s in object.get(e, "available_scopes", [])
}

_bad_env_var(e) if {
	some f in ["client_id_env", "client_secret_env"]
	v := e[f]
	not _env_var(v)
}

_bad_tenant(e) if {
	t := e.tenant
	not _tenant(t)
}

_bad_auth_method(e) if {
	m := e.token_endpoint_auth_method
	not m in {"client_secret_basic", "client_secret_post", "none"}
}

_oauth_fields_set(e) := [f | some f in _oauth_only; _ = e[f]; f != "issuer"; e.type != "oauth_pkce"]

_oauth_field_elsewhere(e) if count(_oauth_fields_set(e)) > 0

_mcp_field_elsewhere(e) if {
	e.type != "mcp_server"
	some f in ["command", "args", "env"]
	_ = e[f]
}

_bad_env(e) if {
	env := object.get(e, "env", [])
	not is_array(env)
}

_bad_env(e) if {
	some k in object.get(e, "env", [])
	not _env_key(k.key)
}

_bad_env(e) if {
	env := object.get(e, "env", [])
	is_array(env)
	count({k.key | some k in env}) != count(env)
}

_bad_params(e) if {
	p := e.auth_params
	not is_object(p)
}

# refresh_token_inactivity_days: how long the provider keeps an unused refresh token
# (Microsoft: 90). More than the health pass's keep-alive margin, so a keep-alive is due
# before the limit.
_bad_inactivity(e) if {
	d := e.refresh_token_inactivity_days
	not _whole_days(d)
}

_whole_days(d) if {
	is_number(d)
	d == floor(d)
	d >= 15
	d <= 3650
}

# device_scopes: the scopes the device flow allows (Google's limited-input scopes).
_bad_device_scopes(e) if {
	d := e.device_scopes
	not _scope_list(d)
}

_bad_device_scopes(e) if {
	_ = e.device_scopes
	not _str(e, "device_authorization_url")
}

_bad_device_scopes(e) if {
	count(object.get(e, "available_scopes", [])) > 0
	some s in object.get(e, "device_scopes", [])
	not s in object.get(e, "available_scopes", [])
}

_bad_params(e) if {
	some _, v in object.get(e, "auth_params", {})
	not is_string(v)
}

_strict_problems(_, false) := []

_strict_problems(e, true) := array.flatten([
	[m | count(_unknown_fields(e)) > 0; m := concat("", ["unknown field(s) ", concat(", ", _unknown_fields(e))])],
	[m | trim_space(object.get(e, "display_name", "")) == ""; m := "display_name is required"],
	[m | trim_space(object.get(e, "tier", "")) == ""; m := "tier is required"],
	[m | _oauth_incomplete(e); m := "an oauth_pkce connector needs authorization_url, token_url, client_id_env, default_scopes and available_scopes"],
	[m | _secret_env_missing(e); m := "client_secret_required needs client_secret_env"],
	[m | _mcp_incomplete(e); m := "an mcp_server connector needs command"],
	[m | _remote_incomplete(e); m := "an mcp_remote connector needs url"],
])

_unknown_fields(e) := sort([f | some f, _ in e; not f in _fields])

_oauth_incomplete(e) if {
	e.type == "oauth_pkce"
	some f in ["authorization_url", "token_url", "client_id_env"]
	not _str(e, f)
}

_oauth_incomplete(e) if {
	e.type == "oauth_pkce"
	some f in ["default_scopes", "available_scopes"]
	count(object.get(e, f, [])) == 0
}

_secret_env_missing(e) if {
	e.client_secret_required == true
	not _str(e, "client_secret_env")
}

_mcp_incomplete(e) if {
	e.type == "mcp_server"
	trim_space(object.get(e, "command", "")) == ""
}

_remote_incomplete(e) if {
	e.type == "mcp_remote"
	not _str(e, "url")
}

# METADATA
# title: problems
# description: |
#   Every problem of the catalog in data, as "connector <id>: <problem>", sorted.
problems(strict) := ["the catalog has no connectors"] if {
	count(connectors) == 0
} else := sort([concat("", ["connector ", json.marshal(id), ": ", p]) |
	some id, e in connectors
	some p in entry_problems(id, e, strict)
])

# METADATA
# title: validate_catalog decision
# description: |
#   Check the catalog the engine was given (data.catalog): {"problems": []} when it is
#   usable, else a CONFIGURATION error naming the first problem and counting the others.
#   Strict (args.strict, a user's override file, named by args.file) also refuses unknown
#   fields and requires what a working connector needs, so every shell refuses exactly the
#   same files.
# entrypoint: true
validate := {"status": "done", "result": {"problems": []}, "effects": []} if {
	count(problems(_strict)) == 0
} else := {
	"status": "done", "error": data.grantwire.errors.configuration(
		concat("", ["the catalog", _file, ": ", problems(_strict)[0], _more]),
		"",
		{"problems": problems(_strict)},
	),
	"effects": [],
}

_file := concat("", [" ", input.args.file]) if is_string(input.args.file)

else := ""

_strict := input.args.strict if is_boolean(input.args.strict)

else := false

_more := concat("", [" (and ", format_int(count(problems(_strict)) - 1, 10), " more)"]) if count(problems(_strict)) > 1

else := ""
