# METADATA
# title: Remote MCP servers
# description: |
#   Remote MCP servers behind OAuth 2.1 (`mcp_remote`): a catalog entry, or one a person
#   added with `mcp_add` (mcp_remote.json, beside the catalog). `mcp_add` records a server's
#   URL and what the person knows about it (scopes, a pre-registered client with its issuer,
#   a client ID metadata document URL); the client's secret goes to the credential store.
#   `mcp_remote_list` lists the remote servers with the issuer and scopes of their
#   authorization, who is granted and who they are active for; `mcp_logout` revokes the
#   refresh token at the authorization server (RFC 7009, best effort) and deletes the
#   tokens and the registration. The authorization itself is package remoteauth, the bearer
#   token for an agent package remotetoken. Tokens and registrations are stamped with the
#   issuer of the authorization server that issued them and never used with another.
package grantwire.remote

import data.grantwire.catalog
import data.grantwire.discovery
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.grants
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store

# METADATA
# title: lock wait
# description: How long adding or logging out of a server waits for its lock.
lock_wait_ms := 5000

# METADATA
# title: maximum scopes
# description: The most scopes a remote server's configuration or authorization may hold.
max_scopes := 64

# METADATA
# title: secret token fields
# description: The members of a token slot or token response that are secrets.
token_fields := ["access_token", "refresh_token", "dpop_key"]

# METADATA
# title: secret client fields
# description: The members of a registration slot that are secrets (the client id is treated as one).
client_fields := ["client_id", "client_secret"]

_f := object.get(input, "facts", {})

_c := input.args.connector

# A positive rule: a negated call on an undefined argument is false in Rego, not true.
_c_given if is_string(_c)

# ---------------------------------------------------------------------------------------
# shared views

# METADATA
# title: remote ledger need
# description: Read the whole remote servers file (the key every operation uses for it).
ledger_need := facts.ledger(store.remote_key, store.remote_file, [])

# METADATA
# title: added entry
# description: A server's entry of mcp_remote.json (undefined when it has none).
added(f, c) := e if {
	fact := f[store.remote_key]
	fact.exists == true
	e := fact.value.servers[c]
	is_object(e)
}

# METADATA
# title: remote server
# description: |
#   The configuration of remote server c: {url, scopes, client_metadata_url (or null),
#   added (true for mcp_add's servers), auth (the last authorization's mirror, or null),
#   grant (authorization_code, or a machine grant: client_credentials, jwt_bearer, id_jag),
#   idp (for id_jag: {token_endpoint, client_id (or null)}, else null)}.
#   Undefined when c is not a remote MCP server.
server(f, c) := {
	"url": _url(f, c),
	"scopes": _configured_scopes(f, c),
	"client_metadata_url": _str_or_null(object.get(_entry(f, c), "client_metadata_url", null)),
	"grant": _grant_of(_entry(f, c)),
	"idp": _idp_of(_entry(f, c)),
	"added": _is_added(f, c),
	"auth": _obj_or_null(object.get(_entry(f, c), "auth", null)),
} if {
	catalog.type_of(c) == "mcp_remote"
	is_string(_url(f, c))
}

_entry(f, c) := e if e := added(f, c)

else := {}

# METADATA
# title: machine grants
# description: |
#   The grants a remote server may be added with besides the browser's authorization code
#   (issue 21 §1): client_credentials (SEP-1046), jwt_bearer (RFC 7523, SEP-1933 workload
#   identity federation), id_jag (SEP-990: an identity provider's ID token exchanged there
#   (RFC 8693) for an ID-JAG, then a jwt_bearer grant).
machine_grants := {"client_credentials", "jwt_bearer", "id_jag"}

_grant_of(e) := e.grant if e.grant in machine_grants

else := "authorization_code"

_idp_of(e) := {"token_endpoint": e.idp.token_endpoint, "client_id": _str_or_null(object.get(e.idp, "client_id", null))} if {
	e.grant == "id_jag"
	is_string(e.idp.token_endpoint)
} else := null

_is_added(f, c) if added(f, c)

else := false

_url(f, c) := u if {
	u := added(f, c).url
	is_string(u)
} else := catalog.connectors[c].url

