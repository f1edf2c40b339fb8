# METADATA
# title: Remote MCP bearer tokens
# description: |
#   `mcp_token(connector, agent, rejected?)`: the bearer token an agent's connection to a
#   remote MCP server carries (what `mcp proxy` sends). The gate first: the agent must hold
#   a grant for the server AND the pair must be active, or the error names the command that
#   fixes it; nothing from the credential store is read before. Then the stored access
#   token when it stays valid for more than 60 s and is not the one the server just
#   refused (args.rejected, its digest), else a refresh under the server's lock: re-read
#   under the lock (another process may have refreshed), sent to the token endpoint the
#   tokens came from with the client they were issued to and the resource (RFC 8707), and
#   committed (a rotated refresh token is saved even if the caller gives up). invalid_grant
#   deletes the tokens, invalid_client the registration too; both ask for `mcp auth`.
package grantwire.remotetoken

import data.grantwire.catalog
import data.grantwire.discovery
import data.grantwire.dpop
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.oauth
import data.grantwire.remote
import data.grantwire.step
import data.grantwire.store

# METADATA
# title: expiry margin
# description: A stored access token is used only while it stays valid for more than this many milliseconds.
margin_ms := 60000

# METADATA
# title: refresh lock wait
# description: How long a refresh waits for the server's lock (another process may be refreshing).
refresh_wait_ms := 15000

_f := object.get(input, "facts", {})

_c := input.args.connector

_a := input.args.agent

_rejected := input.args.rejected if is_string(input.args.rejected)

_args_ok if {
	is_string(_c)
	is_string(_a)
	_a != ""
	_rejected_ok
}

_rejected_ok if object.get(input.args, "rejected", null) == null

_rejected_ok if is_string(input.args.rejected)

# METADATA
# title: prefetch
# description: |
#   The facts read before the first question: the agent's grant and activation, the remote
#   servers file and the clock; the credential store waits for the gate.
prefetch := [
	{"key": "grant", "kind": "ledger.read", "ledger": store.grants_file, "path": [{"$arg": "connector"}, {"$arg": "agent"}]},
	{"key": "active", "kind": "ledger.read", "ledger": store.activations_file, "path": ["activations", {"$arg": "connector"}, {"$arg": "agent"}]},
	remote.ledger_need,
	facts.now("now"),
]

_gate_needs := [
	facts.ledger("grant", store.grants_file, [_c, _a]),
	facts.ledger("active", store.activations_file, ["activations", _c, _a]),
	remote.ledger_need,
	facts.now("now"),
]

_server := remote.server(_f, _c)

_tok := remote.token(_f.token)

# The token a server refused is not offered again.
_refused(t) if t.access.digest == _rejected

_usable(t, now) if {
	t.valid == true
	t.expires_at - now > margin_ms
	not _refused(t)
}

_result(t) := object.union(
	{
		"connector": _c,
		"access_token": {"$ref": t.access["$ref"]},
		"digest": t.access.digest,
		"expires_at": t.expires_at,
		"scopes": t.scopes,
		"issuer": t.issuer,
		"resource": t.resource,
		"token_type": t.token_type,
	},
	_dpop_result(t.dpop),
)

# A DPoP-bound token (RFC 9449 §7) is handed out with its key, so that the caller's host
# signs a proof for every request to the server, and with how many times one request may
# be sent again with the server's nonce.
_dpop_result(k) := {
	"dpop_key": {"$ref": k.key["$ref"]},
	"dpop_jwk": k.jwk,
	"dpop_nonce_retries": dpop.max_nonce_retries,
} if is_object(k)

else := {}

# A local MCP server is started on stdio by mcp run, not proxied (issue 20 §1.4).
_not_remote := errors.configuration(
	concat("", [_c, " is a local MCP server, not a remote one: grantwire mcp run starts it on stdio for ", _a]),
	concat("", ["grantwire mcp run ", _c, " --agent ", _a]),
	{"connector": _c, "type": "mcp_server"},
) if {
	catalog.type_of(_c) == "mcp_server"
} else := remote.not_remote(_c)

