# METADATA
# title: Remote MCP authorization
# description: |
#   `mcp_auth(connector, scopes?, www_authenticate?, status?, rejected?, step_up?, timeout_ms?, flow?)`: authorize a
#   remote MCP server as an OAuth 2.1 public client, zero-config, per the MCP authorization
#   specification (2025-11-25, and 2026-07-28 where stricter). In order, stopping at the
#   first refusal: the loopback listener (a session where nobody can complete a browser
#   authorization is told so before anything is sent or registered); the server's
#   challenge (the WWW-Authenticate value the caller received, base64url-encoded, or a
#   probe of the server); protected-resource metadata (RFC 9728: the challenge's
#   resource_metadata, else path-aware then root; its resource must name this server);
#   authorization-server metadata of its first authorization server (RFC 8414 then OpenID,
#   in the MCP order; issuer identical; PKCE S256 listed); without any protected-resource
#   metadata, the 2025-03-26 fallbacks (the server's origin as authorization server, and
#   /authorize, /token, /register when that has no metadata either); the client: a
#   pre-registered one for this issuer, else a client ID metadata document when the server
#   supports them and one is configured, else the registration stored for this issuer and
#   redirect URI, else dynamic registration; the client, the authorization and storing happen
#   under the server's authorization lock (one process at a time: racing instances never
#   register twice or share a PKCE verifier), and a proxy's authorization (status given) that
#   finds, under that lock, a usable token another process stored for this issuer and resource
#   (not the refused one, args.rejected its digest; on a step-up one holding the challenged
#   scopes) uses it and authorizes nothing (RFC 7591, application_type native); the scopes
#   (the challenge's, with those asked for and, on a step-up, those held before; else those
#   asked for; else the metadata's scopes_supported; else none; offline_access only when
#   the authorization server lists it); the authorization (PKCE S256, state, RFC 8707
#   resource) through the loopback (flow "paste": the user may also paste the final
#   redirect address back, as connect's paste flow); the response's issuer (RFC 9207) before its code or
#   error; the code exchange with the resource (with a DPoP proof of a fresh key when the
#   authorization server lists ES256 in dpop_signing_alg_values_supported, again with its
#   nonce on use_dpop_nonce: package dpop); then, under the server's lock, the tokens
#   and the registration, stamped with the issuer, and the mirror in mcp_remote.json.
#   Every URL passes the URL rule of package discovery, and hosts never follow redirects.
package grantwire.remoteauth

import data.grantwire.catalog
import data.grantwire.discovery
import data.grantwire.dpop
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.oauth
import data.grantwire.remote
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store

# METADATA
# title: authorization timeout
# description: How long an authorization waits for the browser by default (milliseconds).
default_timeout_ms := 300000

# METADATA
# title: step-up limit
# description: How many step-up authorizations (403 insufficient_scope) one session may make.
max_step_ups := 2

# METADATA
# title: store lock wait
# description: How long storing a fresh authorization waits for the server's lock.
lock_wait_ms := 30000

# METADATA
# title: authorization lock wait
# description: |
#   How long an authorization waits, beyond its browser timeout, for the server's
#   authorization lock (another process may be authorizing in the browser).
auth_lock_wait_ms := 60000

# METADATA
# title: fresh token margin
# description: A token another process stored is used only while it stays valid for more than this many milliseconds (mcp_token's margin).
fresh_margin_ms := 60000

# METADATA
# title: MCP protocol version
# description: The protocol version of the probe that asks a server for its challenge.
protocol_version := "2025-11-25"

_f := object.get(input, "facts", {})

_c := input.args.connector

# ---------------------------------------------------------------------------------------
# arguments

_str_list(xs) if {
	is_array(xs)
	every s in xs {
		is_string(s)
	}
}

_opt_list(name) if object.get(input.args, name, null) == null

_opt_list(name) if _str_list(input.args[name])

_timeout_ok if object.get(input.args, "timeout_ms", null) == null

_timeout_ok if {
	is_number(input.args.timeout_ms)
	input.args.timeout_ms >= 1000
	input.args.timeout_ms <= 1800000
}

_step_up_ok if object.get(input.args, "step_up", null) == null

_step_up_ok if {
	is_number(input.args.step_up)
	input.args.step_up >= 0
	input.args.step_up == floor(input.args.step_up)
}

_challenge_ok if object.get(input.args, "www_authenticate", null) == null

_challenge_ok if {
	is_string(input.args.www_authenticate)
	count(input.args.www_authenticate) <= 16384
}

