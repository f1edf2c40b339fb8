# METADATA
# title: OAuth 2.0 requests and responses
# description: |
#   The provider side of a connection, as HTTP exchanges the host performs verbatim: the
#   authorization URL (PKCE S256, RFC 7636; loopback redirect, RFC 8252), the code exchange
#   and the refresh (RFC 6749 §4.1.3, §6) with the client authentication the catalog names
#   (client_secret_basic, client_secret_post or none; RFC 8414's default is
#   client_secret_basic for a client with a secret), what a token response means (RFC 6749
#   §5), the authorization response's issuer (RFC 9207), the account from the userinfo
#   endpoint, and revocation at the provider (RFC 7009). Every URL passes the transport rule
#   before it is used; hosts never follow redirects.
package grantwire.oauth

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.scopes
import data.grantwire.store
import data.grantwire.transport

# METADATA
# title: token request timeout
# description: How long a token request may take (milliseconds).
token_timeout_ms := 30000

# METADATA
# title: default token lifetime
# description: The lifetime assumed when the token endpoint gives no positive expires_in (seconds).
default_expires_in := 3600

# METADATA
# title: secret response members
# description: The members of a token response that are secrets (answered as descriptions).
secret_fields := ["access_token", "refresh_token", "id_token"]

_spec(p) := catalog.connectors[p]

# METADATA
# title: endpoint
# description: |
#   A catalog endpoint of a provider with the client's tenant in place of "{tenant}"
#   (undefined when the catalog has none).
endpoint(p, field, tenant) := replace(u, "{tenant}", tenant) if {
	u := _spec(p)[field]
	is_string(u)
	u != ""
	is_string(tenant)
} else := u if {
	u := _spec(p)[field]
	is_string(u)
	u != ""
	not contains(u, "{tenant}")
}

# METADATA
# title: endpoint problem
# description: Why a provider's endpoint cannot be used (missing, or refused by the transport rule).
endpoint_problem(p, field, tenant) := concat("", ["the catalog gives ", p, " no usable ", field]) if {
	not endpoint(p, field, tenant)
} else := concat("", [p, " ", field, ": ", transport.refusal(endpoint(p, field, tenant))])

# METADATA
# title: client authentication
# description: |
#   How the client authenticates at the token endpoint: the catalog's
#   token_endpoint_auth_method, else client_secret_basic with a secret and none without.
auth_method(p, client) := m if {
	m := _spec(p).token_endpoint_auth_method
	m in {"client_secret_basic", "client_secret_post", "none"}
} else := "client_secret_basic" if {
	client.has_secret == true
} else := "none"

# The client's credentials in a token request: an Authorization header, or form members.
_auth_headers(p, client) := {"Authorization": {"$basic": [client.client_id, client.client_secret]}} if {
	auth_method(p, client) == "client_secret_basic"
	client.has_secret == true
} else := {}

_auth_form(p, client) := {"client_id": client.client_id, "client_secret": client.client_secret} if {
	auth_method(p, client) == "client_secret_post"
	client.has_secret == true
} else := {} if {
	auth_method(p, client) == "client_secret_basic"
	client.has_secret == true
} else := {"client_id": client.client_id}