_configured_scopes(f, c) := scopes.sorted(s) if {
	s := _entry(f, c).scopes
	is_array(s)
	every x in s {
		is_string(x)
	}
} else := scopes.sorted(catalog.default_scopes(c))

_str_or_null(v) := v if is_string(v)

else := null

_obj_or_null(v) := v if is_object(v)

else := null

_empty_digest := "sha256:e3b0c44298fc1c14"

# A description of a non-empty secret.
_secret(d) if {
	is_string(d["$ref"])
	d.digest != _empty_digest
}

_secret_or_null(d) := d if _secret(d)

else := null

_dpop_or_null(j) := {"key": j.dpop_key, "jwk": j.dpop_jwk} if {
	_secret(j.dpop_key)
	is_object(j.dpop_jwk)
} else := null

# METADATA
# title: token slot need
# description: Read a remote server's tokens (fresh re-reads the store; otherwise the process's memory may answer).
token_need(k, c, fresh) := facts.keyring(k, store.remote_token_user(c), token_fields, fresh)

# METADATA
# title: registration slot need
# description: Read a remote server's registration at its authorization server.
client_need(k, c) := facts.keyring(k, store.remote_client_user(c), client_fields, true)

# METADATA
# title: pre-registered client need
# description: Read a remote server's pre-registered client.
prereg_need(k, c) := facts.keyring(k, store.remote_prereg_user(c), prereg_fields, true)

# METADATA
# title: pre-registered client fields
# description: |
#   The secrets of a pre-registered client's slot: its id and secret, a private key (PEM,
#   for private_key_jwt) and an assertion (a workload's JWT, or an identity provider's ID token).
prereg_fields := ["client_id", "client_secret", "private_key", "assertion"]

# METADATA
# title: tokens
# description: |
#   A token slot as the operations judge it: {found:false}; {found, valid:false, version}
#   for a value that is not a token blob; else {found, valid, issuer, resource, access,
#   refresh (or null), expires_at (ms), scopes, requested, token_endpoint,
#   dpop ({key: the DPoP private key's description, jwk: its public JWK}, or null) and
#   token_type ("DPoP" with a key, else "Bearer"),
#   revocation_endpoint (or null), client ("registered" or "preregistered"),
#   client_id_hash, auth_method (how the client authenticated at the authorization, or
#   null), version}.
token(fact) := {"found": false} if {
	not fact.found == true
} else := v if {
	j := fact.json
	is_object(j)
	_secret(j.access_token)
	is_string(j.issuer)
	is_string(j.resource)
	is_number(j.expires_at)
	is_string(j.token_endpoint)
	j.client in {"registered", "preregistered"}
	is_string(j.client_id_hash)
	v := {
		"found": true, "valid": true,
		"issuer": j.issuer, "resource": j.resource,
		"access": j.access_token, "refresh": _secret_or_null(object.get(j, "refresh_token", null)),
		"expires_at": j.expires_at,
		"scopes": discovery.strings(object.get(j, "scopes", [])),
		"requested": discovery.strings(object.get(j, "requested", [])),
		"token_endpoint": j.token_endpoint,
		"revocation_endpoint": _str_or_null(object.get(j, "revocation_endpoint", null)),
		"client": j.client, "client_id_hash": j.client_id_hash,
		"auth_method": _method_or_null(object.get(j, "auth_method", null)),
		"dpop": _dpop_or_null(j),
		"token_type": _token_type(_dpop_or_null(j)),
		"version": fact.version,
	}
} else := {"found": true, "valid": false, "version": fact.version}

# A token stored with its DPoP key is sent as a DPoP token (RFC 9449 §7.1).
_token_type(k) := "DPoP" if is_object(k)

else := "Bearer"

# METADATA
# title: client
# description: |
#   A registration or pre-registered client slot: {found:false}, or {found, client_id,
#   client_secret (or null), client_id_hash, issuer (or null: a pre-registered client for
#   any issuer), private_key and assertion (descriptions, or null), auth_method (or null),
#   redirect_uri (or null), source, version}.
client(fact) := c if {
	fact.found == true
	j := fact.json
	is_object(j)
	_secret(j.client_id)
	c := {
		"found": true,
		"client_id": j.client_id, "client_id_hash": j.client_id.crc32,
		"client_secret": _secret_or_null(object.get(j, "client_secret", null)),
		"private_key": _secret_or_null(object.get(j, "private_key", null)),
		"assertion": _secret_or_null(object.get(j, "assertion", null)),
		"issuer": _str_or_null(object.get(j, "issuer", null)),
		"auth_method": _method_or_null(object.get(j, "auth_method", null)),
		"redirect_uri": _str_or_null(object.get(j, "redirect_uri", null)),
		"source": object.get(j, "source", "preregistered"),
		"version": fact.version,
	}
} else := {"found": false}

