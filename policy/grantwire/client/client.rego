# METADATA
# title: OAuth client configuration
# description: |
#   `configure_client(connector, tenant?)` with the client id and secret as the operation's
#   secret arguments: store a provider's OAuth client in the credential store under the
#   provider's lock. A connection issued under another client trips the tripwire on its next
#   use; the cached access token is dropped at once.
package grantwire.client

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.step
import data.grantwire.store

# METADATA
# title: configure lock wait
# description: How long configuring a client waits for the provider's lock.
lock_wait_ms := 5000

_f := object.get(input, "facts", {})

_c := input.args.connector

_id := facts.arg(_f, "client_id")

_secret := facts.arg(_f, "client_secret")

_args_ok if {
	is_string(_c)
	_tenant_ok
}

_tenant_ok if not input.args.tenant

_tenant_ok if valid_tenant(input.args.tenant)

# METADATA
# title: valid tenant
# description: A tenant is 1 to 128 ASCII letters, digits, "-", "_" and ".", starting with a letter or a digit.
valid_tenant(t) if regex.match(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`, t)

_tenant := input.args.tenant if is_string(input.args.tenant)

else := store.catalog_tenant(_c)

_has_secret if _secret

_has_secret_bool if _has_secret

else := false

_hash := _id.crc32

_value := object.union(
	{"client_id": {"$ref": _id["$ref"]}, "client_secret": _secret_value},
	_tenant_member,
)

_secret_value := {"$ref": _secret["$ref"]} if _has_secret

else := ""

_tenant_member := {"tenant": _tenant} if is_string(_tenant)

else := {}

# METADATA
# title: configure_client decision
# description: Store a provider's OAuth client; see the package description.
# entrypoint: true
decision := step.fail(
	errors.usage("configure_client needs connector and an optional tenant (letters, digits, - _ .), and the client id as a secret argument"),
	[],
) if {
	not _args_ok
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(concat("", [_c, " is not an OAuth connector; it has no OAuth client"]), "", {"connector": _c}),
	[],
) if {
	not catalog.oauth(_c)
} else := step.fail(errors.usage("configure_client needs the client id (secret argument client_id)"), []) if {
	not _id
} else := step.fail(
	errors.configuration(
		concat("", [_c, " requires a client secret"]),
		concat("", ["grantwire configure ", _c, " --client-id <id> --client-secret-stdin"]),
		{"connector": _c},
	),
	[],
) if {
	catalog.connectors[_c].client_secret_required == true
	not _has_secret
} else := step.need([store.probe_need(_c)]) if {
	not store.probed(_f)
} else := step.fail(errors.busy(_c), []) if {
	facts.not_held(_f, "lock")
} else := step.need(m) if {
	m := facts.missing(_f, [
		facts.lock("lock", _c, lock_wait_ms),
		facts.after(facts.keyring_secret("client", store.client_user(_c)), "lock"),
	])
	count(m) > 0
} else := step.done(
	{"connector": _c, "client_id_hash": _hash, "has_secret": _has_secret_bool, "tenant": _tenant},
	[
		{
			"kind": "keyring.set", "user": store.client_user(_c), "value": _value,
			"expect": store.slot_expect(_f.client),
		},
		store.drop_token(_c),
		{
			"kind": "event.emit", "type": "connector.client.changed",
			"payload": {"connector_id": _c, "client_id_hash": _hash},
		},
	],
)
