# METADATA
# title: grantwire decision-log mask
# description: |
#   The decision-log mask of OPA servers that decide for grantwire (docs/fleet.md). Before
#   OPA writes a decision-log entry, it replaces what grantwire's queries and decisions carry
#   that derives from a secret, as grantwire's own decision logs do: refresh-token digests
#   the version tokens of stored secrets and what a secret's description says of it
#   ("refresh", "version", "digest", "crc32", "client_id_hash") by pseudonyms
#   "[redacted:N]" (equal values, equal pseudonyms, so a logged query decides as the
#   original did), references to secrets the shell holds ("$ref") and members named like a
#   secret by "[redacted]". Load it as a bundle of its own beside grantwire's:
#   `opa run --server --bundle grantwire-bundle.tar.gz docs/fleet/log-mask`.
#
#   The query and the decision are replaced whole (an upsert of /input and /result): OPA's
#   removal of a single member cannot reach members under keys such as "conn|google".
package system.log

import rego.v1

_pseudonymised := {"refresh", "version", "digest", "crc32", "client_id_hash"}

_erased := {"$ref", "access_token", "refresh_token", "id_token", "client_secret", "code_verifier", "api_key", "password"}

# The masked members of a document: [path, value] pairs.
_at(doc) := [[path, value] |
	walk(doc, [path, value])
	count(path) > 0
	path[count(path) - 1] in (_pseudonymised | _erased)
	not is_object(value)
	not is_array(value)
]

_digests := sort({value |
	some doc in [input.input, input.result]
	some [path, value] in _at(doc)
	path[count(path) - 1] in _pseudonymised
})

_replacement(path, value) := sprintf("[redacted:%d]", [i + 1]) if {
	path[count(path) - 1] in _pseudonymised
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