_status_ok if object.get(input.args, "status", null) == null

_status_ok if input.args.status in {401, 403}

_flow_ok if object.get(input.args, "flow", null) == null

_rejected_ok if object.get(input.args, "rejected", null) == null

_rejected_ok if is_string(input.args.rejected)

_rejected := input.args.rejected if is_string(input.args.rejected)

_flow_ok if input.args.flow in {"loopback", "paste"}

# The loopback's mode: "paste" reads the redirect address pasted back (and listens too).
_mode := "paste" if input.args.flow == "paste"

else := "listen"

_args_ok if {
	is_string(_c)
	_flow_ok
	_status_ok
	_rejected_ok
	_opt_list("scopes")
	_timeout_ok
	_step_up_ok
	_challenge_ok
}

_timeout := input.args.timeout_ms if is_number(input.args.timeout_ms)

else := default_timeout_ms

_step_ups := input.args.step_up if is_number(input.args.step_up)

else := 0

# ---------------------------------------------------------------------------------------
# what is stored

_server := remote.server(_f, _c)

_url := _server.url

_local_needs := [
	remote.token_need("token", _c, true),
	remote.client_need("client", _c),
	remote.prereg_need("prereg", _c),
]

_tok := remote.token(_f.token)

_pre := remote.client(_f.prereg)

_reg := remote.client(_f.client)

# ---------------------------------------------------------------------------------------
# the challenge

_given := base64url.decode(input.args.www_authenticate) if is_string(input.args.www_authenticate)

# Positive rules: a negated call on an undefined argument is false in Rego, not true.
_challenge_given if is_string(input.args.www_authenticate)

_probe_need := facts.http("probe", {
	"method": "POST",
	"url": _url,
	"headers": {
		"Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": protocol_version,
	},
	"json": {
		"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": {
			"protocolVersion": protocol_version, "capabilities": {},
			"clientInfo": {"name": "grantwire", "version": "1"},
		},
	},
	"max_bytes": 65536,
	"timeout_ms": discovery.request_timeout_ms,
})

_probe_failed if _f.probe.status == 0

_probe_failed if {
	_f.probe.status >= 300
	_f.probe.status < 400
}

# The server answered the probe without asking for authorization (issue 20 §1.7).
_probe_open if {
	not _challenge_given
	_f.probe.status >= 200
	_f.probe.status < 300
}

_header := _given if {
	is_string(input.args.www_authenticate)
} else := h if {
	h := _f.probe.headers["www-authenticate"]
	_f.probe.status in {401, 403}
} else := ""

_challenge := discovery.bearer(_header)

_challenged := discovery.challenge_scopes(_challenge)

_step_up if _challenge.error == "insufficient_scope"

# ---------------------------------------------------------------------------------------
# protected resource metadata

_header_prm := _challenge.resource_metadata if is_string(_challenge.resource_metadata)

_prm_candidates := array.concat([_header_prm], discovery.prm_urls(_url)) if {
	_header_prm
} else := discovery.prm_urls(_url)

_prm_urls := [u | some i, u in _prm_candidates; not u in array.slice(_prm_candidates, 0, i)]

_key(prefix, i) := concat("|", [prefix, format_int(i, 10)])

_get(k, u) := facts.http(k, {
	"method": "GET", "url": u,
	"headers": {"Accept": "application/json", "MCP-Protocol-Version": protocol_version},
	"max_bytes": discovery.max_document_bytes,
	"timeout_ms": discovery.request_timeout_ms,
})

_skipped(prefix, i) if discovery.verdict(_f[_key(prefix, i)]) == "next"

_prm_pending := [i | some i, _ in _prm_urls; not _skipped("prm", i)]

_prm_exhausted if count(_prm_pending) == 0

_prm_i := _prm_pending[0]

_prm_fact := _f[_key("prm", _prm_i)]

_prm_doc := _prm_fact.json if discovery.verdict(_prm_fact) == "document"

# Without protected-resource metadata the server follows the 2025-03-26 revision: its
# origin is the authorization server, and the resource is the server's URL.
_legacy if _prm_exhausted

_issuer := discovery.origin(_url) if {
	_legacy
} else := _prm_doc.authorization_servers[0]

_resource := discovery.canonical(_url) if {
	_legacy
} else := _prm_doc.resource

# ---------------------------------------------------------------------------------------
# authorization server metadata

_as_urls := discovery.as_urls(_issuer)

_as_pending := [i | some i, _ in _as_urls; not _skipped("as", i)]

_as_exhausted if count(_as_pending) == 0

_as_i := _as_pending[0]

