package grantwire.flows_test

import data.grantwire.fixtures_test as fx

_start(args) := fx.decide(fx.q("start_flow", args, {}))

_pkce(c, pending) := _start({"connector": c, "kind": "pkce", "pending": pending})

test_a_first_flow_starts if {
	_pkce("google", []) == fx.done({"connector": "google", "kind": "pkce"}, [])

	# flows of other connectors do not matter
	_pkce("google", [{"flow_id": "f1", "connector": "github", "kind": "pkce"}]).result.connector == "google"
}

test_one_flow_per_connector if {
	d := _pkce("google", [
		{"flow_id": "f1", "connector": "github", "kind": "pkce"},
		{"flow_id": "f2", "connector": "google", "kind": "pkce"},
	])
	d == fx.failed(
		fx.err(
			"FLOW_IN_PROGRESS",
			"an authorization of google is already waiting for the browser (flow f2); finish or cancel it first",
			"",
			{"connector": "google", "flow_id": "f2"},
		),
		[],
	)
}

test_only_oauth_providers_have_flows if {
	d := _pkce("mcp-github", [])
	d.error.code == "CONFIGURATION"
	d.error.fix == "grantwire configure mcp-github"
	_pkce("mcp-remote", []).error.code == "CONFIGURATION"
	_pkce("nope", []).error.code == "UNKNOWN_CONNECTOR"
}

test_malformed_arguments_are_usage_errors if {
	_start({"kind": "pkce", "pending": []}).error.code == "USAGE"
	_start({"connector": "google", "pending": []}).error.code == "USAGE"
	_start({"connector": "google", "kind": "pkce"}).error.code == "USAGE"
	_start({"connector": "google", "kind": "pkce", "pending": [{"flow_id": 1, "connector": "google", "kind": "pkce"}]}).error.code == "USAGE"
	_start({"connector": "google", "kind": "pkce", "pending": ["f1"]}).error.code == "USAGE"
	d := _start({"connector": "google", "kind": "browser", "pending": []})
	d.error == fx.usage("a flow's kind is one of device, pkce")
}

test_a_device_flow_is_one_flow_of_its_connector if {
	_start({"connector": "microsoft", "kind": "device", "pending": []}) == fx.done({"connector": "microsoft", "kind": "device"}, [])

	# a pending flow of either kind holds the connector for the other
	d := _start({"connector": "google", "kind": "device", "pending": [{"flow_id": "f1", "connector": "google", "kind": "pkce"}]})
	d.error.code == "FLOW_IN_PROGRESS"
	d.error.flow_id == "f1"
	e := _pkce("google", [{"flow_id": "f2", "connector": "google", "kind": "device"}])
	e.error.flow_id == "f2"

	# the message says what the pending flow waits for: the browser, or a code entered elsewhere
	d.error.message == "an authorization of google is already waiting for the browser (flow f1); finish or cancel it first"
	e.error.message == "an authorization of google is already waiting for its code to be entered on another device (flow f2); finish or cancel it first"

	# only OAuth providers
	_start({"connector": "mcp-github", "kind": "device", "pending": []}).error.code == "CONFIGURATION"
}