_method_or_null(m) := m if m in {"client_secret_basic", "client_secret_post", "none"}

else := null

# METADATA
# title: token request client authentication
# description: |
#   The client's credentials in a token request (client_secret_basic as an Authorization
#   header, client_secret_post or none as form members): {headers, form}.
client_auth(cl) := {
	"headers": {"Authorization": {"$basic": [cl.client_id, cl.client_secret]}},
	"form": {},
} if {
	cl.auth_method == "client_secret_basic"
	cl.client_secret != null
} else := {"headers": {}, "form": {"client_id": cl.client_id, "client_secret": cl.client_secret}} if {
	cl.auth_method == "client_secret_post"
	cl.client_secret != null
} else := {"headers": {}, "form": {"client_id": cl.client_id}}

# METADATA
# title: auth fix
# description: The command that authorizes a remote server.
auth_cmd(c) := concat("", ["grantwire mcp auth ", c])

# METADATA
# title: not authorized
# description: A remote server holds no usable tokens.
not_authorized(c, why) := errors.error(
	"NOT_CONNECTED",
	concat("", [c, " is not authorized (", why, ")"]),
	auth_cmd(c),
	{"connector": c},
)

# METADATA
# title: reauthorization required
# description: The remote server's authorization must be made again.
reauth(c, why) := errors.error(
	"REAUTH_REQUIRED",
	concat("", ["the ", c, " authorization must be made again (", why, ")"]),
	auth_cmd(c),
	{"connector": c, "cause": why},
)

# METADATA
# title: not remote
# description: The connector is known but is not a remote MCP server.
not_remote(c) := errors.configuration(
	concat("", [c, " is not a remote MCP server (type ", catalog.type_of(c), ")"]),
	"grantwire mcp list",
	{"connector": c},
)

# METADATA
# title: unknown remote server
# description: No catalog entry and no added server has this id.
unknown(c) := errors.error(
	"UNKNOWN_CONNECTOR",
	concat("", ["unknown remote MCP server ", scopes.quote(c)]),
	concat("", ["grantwire mcp add ", c, " --url <url>"]),
	{"connector": c},
)

# ---------------------------------------------------------------------------------------
# mcp_add

_url_arg := input.args.url

_opt_string(name) if object.get(input.args, name, null) == null

_opt_string(name) if is_string(input.args[name])

_add_args if {
	is_string(_c)
	is_string(_url_arg)
	_opt_string("client_id")
	_opt_string("issuer")
	_opt_string("client_metadata_url")
	_opt_string("grant")
	_opt_string("idp_token_endpoint")
	_opt_string("idp_client_id")
	_scopes_ok
}

_scopes_ok if object.get(input.args, "scopes", null) == null

_scopes_ok if {
	is_array(input.args.scopes)
	every s in input.args.scopes {
		is_string(s)
	}
}

_add_scopes := scopes.sorted(object.get(input.args, "scopes", []))

_client_id := input.args.client_id if {
	is_string(input.args.client_id)
	input.args.client_id != ""
}

_secret_arg := facts.arg(_f, "client_secret")

_key_arg := facts.arg(_f, "private_key")

_assertion_arg := facts.arg(_f, "assertion")

# The grant mcp_add records: the browser's authorization code unless a machine grant is named.
_add_grant := input.args.grant if {
	is_string(input.args.grant)
	input.args.grant != ""
} else := "authorization_code"

_machine_add if _add_grant != "authorization_code"

_idp_endpoint := input.args.idp_token_endpoint if {
	is_string(input.args.idp_token_endpoint)
	input.args.idp_token_endpoint != ""
}

_idp_client := input.args.idp_client_id if {
	is_string(input.args.idp_client_id)
	input.args.idp_client_id != ""
}