# METADATA
# title: mcp_token decision
# description: One step of handing an agent a bearer token for a remote MCP server; see the package description.
# entrypoint: true
decision := step.fail(errors.usage("mcp_token needs connector and agent, and an optional rejected (a token digest)"), []) if {
	not _args_ok
} else := step.need(m) if {
	m := facts.missing(_f, _gate_needs)
	count(m) > 0
} else := step.fail(remote.unknown(_c), []) if {
	not catalog.known(_c)
} else := step.fail(_not_remote, []) if {
	catalog.type_of(_c) != "mcp_remote"
} else := step.fail(errors.mcp_not_granted(_c, _a), []) if {
	not _f.grant.exists == true
} else := step.fail(errors.agent_not_active(_c, _a), []) if {
	not _f.active.value == true
} else := step.need(m) if {
	m := facts.missing(_f, [remote.token_need("token", _c, false)])
	count(m) > 0
} else := step.fail(remote.not_authorized(_c, "no tokens are stored"), []) if {
	not _tok.found == true
} else := step.done(_result(_tok), []) if {
	_usable(_tok, _f.now)
} else := _locked

_locked_needs := [
	facts.lock("lock", _c, refresh_wait_ms),
	facts.after(remote.token_need("token@lock", _c, true), "lock"),
	facts.after(remote.client_need("client@lock", _c), "lock"),
	facts.after(remote.prereg_need("prereg@lock", _c), "lock"),
	facts.after(facts.now("now@lock"), "lock"),
]

_ltok := remote.token(_f["token@lock"])

_lclient := _with_method(remote.client(_f["prereg@lock"])) if {
	_ltok.client == "preregistered"
} else := remote.client(_f["client@lock"])

# A pre-registered client's slot does not say how it authenticates (the authorization
# chose by the server's metadata): the refresh authenticates as the authorization did,
# which the token slot records.
_with_method(cl) := object.union(cl, {"auth_method": _ltok.auth_method}) if {
	cl.found == true
	cl.auth_method == null
	_ltok.auth_method != null
} else := cl

# The client the tokens were issued to: same issuer (a pre-registered client for any
# issuer matches every one) and the same client id.
_client_matches if {
	_lclient.found == true
	_lclient.client_id_hash == _ltok.client_id_hash
	_lclient.issuer in {null, _ltok.issuer}
}

_refresh_need := _refresh_as("refresh", "jti@refresh", "")

# A DPoP-bound token is refreshed with a proof of its key (RFC 9449 §5): jti from the
# entropy fact under jti, and the authorization server's nonce when it asked for one.
_dpop_header(jti, nonce) := {"DPoP": dpop.proof(
	_ltok.dpop.key, _ltok.dpop.jwk, {"$ref": concat("", [jti, "#value"])},
	"POST", _ltok.token_endpoint, _f["now@lock"], nonce, null,
)} if {
	is_object(_ltok.dpop)
} else := {}

_dpop_needs := [facts.entropy("jti@refresh", 16)] if is_object(_ltok.dpop)

else := []

_as_nonce := dpop.nonce(_f.refresh) if is_object(_ltok.dpop)

_nonce_needs := [facts.entropy("jti@nonce", 16), _refresh_as("refresh@nonce", "jti@nonce", _as_nonce)]

_refresh_fact := _f["refresh@nonce"] if facts.has(_f, "refresh@nonce")

else := _f.refresh

_refresh_as(k, jti, nonce) := facts.commit(facts.http(k, {
	"method": "POST",
	"url": _ltok.token_endpoint,
	"headers": object.union(object.union({"Accept": "application/json"}, remote.client_auth(_lclient).headers), _dpop_header(jti, nonce)),
	"form": object.union(
		{"grant_type": "refresh_token", "refresh_token": {"$ref": _ltok.refresh["$ref"]}, "resource": _ltok.resource},
		remote.client_auth(_lclient).form,
	),
	"secret_fields": oauth.secret_fields,
	"timeout_ms": oauth.token_timeout_ms,
}))

_clear_tokens := [{"kind": "keyring.delete", "user": store.remote_token_user(_c), "expect": {"version": _ltok.version}}]