_as_fact := _f[_key("as", _as_i)]

_as_doc := _as_fact.json if discovery.verdict(_as_fact) == "document"

_meta := {
	"authorization_endpoint": object.get(_as_doc, "authorization_endpoint", null),
	"token_endpoint": _as_doc.token_endpoint,
	"registration_endpoint": _str_or_null(object.get(_as_doc, "registration_endpoint", null)),
	"revocation_endpoint": _str_or_null(object.get(_as_doc, "revocation_endpoint", null)),
	"iss_supported": _flag(object.get(_as_doc, "authorization_response_iss_parameter_supported", null)),
	"cimd": _flag(object.get(_as_doc, "client_id_metadata_document_supported", null)),
	"auth_methods": _methods(_as_doc),
	"scopes_supported": discovery.strings(object.get(_as_doc, "scopes_supported", [])),
	"defaults": false,
} if {
	_as_doc
} else := {
	"authorization_endpoint": concat("", [_issuer, "/authorize"]),
	"token_endpoint": concat("", [_issuer, "/token"]),
	"registration_endpoint": concat("", [_issuer, "/register"]),
	"revocation_endpoint": null,
	"iss_supported": false,
	"cimd": false,
	"auth_methods": null,
	"scopes_supported": [],
	"defaults": true,
} if {
	_legacy
	_as_exhausted
}

_flag(v) if v == true

else := false

_str_or_null(v) := v if is_string(v)

else := null

_methods(doc) := discovery.strings(doc.token_endpoint_auth_methods_supported) if {
	is_array(doc.token_endpoint_auth_methods_supported)
} else := null

# ---------------------------------------------------------------------------------------
# scopes

_asked := scopes.union(object.get(input.args, "scopes", []), _server.scopes)

_prior := scopes.union(_tok.requested, _tok.scopes) if {
	_step_up
	_tok.valid == true
} else := []

_base_scopes := scopes.union(scopes.union(_challenged, _asked), _prior) if {
	count(_challenged) > 0
} else := _asked if {
	count(_asked) > 0
} else := discovery.strings(object.get(_prm_doc, "scopes_supported", [])) if {
	_prm_doc
} else := []

# offline_access asks for a refresh token, only where the authorization server lists it
# (and not for a machine grant, made again instead: RFC 6749 §4.4.3).
_requested := scopes.union(_base_scopes, ["offline_access"]) if {
	not _machine
	"offline_access" in _meta.scopes_supported
} else := _base_scopes

# A step-up for scopes the authorization already holds would change nothing.
_futile if {
	_step_up
	_tok.valid == true
	count(_challenged) > 0
	scopes.covers(_tok.scopes, _challenged)
}

_scope_query := {"scope": concat(" ", _requested)} if count(_requested) > 0

else := {}

# ---------------------------------------------------------------------------------------
# the client

_loopback_need := facts.loopback_mode("loopback", _c, "paste") if {
	_mode == "paste"
} else := facts.loopback_open("loopback", _c)

_redirect := _f.loopback.redirect_uri

_listening if is_string(_redirect)

_pre_fits if {
	_pre.found == true
	_pre.issuer in {null, _issuer}
}

_cimd_url := _server.client_metadata_url if is_string(_server.client_metadata_url)

_reg_fits if {
	_reg.found == true
	_reg.issuer == _issuer
	_reg.source == "dcr"
	_reg.redirect_uri == _redirect
}

# The registration path, in the order the specification recommends.
_path := "preregistered" if {
	_pre_fits
} else := "cimd" if {
	_meta.cimd == true
	_cimd_url
} else := "stored" if {
	_reg_fits
} else := "dcr" if {
	is_string(_meta.registration_endpoint)
}

_dcr_body := object.union(
	{
		"redirect_uris": [_redirect],
		"application_type": "native",
		"grant_types": ["authorization_code", "refresh_token"],
		"response_types": ["code"],
		"token_endpoint_auth_method": "none",
		"client_name": "grantwire",
	},
	_scope_query,
)

_dcr_need := facts.http("dcr", {
	"method": "POST",
	"url": _meta.registration_endpoint,
	"headers": {"Accept": "application/json"},
	"json": _dcr_body,
	"secret_fields": ["client_id", "client_secret", "registration_access_token"],
	"max_bytes": discovery.max_document_bytes,
	"timeout_ms": 15000,
})

_dcr := _f.dcr

_dcr_url_fields := ["client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri", "initiate_login_uri", "sector_identifier_uri"]

