# METADATA
# title: grantwire decision-log mask
# description: |
#   The decision-log mask of OPA servers that decide for grantwire (docs/fleet.md). Before
#   OPA writes a decision-log entry, it replaces what grantwire's queries and decisions carry
#   that derives from a secret, exactly as grantwire's own decision logs do (package
#   decisionlog, host ABI v2): the string values of "digest" and "crc32" (what a secret's
#   description {"$ref", "digest", "crc32"} says of it), of "client_id_hash" (copied from
#   a client id's CRC-32) and of "version" (the version tokens of stored values) by
#   pseudonyms "[redacted:N]" (equal values, equal pseudonyms, so a logged query decides as
#   the original did), except the digest and CRC-32 of the empty string, which reveal
#   nothing and which the policy compares with; every reference to a secret the shell holds
#   ("$ref") and every string member named like a secret by "[redacted]". Load it as a
#   bundle of its own beside grantwire's:
#   `opa run --server --bundle grantwire-bundle.tar.gz docs/fleet/log-mask`.
#
#   The query and the decision are replaced whole (an upsert of /input and /result): OPA's
#   removal of a single member cannot reach members under keys such as "conn|google".
package system.log

import rego.v1

_pseudonymised := {"digest", "crc32", "client_id_hash", "version"}

_secret_names := {"access_token", "refresh_token", "id_token", "client_secret", "code_verifier", "api_key", "password"}

# The digest and the CRC-32 of the empty string, as a host describes it.
_empty_secret := {"sha256:e3b0c44298fc1c14", "00000000"}

_masked(name, value) if {
	name == "$ref"
	not is_object(value)
	not is_array(value)
}

_masked(name, value) if {
	name in _secret_names
	is_string(value)
}

_masked(name, value) if _pseudonym(name, value)

_pseudonym(name, value) if {
	name in _pseudonymised
	is_string(value)
	not value in _empty_secret
}

# The masked members of a document: [path, value] pairs.
_at(doc) := [[path, value] |
	walk(doc, [path, value])
	count(path) > 0
	_masked(path[count(path) - 1], value)
]

_digests := sort({value |
	some doc in [input.input, input.result]
	some [path, value] in _at(doc)
	_pseudonym(path[count(path) - 1], value)
})

_replacement(path, value) := sprintf("[redacted:%d]", [i + 1]) if {
	_pseudonym(path[count(path) - 1], value)
	some i, d in _digests
	d == value
} else := "[redacted]"

# A JSON pointer: array indices as numbers, "~" and "/" escaped (RFC 6901).
_pointer(path) := concat("/", array.concat([""], [_segment(p) | some p in path]))

_segment(p) := format_int(p, 10) if is_number(p)

else := replace(replace(p, "~", "~0"), "/", "~1")

_redacted(doc) := json.patch(doc, [{"op": "replace", "path": _pointer(path), "value": _replacement(path, value)} |
	some [path, value] in _at(doc)
])

mask contains {"op": "upsert", "path": "/input", "value": _redacted(input.input)} if count(_at(input.input)) > 0

mask contains {"op": "upsert", "path": "/result", "value": _redacted(input.result)} if count(_at(input.result)) > 0
