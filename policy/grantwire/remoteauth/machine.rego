# Machine grants of mcp_auth (issue 21 §1): a remote server added with a grant other than
# the browser's authorization code is authorized with no person and no loopback, after the
# same discovery (challenge, protected-resource and authorization-server metadata) and under
# the same authorization lock, with its pre-registered client:
#   client_credentials (SEP-1046): the client authenticates with its secret
#     (client_secret_basic or client_secret_post, as the server lists them) or with a JWT
#     signed by its private key (private_key_jwt, RFC 7523 §2.2);
#   jwt_bearer (SEP-1933, workload identity federation): the workload's JWT is the grant
#     (RFC 7523 §2.1), the client authenticating as above or with its id alone;
#   id_jag (SEP-990, enterprise-managed authorization): the identity provider's ID token is
#     exchanged at the identity provider (RFC 8693) for an ID-JAG, which is then the grant.
# The policy names what the host signs ({"$jwt": ...}, hostabi/README.md): the claims (iat
# and exp from the clock fact, jti from entropy), the audience (the issuer) and the
# algorithms the server accepts; the key never leaves the credential store's reference.
# A refused grant is reported and not retried with another grant (SEP-1933).
package grantwire.remoteauth

import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.oauth
import data.grantwire.remote
import data.grantwire.scopes
import data.grantwire.step

# METADATA
# title: client assertion lifetime
# description: How long a client assertion signed for a token request is valid (seconds).
assertion_lifetime_s := 300

_grant := _server.grant

# A machine grant: no person, no loopback.
_machine if _grant != "authorization_code"

_jwt_bearer_type := "urn:ietf:params:oauth:grant-type:jwt-bearer"

_grant_uri := _jwt_bearer_type if {
	_grant in {"jwt_bearer", "id_jag"}
} else := _grant

# The grants the authorization server lists (null: it does not say).
_grant_types := [g | some g in _as_doc.grant_types_supported; is_string(g)] if {
	is_array(_as_doc.grant_types_supported)
} else := null

_grant_unlisted if {
	_grant_types != null
	not _grant_uri in _grant_types
}

_auth_methods_listed := _meta.auth_methods if _meta.auth_methods != null

else := []

# private_key_jwt when the client has a key and the server takes it (or does not say).
_uses_key if {
	_pre.private_key != null
	_meta.auth_methods == null
}

_uses_key if {
	_pre.private_key != null
	"private_key_jwt" in _auth_methods_listed
}

_signing_algs := [a | some a in _as_doc.token_endpoint_auth_signing_alg_values_supported; is_string(a)] if {
	is_array(_as_doc.token_endpoint_auth_signing_alg_values_supported)
} else := ["ES256", "RS256"]

_iat := floor(_f["now@grant"] / 1000)

_client_assertion := {"$jwt": {
	"key": {"$ref": _pre.private_key["$ref"]},
	"algs": _signing_algs,
	"header": {"typ": "JWT"},
	"claims": {
		"iss": {"$ref": _pre.client_id["$ref"]},
		"sub": {"$ref": _pre.client_id["$ref"]},
		"aud": _issuer,
		"iat": _iat,
		"exp": _iat + assertion_lifetime_s,
		"jti": {"$ref": "jti#value"},
	},
}}

_machine_auth := {"headers": {}, "form": {
	"client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
	"client_assertion": _client_assertion,
}} if {
	_uses_key
} else := remote.client_auth(_client)

_machine_needs := array.concat(
	[facts.now("now@grant")],
	[facts.entropy("jti", 16) | _uses_key],
)

# The grant itself: the form members that name it.
_grant_form := {"grant_type": "client_credentials"} if {
	_grant == "client_credentials"
} else := {"grant_type": _jwt_bearer_type, "assertion": {"$ref": _pre.assertion["$ref"]}} if {
	_grant == "jwt_bearer"
} else := {"grant_type": _jwt_bearer_type, "assertion": {"$ref": _f.idjag.json.access_token["$ref"]}} if {
	_grant == "id_jag"
}

_grant_need := facts.commit(facts.http("exchange", {
	"method": "POST",
	"url": _meta.token_endpoint,
	"headers": object.union({"Accept": "application/json"}, _machine_auth.headers),
	"form": object.union(object.union(object.union(_grant_form, {"resource": _resource}), _scope_query), _machine_auth.form),
	"secret_fields": oauth.secret_fields,
	"timeout_ms": oauth.token_timeout_ms,
}))

# SEP-990: the ID token exchanged at the identity provider for an ID-JAG (RFC 8693) whose
# audience is the authorization server and whose resource is this server.
_idp_client_member := {"client_id": _server.idp.client_id} if {
	is_string(_server.idp.client_id)
} else := {}

_idjag_need := facts.http("idjag", {
	"method": "POST",
	"url": _server.idp.token_endpoint,
	"headers": {"Accept": "application/json"},
	"form": object.union(
		object.union(
			{
				"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
				"requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
				"subject_token": {"$ref": _pre.assertion["$ref"]},
				"subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
				"audience": _issuer,
				"resource": _resource,
			},
			_scope_query,
		),
		_idp_client_member,
	),
	"secret_fields": ["access_token"],
	"max_bytes": 65536,
	"timeout_ms": oauth.token_timeout_ms,
})

_idjag := _f.idjag

# Positive rules: a negated call on an undefined argument is false in Rego, not true.
_jag_token if is_string(_idjag.json.access_token["$ref"])

_idjag_problem := "could not be reached" if {
	_idjag.status == 0
} else := concat("", ["refused the token exchange (", oauth.error_code(_idjag.json.error), ")"]) if {
	_idjag.status != 200
	is_string(_idjag.json.error)
} else := concat("", ["answered the token exchange with status ", format_int(_idjag.status, 10)]) if {
	_idjag.status != 200
} else := "answered the token exchange with no access_token" if {
	not _jag_token
} else := "answered the token exchange with a token that is not an ID-JAG (issued_token_type)" if {
	_idjag.json.issued_token_type != "urn:ietf:params:oauth:token-type:id-jag"
}

_grant_unlisted_error := errors.configuration(
	concat("", [
		"the authorization server ", _issuer, " does not list the ", _grant_uri, " grant (grant_types_supported: ",
		concat(" ", _grant_types), "); nothing was sent to its token endpoint",
	]),
	"",
	{"connector": _c, "issuer": _issuer},
)

_machine_client_missing := errors.configuration(
	concat("", ["the ", _grant, " grant of ", _c, " needs its pre-registered client, and the credential store holds none"]),
	concat("", ["grantwire mcp add ", _c, " --url ", scopes.quote(_url), " --grant ", replace(_grant, "_", "-"), " --client-id <id> ..."]),
	{"connector": _c},
)

_machine_flow := step.fail(_machine_client_missing, []) if {
	not _pre_fits
} else := step.fail(_grant_unlisted_error, []) if {
	_grant_unlisted
} else := step.need(m) if {
	m := facts.missing(_f, _machine_needs)
	count(m) > 0
} else := step.need([_idjag_need]) if {
	_grant == "id_jag"
	not facts.has(_f, "idjag")
} else := step.fail(_problem(concat("", ["the identity provider's token endpoint ", _server.idp.token_endpoint, " ", _idjag_problem, "; nothing was stored"])), []) if {
	_grant == "id_jag"
	_idjag_problem
} else := step.need([_grant_need]) if {
	not facts.has(_f, "exchange")
} else := _exchanged