# Why a registration response cannot be used (undefined when it can).
_dcr_problem := "it could not be reached" if {
	_dcr.status == 0
} else := discovery.failure(_dcr) if {
	not _dcr.status in {200, 201, 400}
} else := concat("", ["it refused the registration (", oauth.error_code(_dcr.json.error), ")"]) if {
	_dcr.status == 400
	is_string(_dcr.json.error)
} else := "it refused the registration (status 400)" if {
	_dcr.status == 400
} else := "its answer is not a JSON object" if {
	not _dcr_object
} else := "its answer has no client_id" if {
	not _dcr_client_id
} else := m if {
	# the first field refused: several refused would give conflicting values
	m := [m |
		some f in _dcr_url_fields
		_dcr.json[f] != null
		p := _any_refusal(_dcr.json[f])
		m := concat("", ["its answer's ", f, " is refused: ", p])
	][0]
} else := concat("", ["its answer's redirect_uris are refused: ", p]) if {
	_dcr.json.redirect_uris != null
	p := [p | some u in _dcr_redirects; p := _any_refusal(u)][0]
} else := "its answer does not register the loopback redirect URI" if {
	_dcr.json.redirect_uris != null
	not _redirect in _dcr_redirects
}

# A positive rule: a negated call on an undefined argument is false in Rego, not true.
_dcr_client_id if is_string(_dcr.json.client_id["$ref"])

_dcr_object if is_object(_dcr.json)

_dcr_redirects := _dcr.json.redirect_uris if is_array(_dcr.json.redirect_uris)

else := [null]

_any_refusal(v) := "not a string" if {
	not is_string(v)
} else := discovery.url_refusal(v)

_dcr_secret := {"$ref": _dcr.json.client_secret["$ref"]} if is_string(_dcr.json.client_secret["$ref"])

else := null

# How a client with (or without) a secret authenticates, by what the server supports
# (RFC 8414: client_secret_basic when it does not say).
_method_for(has_secret) := "none" if {
	not has_secret
} else := "client_secret_basic" if {
	_meta.auth_methods == null
} else := "client_secret_basic" if {
	"client_secret_basic" in _meta.auth_methods
} else := "client_secret_post" if {
	"client_secret_post" in _meta.auth_methods
} else := "none" if {
	"none" in _meta.auth_methods
} else := "client_secret_basic"

_dcr_method := m if {
	m := _dcr.json.token_endpoint_auth_method
	m in {"client_secret_basic", "client_secret_post", "none"}
} else := _method_for(_dcr_secret != null)

# The client of this authorization: {client_id (a reference or the CIMD URL),
# client_secret (or null), client_id_hash (the token's binding), auth_method, source}.
_client := object.union(_pre, {"auth_method": _method_for(_pre.client_secret != null), "binding": "preregistered"}) if {
	_path == "preregistered"
} else := {
	"client_id": _cimd_url, "client_secret": null, "client_id_hash": concat("", ["url:", _cimd_url]),
	"auth_method": "none", "source": "cimd", "binding": "registered",
} if {
	_path == "cimd"
} else := object.union(_reg, {"binding": "registered"}) if {
	_path == "stored"
} else := {
	"client_id": {"$ref": _dcr.json.client_id["$ref"]}, "client_secret": _dcr_secret,
	"client_id_hash": _dcr.json.client_id.crc32,
	"auth_method": _dcr_method, "source": "dcr", "binding": "registered",
} if {
	_path == "dcr"
	not _dcr_problem
}

_client_slot := {
	"client_id": _cimd_url, "client_url": _cimd_url, "issuer": _issuer,
	"source": "cimd", "auth_method": "none",
} if {
	_path == "cimd"
} else := object.union(
	{
		"client_id": _client.client_id, "issuer": _issuer, "source": "dcr",
		"auth_method": _client.auth_method, "redirect_uri": _redirect,
	},
	_secret_member,
) if {
	_path == "dcr"
}

_secret_member := {"client_secret": _dcr_secret} if _dcr_secret != null

else := {}

_client_effects := [{"kind": "keyring.set", "user": store.remote_client_user(_c), "value": _client_slot}] if {
	_client_slot
} else := []

# ---------------------------------------------------------------------------------------
# the authorization

_verifier := {"$ref": "verifier#value"}

_state := {"$ref": "state#value"}

_auth_url := {
	"$url": _meta.authorization_endpoint,
	"query": object.union(
		{
			"response_type": "code",
			"client_id": _client.client_id,
			"redirect_uri": _redirect,
			"state": _state,
			"code_challenge": {"$s256": _verifier},
			"code_challenge_method": "S256",
			"resource": _resource,
		},
		_scope_query,
	),
}