# METADATA
# title: invalid client
# description: |
#   What a token endpoint's invalid_client (RFC 6749 §5.2) says, and only that. A provider
#   whose catalog entry requires a secret, configured without one: it needs the client's
#   secret (the fix stores it). A client with a secret: the id, the secret or the way they
#   were sent is wrong. A public client (no secret configured, and the catalog does not say
#   one is needed, as for Microsoft's): the client id is wrong or not registered as a public
#   client, and the fix configures the client again without a secret (see public_client;
#   the gate answers such a refusal with REAUTH_REQUIRED, as GAIA does).
invalid_client(p, client) := errors.configuration(
	concat("", [
		"the ", p, " token endpoint refused the OAuth client (invalid_client) and no client secret is configured ",
		"(neither stored with the client nor in ", store.env_name(p, "client_secret_env", "CLIENT_SECRET"),
		"); the catalog says ", p, " needs the client's secret",
	]),
	concat("", ["grantwire configure ", p, " --client-id <id> --client-secret-stdin"]),
	{"connector": p, "missing": "client_secret"},
) if {
	not client.has_secret == true
	catalog.connectors[p].client_secret_required == true
} else := errors.configuration(
	concat("", [
		"the ", p, " token endpoint refused the OAuth client id (invalid_client); no client secret is configured ",
		"and the catalog does not say ", p, " needs one, so the id is wrong or not registered as a public client",
	]),
	concat("", ["grantwire configure ", p, " --client-id <id>"]),
	{"connector": p, "client_auth": "none"},
) if {
	public_client(p, client)
} else := errors.configuration(
	concat("", [
		"the ", p, " token endpoint refused the OAuth client's credentials (invalid_client; they were sent as ",
		auth_method(p, client), "): check the client id and secret",
	]),
	concat("", ["grantwire configure ", p, " --client-id <id> --client-secret-stdin"]),
	{"connector": p, "client_auth": auth_method(p, client)},
)

# METADATA
# title: public client
# description: |
#   A client that authenticates with no secret: none is configured, and the catalog entry
#   does not require one (Microsoft's public clients; an entry silent on secrets).
public_client(p, client) if {
	not client.has_secret == true
	not catalog.connectors[p].client_secret_required == true
}

# METADATA
# title: token request
# description: |
#   A committed token request (the server rotates or consumes what it is sent, so the
#   answer is saved even if the caller gives up meanwhile).
token_need(k, p, client, form) := facts.commit(_token_request(k, p, client, form))

_token_request(k, p, client, form) := facts.http(k, {
	"method": "POST",
	"url": endpoint(p, "token_url", client.tenant),
	"headers": object.union({"Accept": "application/json"}, _auth_headers(p, client)),
	"form": object.union(form, _auth_form(p, client)),
	"secret_fields": secret_fields,
	"timeout_ms": token_timeout_ms,
})

# METADATA
# title: refresh request
# description: The refresh_token grant (RFC 6749 §6) with the stored refresh token.
refresh_need(k, p, client, refresh) := token_need(k, p, client, {"grant_type": "refresh_token", "refresh_token": refresh})

# METADATA
# title: code exchange
# description: The authorization_code grant with the PKCE verifier (RFC 7636 §4.5).
exchange_need(k, p, client, code, redirect_uri, verifier) := token_need(k, p, client, {
	"grant_type": "authorization_code", "code": code,
	"redirect_uri": redirect_uri, "code_verifier": verifier,
})

# METADATA
# title: device grant type
# description: The grant type of a device access token request (RFC 8628 §3.4).
device_grant_type := "urn:ietf:params:oauth:grant-type:device_code"

# METADATA
# title: device authorization request
# description: |
#   Ask the device authorization endpoint for a device code and a user code (RFC 8628
#   §3.1): the client id and the scopes, joined by the catalog's separator, the client
#   authenticated as at the token endpoint (RFC 8628 §3.1 applies RFC 6749 §3.2.1: a
#   client with a secret sends it; a public client its id alone). The device_code of the
#   answer is a secret (answered as a description); the user code is shown to the user,
#   so it is not.
device_need(k, p, client, list) := facts.http(k, {
	"method": "POST",
	"url": endpoint(p, "device_authorization_url", client.tenant),
	"headers": object.union({"Accept": "application/json"}, _auth_headers(p, client)),
	"form": object.union({"client_id": client.client_id, "scope": concat(_separator(p), list)}, _auth_form(p, client)),
	"secret_fields": ["device_code"],
	"timeout_ms": token_timeout_ms,
})