# Why a machine grant's configuration cannot be used (undefined when it can).
_grant_problem := concat("", ["the grant ", scopes.quote(_add_grant), " is not one of authorization_code, client_credentials, jwt_bearer, id_jag"]) if {
	not _add_grant in machine_grants
	_add_grant != "authorization_code"
} else := concat("", ["the ", _add_grant, " grant needs --client-id, the client registered at the authorization server"]) if {
	_machine_add
	not _client_id
} else := "the client_credentials grant needs the client's secret or private key" if {
	_add_grant == "client_credentials"
	not _secret_arg
	not _key_arg
} else := "give the client's secret or its private key, not both" if {
	_secret_arg
	_key_arg
} else := concat("", ["the ", _add_grant, " grant needs the assertion (", _assertion_what, ")"]) if {
	_add_grant in {"jwt_bearer", "id_jag"}
	not _assertion_arg
} else := "an assertion goes with the jwt_bearer or id_jag grant" if {
	_assertion_arg
	not _add_grant in {"jwt_bearer", "id_jag"}
} else := "a private key goes with a machine grant (client_credentials, jwt_bearer or id_jag)" if {
	_key_arg
	not _machine_add
} else := "the id_jag grant needs the identity provider's token endpoint (--idp-token-endpoint)" if {
	_add_grant == "id_jag"
	not _idp_endpoint
} else := "an identity provider's token endpoint or client goes with the id_jag grant" if {
	_add_grant != "id_jag"
	_idp_given
} else := concat("", ["the identity provider's token endpoint is refused: ", discovery.url_refusal(_idp_endpoint)]) if {
	discovery.url_refusal(_idp_endpoint)
} else := "the identity provider's token endpoint must not have a fragment" if {
	contains(_idp_endpoint, "#")
}

_idp_given if _idp_endpoint

_idp_given if _idp_client

_assertion_what := "the identity provider's ID token" if {
	_add_grant == "id_jag"
} else := "the workload's JWT"

_issuer_arg := input.args.issuer if {
	is_string(input.args.issuer)
	input.args.issuer != ""
}

_cimd := input.args.client_metadata_url if {
	is_string(input.args.client_metadata_url)
	input.args.client_metadata_url != ""
}

# A client ID metadata document URL is https with a path (draft-ietf-oauth-client-id-metadata-document §3).
_cimd_problem := "it must be an https URL" if {
	not startswith(_cimd, "https://")
} else := discovery.url_refusal(_cimd) if {
	discovery.url_refusal(_cimd)
} else := "it must have a path" if {
	discovery.path(_cimd) in {"", "/"}
} else := "it must not have a fragment" if {
	contains(_cimd, "#")
}

_add_problem := concat("", ["the server URL is refused: ", discovery.url_refusal(_url_arg)]) if {
	discovery.url_refusal(_url_arg)
} else := "the server URL must not have a fragment" if {
	contains(_url_arg, "#")
} else := concat("", ["a remote server takes at most ", format_int(max_scopes, 10), " scopes"]) if {
	count(_add_scopes) > max_scopes
} else := "a client secret needs a client id" if {
	_secret_arg
	not _client_id
} else := "an issuer names the authorization server of a pre-registered client; give --client-id too" if {
	_issuer_arg
	not _client_id
} else := concat("", ["the issuer is refused: ", discovery.issuer_problem(_issuer_arg)]) if {
	discovery.issuer_problem(_issuer_arg)
} else := concat("", ["the client ID metadata document URL is refused: ", _cimd_problem]) if {
	_cimd_problem
} else := _grant_problem

_add_needs := [
	facts.lock("lock", _c, lock_wait_ms),
	facts.after(facts.ledger("remote@lock", store.remote_file, []), "lock"),
	facts.after(facts.now("now@lock"), "lock"),
	facts.after(token_need("token@lock", _c, true), "lock"),
	facts.after(client_need("client@lock", _c), "lock"),
]

_doc := facts.value(_f, "remote@lock", {})

_old := _doc.servers[_c]

# Tokens and a registration made for another URL are for another resource: they go.
_url_changed if {
	is_object(_old)
	_old.url != _url_arg
}