_cb := _f.callback

_params := object.get(_cb, "params", {})

_has_code if is_string(_params.code["$ref"])

_has_iss if is_string(_params.iss)

# RFC 9207 (MCP 2026-07-28): a present iss must be the issuer, byte for byte; an absent
# one is refused when the authorization server promised it.
_iss_problem := "names another issuer" if {
	_has_iss
	_params.iss != _issuer
} else := "names no issuer although the authorization server promised one" if {
	not _has_iss
	_meta.iss_supported == true
}

_exchange_need := _exchange_as("exchange", "jti@exchange", "")

# The code exchange, with a DPoP proof (jti from the entropy fact under jti, the nonce) when
# the authorization server takes them.
_exchange_as(k, jti, nonce) := facts.commit(facts.http(k, {
	"method": "POST",
	"url": _meta.token_endpoint,
	"headers": object.union(object.union({"Accept": "application/json"}, remote.client_auth(_client).headers), _dpop_header(jti, nonce)),
	"form": object.union(
		{
			"grant_type": "authorization_code", "code": {"$ref": _params.code["$ref"]},
			"redirect_uri": _redirect, "code_verifier": _verifier, "resource": _resource,
		},
		remote.client_auth(_client).form,
	),
	"secret_fields": oauth.secret_fields,
	"timeout_ms": oauth.token_timeout_ms,
}))

# ---------------------------------------------------------------------------------------
# DPoP (package dpop): a key for this authorization, a proof on the code exchange, and one
# more exchange with the authorization server's nonce when it asks for one (RFC 9449 §8).

_dpop if {
	_as_doc
	dpop.supported(_as_doc)
}

_dpop_header(jti, nonce) := {"DPoP": dpop.proof(_f.dpopkey.key, _f.dpopkey.jwk, {"$ref": concat("", [jti, "#value"])}, "POST", _meta.token_endpoint, _f["now@dpop"], nonce, null)} if {
	_dpop
	facts.has(_f, "dpopkey")
} else := {}

_dpop_needs := [dpop.key_need("dpopkey"), facts.now("now@dpop"), facts.entropy("jti@exchange", 16)]

_as_nonce := dpop.nonce(_f.exchange) if {
	_dpop
	facts.has(_f, "dpopkey")
}

_nonce_needs := [facts.entropy("jti@nonce", 16), _exchange_as("exchange@nonce", "jti@nonce", _as_nonce)]

_exchange_fact := _f["exchange@nonce"] if facts.has(_f, "exchange@nonce")

else := _f.exchange

_r := oauth.response(_exchange_fact)

_token_type := dpop.token_type(_exchange_fact.json) if {
	_dpop
	facts.has(_f, "dpopkey")
} else := "Bearer" if {
	not _exchange_fact.json.token_type
} else := "Bearer" if {
	lower(_exchange_fact.json.token_type) == "bearer"
}

_bearer_type if _token_type

# A DPoP-bound token is stored with its key (a secret) and the public JWK.
_dpop_member := {"dpop_key": {"$ref": _f.dpopkey.key["$ref"]}, "dpop_jwk": _f.dpopkey.jwk} if _token_type == "DPoP"

else := {}

_granted := [s | some s in _r.scope] if {
	is_array(_r.scope)
} else := _requested

_not_granted := scopes.missing(_requested, _granted)

# ---------------------------------------------------------------------------------------
# racing instances (issue 21 §3)

# The authorization lock: held from the registration to the end, so that two processes
# never register twice, never wait in the browser for the same server at once, and never
# share a verifier or state. Taken before the server's lock (mcp_token takes that one only).
_auth_lock := concat("", [_c, ".authorize"])

_auth_needs := [
	facts.lock("authlock", _auth_lock, _timeout + auth_lock_wait_ms),
	facts.after(remote.token_need("token@auth", _c, true), "authlock"),
	facts.after(facts.now("now@auth"), "authlock"),
	facts.after(facts.ledger("remote@auth", store.remote_file, []), "authlock"),
]

_atok := remote.token(_f["token@auth"])

# A proxy's authorization (it received a 401 or 403) finds the tokens another process
# stored while it waited for the lock: usable for this issuer and resource, not the token
# the server refused, and on a step-up holding the challenged scopes. A person's mcp auth
# (no status) always authorizes.
_authorized_meanwhile if {
	input.args.status in {401, 403}
	_atok.valid == true
	_atok.issuer == _issuer
	_atok.resource == _resource
	_atok.expires_at - _f["now@auth"] > fresh_margin_ms
	not _refused_meanwhile
	_covers_challenge
}

