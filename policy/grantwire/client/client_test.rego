package grantwire.client_test

import data.grantwire.client
import data.grantwire.fixtures_test as fx

_secrets := {"arg": fx.arg({"client_id": fx.id_b, "client_secret": "5ec5ec5ec5ec5ec5"})}

_id_only := {"arg": fx.arg({"client_id": fx.id_b})}

_configure(args, f) := fx.decide(fx.q1("configure_client", args, object.union({"probe": fx.absent}, f)))

_locked(f, slot) := object.union(f, {"lock": "held", "client": slot})

test_usage if {
	msg := "configure_client needs connector and an optional tenant (letters, digits, - _ .), and the client id as a secret argument"
	every args in [{}, {"connector": 5}, {"connector": "microsoft", "tenant": "a b"}, {"connector": "microsoft", "tenant": ""}, {"connector": "microsoft", "tenant": 5}, {"connector": "microsoft", "tenant": "-x"}] {
		_configure(args, _secrets) == fx.failed(fx.usage(msg), [])
	}
	_configure({"connector": "nope"}, _secrets).error.code == "UNKNOWN_CONNECTOR"
	_configure({"connector": "mcp-github"}, _secrets) == fx.failed(
		fx.err("CONFIGURATION", "configuration error: mcp-github is not an OAuth connector; it has no OAuth client", "", {"connector": "mcp-github"}),
		[],
	)
	_configure({"connector": "google"}, {}) == fx.failed(fx.usage("configure_client needs the client id (secret argument client_id)"), [])
	_configure({"connector": "google"}, _id_only) == fx.failed(
		fx.err(
			"CONFIGURATION", "configuration error: google requires a client secret",
			"grantwire configure google --client-id <id> --client-secret-stdin", {"connector": "google"},
		),
		[],
	)
}

test_valid_tenant if {
	client.valid_tenant("common")
	client.valid_tenant("72f988bf-86f1-41af-91ab-2d7cd011db47")
	client.valid_tenant("contoso.onmicrosoft.com")
	not client.valid_tenant("a/b")
	not client.valid_tenant(".x")
}

test_needs_under_the_lock if {
	# the credential store is probed before the lock: unreachable, nothing is written
	fx.decide(fx.q("configure_client", {"connector": "google"}, _secrets)) == fx.need([{"key": "probe", "kind": "keyring.get", "user": "google:default", "fresh": true}])
	fx.decide(fx.q("configure_client", {"connector": "google"}, object.union(_secrets, {"probe": fx.absent}))) == fx.need([
		{"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 5000},
		{"key": "client", "kind": "keyring.get", "user": "provider:google", "fresh": true, "after": "lock"},
	])
	_configure({"connector": "google"}, object.union(_secrets, {"lock": "busy"})).error.code == "BUSY"
}

_changed(c, h) := {"kind": "event.emit", "type": "connector.client.changed", "payload": {"connector_id": c, "client_id_hash": h}}

test_store_a_client if {
	_configure({"connector": "google"}, _locked(_secrets, fx.absent)) == fx.done(
		{"connector": "google", "client_id_hash": fx.hash_b, "has_secret": true, "tenant": null},
		[
			{
				"kind": "keyring.set", "user": "provider:google",
				"value": {"client_id": {"$ref": "arg#client_id"}, "client_secret": {"$ref": "arg#client_secret"}},
				"expect": {"found": false},
			},
			{"kind": "keyring.delete", "user": "google:access_token"},
			_changed("google", fx.hash_b),
		],
	)
}

test_replace_a_client_without_a_secret_with_a_tenant if {
	d := _configure({"connector": "microsoft", "tenant": "contoso"}, _locked(_id_only, fx.slot("client", "k9", {})))
	d == fx.done(
		{"connector": "microsoft", "client_id_hash": fx.hash_b, "has_secret": false, "tenant": "contoso"},
		[
			{
				"kind": "keyring.set", "user": "provider:microsoft",
				"value": {"client_id": {"$ref": "arg#client_id"}, "client_secret": "", "tenant": "contoso"},
				"expect": {"version": "k9"},
			},
			{"kind": "keyring.delete", "user": "microsoft:access_token"},
			_changed("microsoft", fx.hash_b),
		],
	)

	# the catalog's tenant when none is given
	e := _configure({"connector": "microsoft"}, _locked(_id_only, fx.absent))
	e.result.tenant == "common"
	e.effects[0].value.tenant == "common"
}