_entry_new := object.union(
	{
		"url": _url_arg, "scopes": _add_scopes,
		"added_at": object.get(object.get(object.get(_doc, "servers", {}), _c, {}), "added_at", _f["now@lock"]),
		"preregistered": _prereg_entry,
	},
	object.union(object.union(_cimd_member, _kept_auth), _grant_member),
)

_grant_member := {"grant": _add_grant, "idp": {"token_endpoint": _idp_endpoint, "client_id": _idp_client_or_null}} if {
	_add_grant == "id_jag"
} else := {"grant": _add_grant} if {
	_machine_add
} else := {}

_idp_client_or_null := _idp_client if _idp_client

else := null

_cimd_member := {"client_metadata_url": _cimd} if _cimd

else := {}

_issuer_or_null := _issuer_arg if _issuer_arg

else := null

_prereg_entry := {"issuer": _issuer_or_null} if _client_id

else := null

_kept_auth := {"auth": _old.auth} if {
	not _url_changed
	is_object(_old.auth)
} else := {}

_version_op := [{"path": ["version"], "value": 1}] if not _doc.version

else := []

_slot_effects := [
	{"kind": "keyring.set", "user": store.remote_prereg_user(_c), "value": object.union(
		{"client_id": _client_id, "issuer": _issuer_or_null, "source": "preregistered"},
		_secret_member,
	)},
] if {
	_client_id
} else := [{"kind": "keyring.delete", "user": store.remote_prereg_user(_c)}]

_secret_member := object.union(object.union(_client_secret_member, _key_member), _assertion_member)

_client_secret_member := {"client_secret": facts.ref("arg", "client_secret")} if _secret_arg

else := {}

_key_member := {"private_key": facts.ref("arg", "private_key")} if _key_arg

else := {}

_assertion_member := {"assertion": facts.ref("arg", "assertion")} if _assertion_arg

else := {}

_reset_effects := [
	{"kind": "keyring.delete", "user": store.remote_token_user(_c)},
	{"kind": "keyring.delete", "user": store.remote_client_user(_c)},
] if {
	_url_changed
} else := []

# METADATA
# title: mcp_add decision
# description: |
#   Record a remote MCP server (id, https URL, optional scopes, pre-registered client id
#   and issuer, client ID metadata document URL, the grant and, for id_jag, the identity
#   provider) in mcp_remote.json, and its client secret, private key or assertion in the
#   credential store, under the server's lock. A catalog connector id cannot be
#   reused; changing the URL of a server deletes its tokens and registration.
# entrypoint: true
add := step.fail(errors.usage("mcp_add needs connector and url, and optional scopes, client_id, issuer, client_metadata_url, grant, idp_token_endpoint, idp_client_id"), []) if {
	not _add_args
} else := step.fail(errors.usage("a remote server id is 1 to 64 of a-z 0-9 _ . - starting with a letter or a digit"), []) if {
	not scopes.valid_connector_id(_c)
} else := step.fail(
	errors.configuration(
		concat("", [_c, " is a catalog connector; give the remote server another name"]),
		"grantwire catalog",
		{"connector": _c},
	),
	[],
) if {
	catalog.base_known(_c)
} else := step.fail(errors.configuration(_add_problem, "", {"connector": _c}), []) if {
	_add_problem
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _add_needs)
	count(m) > 0
} else := step.done(
	{
		"connector": _c, "url": _url_arg, "scopes": _add_scopes,
		"preregistered": _has_client_id, "reset": _reset, "grant": _add_grant,
	},
	array.concat(
		array.concat(_slot_effects, _reset_effects),
		[
			store.write(store.remote_file, array.concat(_version_op, [{"path": ["servers", _c], "value": _entry_new}])),
			{"kind": "event.emit", "type": "connector.configured", "payload": {"connector_id": _c, "account_id": ""}},
		],
	),
)

_has_client_id if _client_id

else := false

_reset if _url_changed

else := false

_in_catalog(c) if catalog.base_known(c)

else := false

# ---------------------------------------------------------------------------------------
# mcp_remote_list

_list_agent := input.args.agent if is_string(input.args.agent)

_list_args if object.get(input.args, "agent", null) == null

_list_args if is_string(input.args.agent)