_refused_meanwhile if _atok.access.digest == _rejected

_covers_challenge if not _step_up

_covers_challenge if {
	_step_up
	scopes.covers(_atok.scopes, _challenged)
}

_meanwhile_result := {
	"connector": _c, "issuer": _issuer, "resource": _resource,
	"scopes": _atok.scopes, "requested": _atok.requested, "not_granted": [],
	"registration": object.get(facts.value(_f, "remote@auth", {}), ["servers", _c, "auth", "registration"], "dynamic"),
	"refresh_token": _atok.refresh != null,
}

# ---------------------------------------------------------------------------------------
# storing

_locked_needs := [
	facts.lock("lock", _c, lock_wait_ms),
	facts.after(facts.now("now@lock"), "lock"),
	facts.after(facts.ledger("remote@lock", store.remote_file, []), "lock"),
]

_now := _f["now@lock"]

_refresh_member := {"refresh_token": {"$ref": _r.refresh["$ref"]}} if is_object(_r.refresh)

else := {}

_token_slot := object.union(
	{
		"issuer": _issuer, "resource": _resource,
		"access_token": {"$ref": _r.access["$ref"]},
		"expires_at": _now + (_r.expires_in * 1000),
		"scopes": _granted, "requested": _requested,
		"token_endpoint": _meta.token_endpoint,
		"revocation_endpoint": _meta.revocation_endpoint,
		"client": _client.binding, "client_id_hash": _client.client_id_hash,
		"auth_method": _client.auth_method,
	},
	object.union(_refresh_member, _dpop_member),
)

_registration_name := "preregistered" if {
	_path == "preregistered"
} else := "client_id_metadata_document" if {
	_path == "cimd"
} else := "dynamic"

_mirror := {
	"issuer": _issuer, "resource": _resource, "scopes": _granted,
	"authorized_at": _now, "registration": _registration_name,
}

_remote_doc := facts.value(_f, "remote@lock", {})

_version_op := [{"path": ["version"], "value": 1}] if not _remote_doc.version

else := []

_effects := array.concat(
	array.concat(_client_effects, [{"kind": "keyring.set", "user": store.remote_token_user(_c), "value": _token_slot}]),
	[
		store.write(store.remote_file, array.concat(_version_op, [{"path": ["servers", _c, "auth"], "value": _mirror}])),
		{"kind": "event.emit", "type": "connector.connected", "payload": {"connector_id": _c, "account": ""}},
	],
)

# ---------------------------------------------------------------------------------------
# errors

_fix := remote.auth_cmd(_c)

_problem(message) := errors.provider_problem(_c, message, "")

# A step-up's fix names the scopes: authorizing without the server's challenge would ask
# for fewer, and the server would refuse again.
_fix_scopes := scopes.flag(_stepup_scopes) if {
	input.args.status == 403
	_step_up
} else := ""

_interactive := errors.error(
	"INTERACTIVE_AUTH_REQUIRED",
	concat("", ["pasting the ", _c, " redirect back needs standard input, and this session has none; nothing was sent or stored"]),
	concat("", [_fix, _fix_scopes]),
	{"connector": _c},
) if {
	_mode == "paste"
} else := errors.error(
	"INTERACTIVE_AUTH_REQUIRED",
	concat("", ["authorizing ", _c, " needs a browser or a person at a terminal, and this session has neither; nothing was sent or stored"]),
	concat("", [_fix, _fix_scopes, " --no-browser"]),
	{"connector": _c},
)

_browser_gone := errors.error(
	"INTERACTIVE_AUTH_REQUIRED",
	concat("", ["authorizing ", _c, " needs a browser, and none could be opened; nothing was stored"]),
	concat("", [_fix, _fix_scopes, " --no-browser"]),
	{"connector": _c},
)

_insecure(what, reason) := errors.insecure_transport(concat("", [what, ": ", reason]))

_no_client := errors.configuration(
	concat("", [
		"the authorization server ", _issuer, " takes no dynamic registration and no client ID ",
		"metadata document grantwire can use; register grantwire there and give its client",
	]),
	concat("", [
		"grantwire mcp add ", _c, " --url ", scopes.quote(_url), " --client-id <id> --issuer ",
		scopes.quote(_issuer), " --client-secret-stdin",
	]),
	{"connector": _c, "issuer": _issuer},
)