# METADATA
# title: device access token request
# description: |
#   One poll of the token endpoint with the device code (RFC 8628 §3.4), authenticated as
#   the code exchange is. Not committed: until the user approves nothing is issued, and a
#   cancelled poll loses nothing that matters.
device_poll_need(k, p, client, device_code) := _token_request(k, p, client, {
	"grant_type": device_grant_type, "device_code": device_code,
})

# METADATA
# title: device flow offered
# description: |
#   The catalog gives the provider a device authorization endpoint and, when it limits the
#   device flow to some scopes (device_scopes), every scope of the list is among them.
device_allows(p, list) if {
	is_string(_spec(p).device_authorization_url)
	_spec(p).device_authorization_url != ""
	every s in list {
		_device_scope(p, s)
	}
}

_device_scope(p, _) if not _limited(p)

_limited(p) if is_array(_spec(p).device_scopes)

_device_scope(p, s) if s in _spec(p).device_scopes

# METADATA
# title: device flow scopes refused
# description: The scopes of a list the provider's device flow does not allow (empty when it has no limit).
device_refused(p, list) := [s | some s in list; not _device_scope(p, s)]

# METADATA
# title: device authorization response
# description: |
#   What a device authorization endpoint's answer means (RFC 8628 §3.2): {ok: true,
#   device_code (a description), user_code, verification_uri, verification_uri_complete
#   (null unless given and allowed by the transport rule), expires_in and interval
#   (seconds; 5 when absent)}, or a failure as response() reports one, or {ok: false, kind:
#   "invalid", ...} when a member of a 200 answer is missing or unusable: a user code that is not 1-32
#   letters, digits, spaces or dashes, or a verification URI the transport rule refuses
#   (Google names it verification_url). Nothing the server sent is echoed.
device_response(r) := {
	"ok": true,
	"device_code": r.json.device_code,
	"user_code": r.json.user_code,
	"verification_uri": _verification_uri(r.json),
	"verification_uri_complete": _complete_uri(r.json),
	"expires_in": r.json.expires_in,
	"interval": _interval(r.json),
} if {
	r.status == 200
	_device_ok(r.json)
} else := {"ok": false, "kind": "invalid", "status": 200, "error": "invalid_device_response", "detail": ""} if {
	r.status == 200
	is_object(r.json)
	not _has_error(r.json)
} else := response(r)

_has_error(j) if is_string(j.error)

_device_ok(j) if {
	is_string(j.device_code["$ref"])
	is_string(j.user_code)
	regex.match(`^[A-Za-z0-9 -]{1,32}$`, j.user_code)
	_verification_uri(j)
	is_number(j.expires_in)
	j.expires_in > 0
	j.expires_in == floor(j.expires_in)
}

_verification_uri(j) := j.verification_uri if {
	transport.allowed(j.verification_uri)
} else := j.verification_url if {
	transport.allowed(j.verification_url)
}

_complete_uri(j) := j.verification_uri_complete if {
	transport.allowed(j.verification_uri_complete)
} else := null

_interval(j) := j.interval if {
	is_number(j.interval)
	j.interval > 0
	j.interval == floor(j.interval)
} else := 5

# METADATA
# title: authorization URL
# description: |
#   The authorization request (RFC 6749 §4.1.1) with PKCE S256 and the state, as a template
#   the host renders: the catalog's auth_params, scopes joined by the catalog's separator.
authorization_url(p, client, list, redirect_uri, state, verifier) := {
	"$url": endpoint(p, "authorization_url", client.tenant),
	"query": object.union(object.get(_spec(p), "auth_params", {}), {
		"response_type": "code",
		"client_id": client.client_id,
		"redirect_uri": redirect_uri,
		"scope": concat(_separator(p), list),
		"state": state,
		"code_challenge": {"$s256": verifier},
		"code_challenge_method": "S256",
	}),
}

_separator(p) := s if {
	s := _spec(p).scope_separator
	is_string(s)
	s != ""
} else := " "