_locked := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _locked_needs)
	count(m) > 0
} else := step.fail(remote.not_authorized(_c, "no tokens are stored"), []) if {
	not _ltok.found == true
} else := step.fail(remote.reauth(_c, "the stored tokens are not readable; they were deleted"), _clear_tokens) if {
	not _ltok.valid == true
} else := step.done(_result(_ltok), []) if {
	_usable(_ltok, _f["now@lock"])
} else := step.fail(remote.reauth(_c, "the access token expired or was refused, and no refresh token was issued"), []) if {
	_ltok.refresh == null
} else := step.fail(remote.reauth(_c, "the client the tokens were issued to is no longer stored"), []) if {
	not _client_matches
} else := step.fail(errors.insecure_transport(concat("", ["token endpoint: ", discovery.url_refusal(_ltok.token_endpoint)])), []) if {
	discovery.url_refusal(_ltok.token_endpoint)
} else := step.need(m) if {
	m := facts.missing(_f, _dpop_needs)
	count(m) > 0
} else := step.need([_refresh_need]) if {
	not facts.has(_f, "refresh")
} else := step.need([m[0]]) if {
	_as_nonce
	m := facts.missing(_f, _nonce_needs)
	count(m) > 0
} else := _refreshed(oauth.response(_refresh_fact))

# The token type of the refresh's answer: a DPoP token only for a proof sent.
_new_type(j) := dpop.token_type(j) if {
	is_object(_ltok.dpop)
} else := "Bearer" if {
	not j.token_type
} else := "Bearer" if {
	lower(j.token_type) == "bearer"
}

_bearer(j) if _new_type(j)

_dpop_member(j) := {"dpop_key": {"$ref": _ltok.dpop.key["$ref"]}, "dpop_jwk": _ltok.dpop.jwk} if {
	_new_type(j) == "DPoP"
} else := {}

# The scopes after a refresh: what the server says it granted, else what was held.
_held_after(r) := r.scope if is_array(r.scope)

else := _ltok.scopes

_new_refresh(r) := {"$ref": r.refresh["$ref"]} if is_object(r.refresh)

else := {"$ref": _ltok.refresh["$ref"]}

_refreshed_dpop(j) := _ltok.dpop if _new_type(j) == "DPoP"

else := null

_expires_at(r) := _f["now@lock"] + (r.expires_in * 1000)

_save(r) := {
	"kind": "keyring.set", "user": store.remote_token_user(_c),
	"value": object.union(
		{
			"issuer": _ltok.issuer, "resource": _ltok.resource,
			"access_token": {"$ref": r.access["$ref"]}, "refresh_token": _new_refresh(r),
			"expires_at": _expires_at(r), "scopes": _held_after(r), "requested": _ltok.requested,
			"token_endpoint": _ltok.token_endpoint, "revocation_endpoint": _ltok.revocation_endpoint,
			"client": _ltok.client, "client_id_hash": _ltok.client_id_hash,
			"auth_method": _ltok.auth_method,
		},
		_dpop_member(_refresh_fact.json),
	),
	"expect": {"version": _ltok.version},
}

_refreshed(r) := step.fail(
	errors.provider_problem(_c, "the token endpoint issued a token that is neither a Bearer nor a DPoP token", ""),
	[],
) if {
	r.ok == true
	not _bearer(_refresh_fact.json)
} else := step.done(
	object.union(
		{
			"connector": _c,
			"access_token": {"$ref": r.access["$ref"]},
			"digest": r.access.digest,
			"expires_at": _expires_at(r),
			"scopes": _held_after(r),
			"issuer": _ltok.issuer,
			"resource": _ltok.resource,
			"token_type": _new_type(_refresh_fact.json),
		},
		_dpop_result(_refreshed_dpop(_refresh_fact.json)),
	),
	[_save(r)],
) if {
	r.ok == true
} else := step.fail(remote.reauth(_c, "the authorization server refused the refresh token (invalid_grant); the tokens were deleted"), _clear_tokens) if {
	r.kind == "oauth"
	r.error == "invalid_grant"
} else := step.fail(
	remote.reauth(_c, "the authorization server refused the client (invalid_client); the tokens and the registration were deleted"),
	array.concat(_clear_tokens, [{"kind": "keyring.delete", "user": store.remote_client_user(_c)}]),
) if {
	r.kind == "oauth"
	r.error == "invalid_client"
	_ltok.client == "registered"
} else := step.fail(remote.reauth(_c, "the token endpoint answered 401; nothing was deleted"), []) if {
	r.status == 401
} else := step.fail(errors.token_failure(_c, r), [])