_wrong_prereg := errors.configuration(
	concat("", [
		"the pre-registered client of ", _c, " is for the authorization server ", _pre.issuer,
		", but the server now names ", _issuer, "; it was not sent there",
	]),
	concat("", [
		"grantwire mcp add ", _c, " --url ", scopes.quote(_url), " --client-id <id> --issuer ",
		scopes.quote(_issuer), " --client-secret-stdin",
	]),
	{"connector": _c, "issuer": _issuer},
)

# The metadata announces the server under another address (RFC 9728 §3.3: refused, so
# that one server's metadata cannot stand for another's): both are named, and the fix adds
# the server under the announced one when that address passes the URL rule.
_announced := _prm_doc.resource

_resource_elsewhere := errors.provider_problem(
	_c,
	concat("", [
		"the protected resource metadata at ", _prm_urls[_prm_i], " cannot be used: its resource is not this server ",
		"(RFC 9728 §3.3): it announces the resource ", _announced, ", not ", _url,
		"; nothing was sent to an authorization server. If ", _announced, " is this server, add it under that address",
	]),
	_announced_fix,
)

_announced_fix := concat("", ["grantwire mcp add ", _c, " --url ", scopes.quote(_announced)]) if {
	not discovery.url_refusal(_announced)
	not contains(_announced, "#")
} else := ""

_no_auth_needed := errors.configuration(
	concat("", [
		"the ", _c, " server needs no authorization: it answered an MCP request without a token ",
		"(no 401 challenge) and publishes no protected resource metadata; nothing was registered or stored",
	]),
	"",
	{"connector": _c},
)

_too_many_scopes := errors.configuration(
	concat("", ["the authorization would ask for more than ", format_int(remote.max_scopes, 10), " scopes"]),
	"",
	{"connector": _c},
)

_step_up_refused(why) := errors.error(
	"CONNECTION_MISSING_SCOPES",
	concat("", ["the ", _c, " server asks for scopes ", concat(" ", _challenged), " (insufficient_scope): ", why]),
	concat("", [_fix, scopes.flag(_stepup_scopes)]),
	{"connector": _c, "missing_scopes": _challenged, "full_scopes": _stepup_scopes},
)

_stepup_scopes := scopes.union(scopes.union(_challenged, _asked), _prior)

# ---------------------------------------------------------------------------------------
# the decision

# METADATA
# title: mcp_auth decision
# description: One step of authorizing a remote MCP server; see the package description for the order.
# entrypoint: true
decision := step.fail(errors.usage("mcp_auth needs connector, and optional scopes, www_authenticate (base64url), status (401 or 403), rejected (a token digest), step_up, timeout_ms and flow (loopback or paste)"), []) if {
	not _args_ok
} else := step.need(m) if {
	m := facts.missing(_f, [remote.ledger_need])
	count(m) > 0
} else := step.fail(remote.unknown(_c), []) if {
	not catalog.known(_c)
} else := step.fail(remote.not_remote(_c), []) if {
	catalog.type_of(_c) != "mcp_remote"
} else := step.fail(_insecure("the server URL", discovery.url_refusal(_url)), []) if {
	discovery.url_refusal(_url)
} else := step.fail(_step_up_refused(concat("", ["grantwire stopped after ", format_int(max_step_ups, 10), " step-up authorizations in this session"])), []) if {
	_step_ups > max_step_ups
} else := step.need(m) if {
	m := facts.missing(_f, _local_needs)
	count(m) > 0
} else := step.need([_loopback_need]) if {
	not _machine
	not facts.has(_f, "loopback")
} else := step.fail(_interactive, []) if {
	not _machine
	not _listening
} else := step.need([_probe_need]) if {
	not _challenge_given
	not facts.has(_f, "probe")
} else := step.fail(_problem(concat("", ["the server ", discovery.failure(_f.probe)])), []) if {
	not _challenge_given
	_probe_failed
} else := step.fail(_problem("the server refused the request (403) without asking for more scopes (insufficient_scope); authorizing again would not help"), []) if {
	input.args.status == 403
	not _step_up
} else := step.fail(_step_up_refused("the authorization already holds them, so authorizing again would change nothing"), []) if {
	_futile
} else := step.fail(_insecure("the challenge's resource_metadata", discovery.url_refusal(_header_prm)), []) if {
	discovery.url_refusal(_header_prm)
} else := _discover