# METADATA
# title: userinfo request
# description: Ask the provider's userinfo endpoint who the account is (with the new access token).
userinfo_need(k, p, client, access) := facts.http(k, {
	"method": "GET",
	"url": endpoint(p, "userinfo_url", client.tenant),
	"headers": {"Accept": "application/json", "Authorization": {"$concat": ["Bearer ", access]}},
	"timeout_ms": 10000,
})

# METADATA
# title: has userinfo
# description: The provider has a usable userinfo endpoint.
has_userinfo(p, client) if transport.allowed(endpoint(p, "userinfo_url", client.tenant))

# METADATA
# title: account
# description: The account a userinfo answer names (its email, else an e-mail-like preferred_username, else login), or "".
account(r) := r.json.email if {
	r.status == 200
	is_string(r.json.email)
	r.json.email != ""
} else := r.json.preferred_username if {
	r.status == 200
	is_string(r.json.preferred_username)
	contains(r.json.preferred_username, "@")
} else := r.json.login if {
	r.status == 200
	is_string(r.json.login)
	r.json.login != ""
} else := ""

# METADATA
# title: revocation
# description: |
#   Revoke a refresh token at the provider (RFC 7009), best effort: sent and forgotten, never
#   blocking the local wipe (undefined when the catalog names no revocation endpoint).
revoke_effect(p, client, token) := {
	"kind": "http.send", "method": "POST",
	"url": endpoint(p, "revocation_url", client.tenant),
	"headers": _auth_headers(p, client),
	"form": object.union({"token": token, "token_type_hint": "refresh_token"}, _auth_form(p, client)),
	"timeout_ms": 5000,
} if {
	transport.allowed(endpoint(p, "revocation_url", client.tenant))
}

# ---------------------------------------------------------------------------------------
# token responses

# METADATA
# title: token response
# description: |
#   What a token endpoint's answer means: {ok: true, access, refresh (null when none
#   issued), expires_in, scope (a list, or null when the server said nothing)} or
#   {ok: false, kind, status, error, detail}: kind "oauth" (an RFC 6749 §5.2 error code, also
#   when a server answers 200 with one), "not_json", "no_access_token", "transport" (no
#   answer: timeout, refused, tls) or "status" (any other status). Error codes are kept only
#   when they look like one; descriptions are never repeated.
response(r) := {"ok": false, "kind": "transport", "status": 0, "error": _word(r.error), "detail": _transport_detail(r.error)} if {
	r.status == 0
} else := {"ok": false, "kind": "oauth", "status": _error_status(r.status), "error": _code(r.json.error), "detail": ""} if {
	is_object(r.json)
	is_string(r.json.error)
} else := {"ok": false, "kind": "not_json", "status": r.status, "error": "not_json", "detail": "the token endpoint answered without JSON"} if {
	r.status == 200
	not _json_object(r)
} else := {"ok": false, "kind": "no_access_token", "status": r.status, "error": "no_access_token", "detail": "the token response has no access_token"} if {
	r.status == 200
	not _has_access(r)
} else := {
	"ok": true,
	"access": r.json.access_token,
	"refresh": _refresh(r.json),
	"expires_in": _expires_in(r.json),
	"scope": _granted(r.json),
} if {
	r.status == 200
} else := {"ok": false, "kind": "status", "status": _number(r.status), "error": "http_error", "detail": ""}

# Positive rules: a negated call on an undefined argument is false in Rego, not true.
_json_object(r) if is_object(r.json)

_has_access(r) if is_string(r.json.access_token["$ref"])

_has_iss(params) if is_string(params.iss)

_number(n) := n if is_number(n)

else := 0

# RFC 6749 §5.2 errors are 400; a server that answers 200 with one is read as 400.
_error_status(s) := 400 if s == 200

else := _number(s)

_word(s) := s if {
	is_string(s)
	s in {"timeout", "refused", "tls", "canceled", "failed"}
} else := "failed"