_remote_ids := {c | some c, _ in object.get(facts.value(_f, store.remote_key, {}), "servers", {})} | {c |
	some c in catalog.ids
	catalog.type_of(c) == "mcp_remote"
}

_grants_doc := facts.value(_f, "grants", {})

_actives_doc := facts.value(_f, "actives", {})

_row(c, s) := {
	"id": c,
	"url": s.url,
	"in_catalog": _in_catalog(c),
	"scopes": s.scopes,
	"authorized": s.auth != null,
	"issuer": object.get(_auth_of(s), "issuer", null),
	"granted_scopes": object.get(_auth_of(s), "scopes", []),
	"authorized_at": object.get(_auth_of(s), "authorized_at", null),
	"registration": object.get(_auth_of(s), "registration", null),
	"grants": object.get(_grants_doc, c, {}),
	"active_for": sort([a | some a, v in object.get(_actives_doc, c, {}); v == true]),
}

# A server never authorized has auth null (object.get on null would be undefined).
_auth_of(s) := s.auth if is_object(s.auth)

else := {}

_listed(_) if not _list_agent

_listed(c) if {
	_ = _grants_doc[c][_list_agent]
	_actives_doc[c][_list_agent] == true
}

# METADATA
# title: mcp_remote_list decision
# description: |
#   The remote MCP servers (the catalog's and those added) with their URL, the scopes
#   configured, whether they are authorized and with which issuer and scopes (from the
#   non-secret mirror; the credential store is not read), the agents granted and those they
#   are active for; with an agent, only the servers that agent sees (granted and active).
# entrypoint: true
list := step.fail(errors.usage("mcp_remote_list takes an optional agent"), []) if {
	not _list_args
} else := step.need(m) if {
	m := facts.missing(_f, [
		ledger_need,
		facts.ledger("grants", store.grants_file, []),
		facts.ledger("actives", store.activations_file, ["activations"]),
	])
	count(m) > 0
} else := step.done(
	{"servers": [r |
		some c in sort(_remote_ids)
		s := server(_f, c)
		_listed(c)
		r := _row(c, s)
	]},
	[],
)

# ---------------------------------------------------------------------------------------
# mcp_logout

_logout_needs := [
	facts.lock("lock", _c, lock_wait_ms),
	facts.after(token_need("token@lock", _c, true), "lock"),
	facts.after(client_need("client@lock", _c), "lock"),
	facts.after(prereg_need("prereg@lock", _c), "lock"),
	facts.after(facts.ledger("remote@lock", store.remote_file, []), "lock"),
]

_ltok := token(_f["token@lock"])

_lclient := client(_f["prereg@lock"]) if {
	_ltok.client == "preregistered"
} else := client(_f["client@lock"])

# The refresh token (else the access token) is revoked when the authorization server named
# a revocation endpoint that passes the URL rule, with the client the tokens were issued to.
_revoke := [{
	"kind": "http.send", "method": "POST",
	"url": _ltok.revocation_endpoint,
	"headers": client_auth(_lclient).headers,
	"form": object.union(_revoked_token, client_auth(_lclient).form),
	"timeout_ms": 5000,
}] if {
	_ltok.valid == true
	discovery.url_allowed(_ltok.revocation_endpoint)
	_lclient.found == true
	_lclient.client_id_hash == _ltok.client_id_hash
} else := []

_revoked_token := {"token": _ltok.refresh, "token_type_hint": "refresh_token"} if {
	_ltok.refresh != null
} else := {"token": _ltok.access, "token_type_hint": "access_token"}

_had_auth if _f["remote@lock"].value.servers[_c].auth

_logout_ledger := [store.write(store.remote_file, [{"path": ["servers", _c, "auth"], "delete": true}])] if {
	_had_auth
} else := []

_logout_effects := array.concat(
	array.concat(_revoke, [
		{"kind": "keyring.delete", "user": store.remote_token_user(_c)},
		{"kind": "keyring.delete", "user": store.remote_client_user(_c)},
	]),
	array.concat(_logout_ledger, [{"kind": "event.emit", "type": "connector.disconnected", "payload": {"connector_id": _c}}]),
)