_discover := step.need([_get(_key("prm", _prm_i), _prm_urls[_prm_i])]) if {
	not _prm_exhausted
	not facts.has(_f, _key("prm", _prm_i))
} else := step.fail(_problem(concat("", ["the protected resource metadata at ", _prm_urls[_prm_i], " ", discovery.failure(_prm_fact)])), []) if {
	not _prm_exhausted
	discovery.verdict(_prm_fact) == "fail"
} else := step.fail(_resource_elsewhere, []) if {
	not _prm_exhausted
	is_string(_prm_doc.resource)
	not discovery.resource_matches(_prm_doc.resource, _url)
} else := step.fail(_problem(concat("", ["the protected resource metadata at ", _prm_urls[_prm_i], " cannot be used: ", p])), []) if {
	not _prm_exhausted
	p := discovery.prm_problem(_prm_doc, _url)
} else := step.fail(_no_auth_needed, []) if {
	_prm_exhausted
	_probe_open
} else := step.need([_get(_key("as", _as_i), _as_urls[_as_i])]) if {
	not _as_exhausted
	not facts.has(_f, _key("as", _as_i))
} else := step.fail(_problem(concat("", ["the authorization server metadata at ", _as_urls[_as_i], " ", discovery.failure(_as_fact)])), []) if {
	not _as_exhausted
	discovery.verdict(_as_fact) == "fail"
} else := step.fail(_problem(concat("", ["the authorization server metadata at ", _as_urls[_as_i], " cannot be used: ", p])), []) if {
	not _as_exhausted
	p := _as_doc_problem
} else := step.fail(_problem(concat("", ["the authorization server ", _issuer, " publishes no metadata (RFC 8414)"])), []) if {
	not _meta
} else := step.fail(_too_many_scopes, []) if {
	count(_requested) > remote.max_scopes
} else := step.fail(_wrong_prereg, []) if {
	_pre.found == true
	not _pre_fits
} else := step.fail(_no_client_for_grant, []) if {
	not _path
} else := _serialized

_serialized := step.need([_auth_needs[0]]) if {
	not facts.has(_f, "authlock")
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "authlock")
} else := step.need(m) if {
	m := facts.missing(_f, _auth_needs)
	count(m) > 0
} else := step.done(_meanwhile_result, []) if {
	_authorized_meanwhile
} else := _machine_flow if {
	_machine
} else := _register

_register := step.need([_dcr_need]) if {
	_path == "dcr"
	not facts.has(_f, "dcr")
} else := step.fail(_problem(concat("", ["the registration endpoint ", _meta.registration_endpoint, " ", _dcr_problem])), []) if {
	_path == "dcr"
	_dcr_problem
} else := step.need(m) if {
	m := facts.missing(_f, [facts.entropy("verifier", 32), facts.entropy("state", 32)])
	count(m) > 0
} else := step.need([facts.loopback_wait("callback", _auth_url, _state, _timeout, _c)]) if {
	not facts.has(_f, "callback")
} else := _callback

_callback := step.fail(_browser_gone, []) if {
	_cb.status == "unavailable"
} else := step.fail(errors.authorization_timeout(_c, _timeout, _fix), []) if {
	_cb.status != "callback"
} else := step.fail(errors.issuer_mismatch(_c, p, ""), []) if {
	p := _iss_problem
} else := step.fail(errors.consent_denied(_c, "access_denied"), []) if {
	_params.error == "access_denied"
} else := step.fail(_problem(concat("", ["the authorization endpoint answered ", oauth.error_code(_params.error), "; nothing was stored"])), []) if {
	is_string(_params.error)
} else := step.fail(_problem("the authorization response carried no code"), []) if {
	not _has_code
} else := step.need(m) if {
	_dpop
	m := facts.missing(_f, _dpop_needs)
	count(m) > 0
} else := step.need([_exchange_need]) if {
	not facts.has(_f, "exchange")
} else := step.need([m[0]]) if {
	_as_nonce
	m := facts.missing(_f, _nonce_needs)
	count(m) > 0
} else := _exchanged

# The token endpoint's answer (to the code exchange or a machine grant), then storing.
_exchanged := step.fail(errors.token_failure(_c, _r), []) if {
	not _r.ok == true
} else := step.fail(_problem("the token endpoint issued a token that is neither a Bearer nor a DPoP token; nothing was stored"), []) if {
	not _bearer_type
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, _locked_needs)
	count(m) > 0
} else := step.done(
	{
		"connector": _c, "issuer": _issuer, "resource": _resource,
		"scopes": _granted, "requested": _requested, "not_granted": _not_granted,
		"registration": _registration_name, "refresh_token": is_object(_r.refresh),
		"grant": _grant,
	},
	_effects,
)