_transport_detail(e) := "no answer in time" if {
	e == "timeout"
} else := "the connection was refused" if {
	e == "refused"
} else := "the TLS handshake failed" if {
	e == "tls"
} else := "the request failed"

_code(s) := error_code(s)

# METADATA
# title: error code
# description: An OAuth error code as received when it looks like one (RFC 6749 §5.2), else "unrecognised_error".
error_code(s) := s if regex.match(`^[A-Za-z0-9_.-]{1,64}$`, s)

else := "unrecognised_error"

_refresh(j) := j.refresh_token if is_string(j.refresh_token["$ref"])

else := null

_expires_in(j) := j.expires_in if {
	is_number(j.expires_in)
	j.expires_in > 0
	j.expires_in == floor(j.expires_in)
} else := default_expires_in

# The scopes a token response grants (RFC 6749 §5.1; some providers separate them with
# commas), or null when it does not say.
_granted(j) := scopes.sorted([s | some s in split(replace(j.scope, ",", " "), " "); s != ""]) if {
	is_string(j.scope)
	trim_space(j.scope) != ""
} else := null

# ---------------------------------------------------------------------------------------
# the authorization response

# METADATA
# title: expected issuer
# description: |
#   The issuer an authorization response must name (RFC 9207): the catalog's issuer, else
#   the origin of the authorization endpoint.
issuer(p, client) := i if {
	i := _spec(p).issuer
	is_string(i)
	i != ""
} else := transport.origin(endpoint(p, "authorization_url", client.tenant))

# METADATA
# title: issuer required
# description: The provider promises an iss parameter (its catalog entry names an issuer).
issuer_required(p) if {
	is_string(_spec(p).issuer)
	_spec(p).issuer != ""
}

# METADATA
# title: issuer problem
# description: |
#   Why a callback's iss is refused (RFC 9207 §2.4): present and different from the expected
#   issuer, or absent where the provider promises it. Undefined when it is acceptable. The
#   expected issuer is named, and the one received when it is a plain http(s) address (any
#   other text is not repeated): a catalog that points a provider at another server but
#   keeps its issuer is told which issuer that server names.
issuer_problem(p, client, params) := concat("", [
	"names the issuer ", params.iss, " where ", p, "'s catalog entry expects ", issuer(p, client),
	" (a catalog that points ", p, " at another server needs that server's issuer; both show in: grantwire catalog ", p, ")",
]) if {
	is_string(params.iss)
	params.iss != issuer(p, client)
	_plain_url(params.iss)
} else := concat("", ["names another issuer than ", issuer(p, client), ", the one ", p, "'s catalog entry expects"]) if {
	is_string(params.iss)
	params.iss != issuer(p, client)
} else := "names no issuer although the provider always sends one" if {
	not _has_iss(params)
	issuer_required(p)
}

# METADATA
# title: issuer fix
# description: |
#   The command that fixes an issuer mismatch, "" when none does: where the catalog is the
#   user's file (file, the path the host names) and the server the catalog points the
#   provider at names itself (a plain http(s) issuer on the authorization endpoint's origin),
#   the catalog keeps another server's issuer, and `grantwire --catalog <file> catalog set
#   <p> issuer=<iss>` writes the received one into that file. Any other mismatch (the embedded catalog, an
#   issuer of another origin: a mix-up attack) has no command that fixes it.
issuer_fix(p, client, params, file) := concat("", ["grantwire --catalog ", scopes.quote(file), " catalog set ", p, " issuer=", params.iss]) if {
	is_string(file)
	file != ""
	is_string(params.iss)
	params.iss != issuer(p, client)
	_plain_url(params.iss)
	transport.origin(params.iss) == transport.origin(endpoint(p, "authorization_url", client.tenant))
} else := ""

# An issuer that may be repeated in a message: an http(s) address of plain characters.
_plain_url(s) if regex.match(`^https?://[A-Za-z0-9.:\[\]-]{1,253}(/[A-Za-z0-9._~/-]{0,200})?$`, s)