# METADATA
# title: mcp_logout decision
# description: |
#   Forget a remote server's authorization under its lock: the refresh token is revoked at
#   the authorization server (RFC 7009, sent and forgotten), the tokens and the
#   registration are deleted, the mirror in mcp_remote.json is removed. The server stays
#   added, with its pre-registered client; grants and activations are kept.
# entrypoint: true
logout := step.fail(errors.usage("mcp_logout needs connector"), []) if {
	not _c_given
} else := step.fail(unknown(_c), []) if {
	not catalog.known(_c)
} else := step.fail(not_remote(_c), []) if {
	catalog.type_of(_c) != "mcp_remote"
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _logout_needs)
	count(m) > 0
} else := step.done(
	{"connector": _c, "had_tokens": _ltok.found, "revoked": count(_revoke) > 0},
	_logout_effects,
)

# METADATA
# title: grant need
# description: The grant of an agent on a remote server (re-exported for the token gate).
grant_need(k, c, a) := grants.grant_need(k, c, a)

# ---------------------------------------------------------------------------------------
# mcp_remove

_remove_needs := array.concat(_logout_needs, [
	facts.after(facts.ledger("grants@lock", store.grants_file, [_c]), "lock"),
	facts.after(facts.ledger("actives@lock", store.activations_file, ["activations", _c]), "lock"),
	facts.after(store.tool_rules_need("rules@lock", _c), "lock"),
])

_usable(k) if {
	facts.has(_f, k)
	not store.problem(_f[k])
}

_removed_grants := sort(object.keys(facts.value(_f, "grants@lock", {}))) if _usable("grants@lock")

else := []

_removed_actives := sort([a | some a, v in facts.value(_f, "actives@lock", {}); v == true]) if _usable("actives@lock")

else := []

_wipe_grants := array.concat(
	[store.write(store.grants_file, [{"path": [_c], "delete": true, "expect": store.expect(_f["grants@lock"])}])],
	[grants.changed_event(_c, a, []) | some a in _removed_grants],
) if {
	_usable("grants@lock")
	_f["grants@lock"].exists == true
} else := []

_wipe_actives := array.concat(
	[store.write(store.activations_file, [{"path": ["activations", _c], "delete": true, "expect": store.expect(_f["actives@lock"])}])],
	[grants.activation_event(_c, a, false) | some a in _removed_actives],
) if {
	_usable("actives@lock")
	_f["actives@lock"].exists == true
} else := []

_remove_effects := array.concat(
	array.concat(_revoke, [
		{"kind": "keyring.delete", "user": store.remote_token_user(_c)},
		{"kind": "keyring.delete", "user": store.remote_client_user(_c)},
		{"kind": "keyring.delete", "user": store.remote_prereg_user(_c)},
		store.write(store.remote_file, [{"path": ["servers", _c], "delete": true}]),
	]),
	array.concat(
		array.concat(_wipe_grants, array.concat(_wipe_actives, store.wipe_tool_rules(_f["rules@lock"], _c))),
		[{"kind": "event.emit", "type": "connector.disconnected", "payload": {"connector_id": _c}}],
	),
)

# METADATA
# title: mcp_remove decision
# description: |
#   Remove a remote MCP server a person added, under its lock: the refresh token is revoked
#   at the authorization server (RFC 7009, sent and forgotten, as mcp_logout), its tokens,
#   registration and pre-registered client are deleted from the credential store, its entry
#   from mcp_remote.json, and every grant and activation on it. A catalog server cannot be
#   removed (mcp_logout forgets its authorization).
# entrypoint: true
remove := step.fail(errors.usage("mcp_remove needs connector"), []) if {
	not _c_given
} else := step.fail(unknown(_c), []) if {
	not catalog.known(_c)
} else := step.fail(not_remote(_c), []) if {
	catalog.type_of(_c) != "mcp_remote"
} else := step.fail(
	errors.configuration(
		concat("", [_c, " is a remote MCP server of the catalog, which cannot be removed; log out of it instead"]),
		concat("", ["grantwire mcp logout ", _c]),
		{"connector": _c},
	),
	[],
) if {
	catalog.base_known(_c)
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _remove_needs)
	count(m) > 0
} else := step.done(
	{
		"connector": _c, "had_tokens": _ltok.found, "revoked": count(_revoke) > 0,
		"revoked_grants": _removed_grants, "deactivated": _removed_actives,
	},
	_remove_effects,
)
