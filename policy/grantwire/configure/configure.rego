# METADATA
# title: Configure a connector
# description: |
#   `configure(connector, tenant?, env_keys?, set?)`, with the connector's values as secret
#   arguments: one operation for every connector type, dispatched here by the catalog, so
#   that no surface picks the operation by the connector's type. An OAuth provider's client
#   follows configure_client's rule (the client id and secret as the secret arguments
#   client_id and client_secret, an optional tenant); any other connector follows
#   configure_mcp's (env_keys with the secret arguments env.<KEY>, set for the values given
#   as arguments), which refuses a connector that is not a local MCP server. The values of
#   the other kind are refused: environment keys for an OAuth provider (USAGE), a client id,
#   secret or tenant for a connector that is not an OAuth provider (CONFIGURATION).
#   With form true it stores nothing and asks the host nothing: it publishes the
#   connector's setup fields (status.setup_fields, as REST and the page show them, none
#   configured), so that a surface learns which values a connector takes without choosing
#   by its type; an unknown connector is refused as always.
package grantwire.configure

import data.grantwire.catalog
import data.grantwire.client
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.mcp
import data.grantwire.status
import data.grantwire.step

_f := object.get(input, "facts", {})

_c := input.args.connector

_env_keys := input.args.env_keys if is_array(input.args.env_keys)

else := []

_env_given if count(_env_keys) > 0

_env_given if object.get(input.args, "set", null) != null

# The client's values given (in this order).
_client_keys := array.concat(_client_secrets, ["tenant"]) if {
	is_string(input.args.tenant)
} else := _client_secrets

_client_secrets := [k |
	some k in ["client_id", "client_secret"]
	facts.arg(_f, k)
]

_not_env := concat("", ["usage: an OAuth client's config takes client_id, client_secret and tenant, not ", _env_keys[0]]) if {
	count(_env_keys) > 0
} else := "usage: an OAuth client's config takes client_id, client_secret and tenant, not set"

# METADATA
# title: configure decision
# description: Configure any connector; see the package description.
# entrypoint: true
decision := step.fail(errors.usage("configure needs connector, and the values of its type (see configure_client, configure_mcp)"), []) if {
	not is_string(_c)
} else := _form if {
	input.args.form == true
} else := step.fail(errors.error("USAGE", _not_env, "", {"connector": _c}), []) if {
	catalog.oauth(_c)
	_env_given
} else := client.decision if {
	catalog.oauth(_c)
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(
		concat("", [_c, " is not an OAuth provider: it takes no ", concat(", ", _client_keys)]),
		"",
		{"connector": _c, "unknown_keys": _client_keys},
	),
	[],
) if {
	count(_client_keys) > 0
} else := mcp.configure

# The form: the connector's setup fields, none configured.
_form := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.done(
	{"connector": _c, "setup_fields": status.setup_fields(_c, {"configured": false, "has_secret": false}, [])},
	[],
)
