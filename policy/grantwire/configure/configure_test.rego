package grantwire.configure_test

import data.grantwire.fixtures_test as fx

_client := {"arg": fx.arg({"client_id": fx.id_b, "client_secret": "5ec5ec5ec5ec5ec5"})}

_env := {"arg": fx.arg({"env.GITHUB_TOKEN": "6161616161616161"})}

_q(op, args, f) := fx.q1(op, args, object.union({"probe": fx.absent}, f))

_d(args, f) := fx.decide(_q("configure", args, f))

# The same question, asked of configure and of the operation it dispatches to.
_same(op, args, f) if _d(args, f) == fx.decide(_q(op, args, f))

test_an_oauth_provider_is_configure_client if {
	every f in [_client, {}, object.union(_client, {"lock": "held", "client": fx.absent}), object.union(_client, {"lock": "busy"})] {
		_same("configure_client", {"connector": "google"}, f)
	}
	_same("configure_client", {"connector": "microsoft_work", "tenant": "contoso.onmicrosoft.com"}, _client)
	_same("configure_client", {"connector": "google", "env_keys": []}, _client)
	_d({"connector": "google"}, _client).status == "need"
}

test_any_other_connector_is_configure_mcp if {
	every f in [_env, {}, object.union(_env, {"lock": "held"})] {
		_same("configure_mcp", {"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN"]}, f)
	}
	_same("configure_mcp", {"connector": "mcp-remote", "env_keys": []}, {})
	_same("configure_mcp", {"connector": "mcp-github"}, {})
	_d({"connector": "nope", "env_keys": []}, _client).error.code == "UNKNOWN_CONNECTOR"
}

test_the_values_of_another_type_are_refused if {
	d := _d({"connector": "google", "env_keys": ["GITHUB_TOKEN"]}, _env)
	d.error.code == "USAGE"
	d.error.message == "usage: an OAuth client's config takes client_id, client_secret and tenant, not GITHUB_TOKEN"
	_d({"connector": "google", "env_keys": [], "set": {}}, _client).error.message == "usage: an OAuth client's config takes client_id, client_secret and tenant, not set"
	m := _d({"connector": "mcp-github", "env_keys": ["GITHUB_TOKEN"], "tenant": "x"}, object.union(_env, _client))
	m.error.code == "CONFIGURATION"
	m.error.unknown_keys == ["client_id", "client_secret", "tenant"]
	m.error.message == "configuration error: mcp-github is not an OAuth provider: it takes no client_id, client_secret, tenant"
	_d({"connector": "mcp-github", "env_keys": []}, {"arg": fx.arg({"client_secret": "5ec5ec5ec5ec5ec5"})}).error.unknown_keys == ["client_secret"]
	_d({"connector": 5}, {}).error.code == "USAGE"
}

test_the_form_publishes_the_setup_fields if {
	g := _d({"connector": "google", "form": true}, {})
	g.status == "done"
	g.effects == []
	[f.key | some f in g.result.setup_fields] == ["client_id", "client_secret"]
	every f in g.result.setup_fields {
		f.configured == false
	}
	[f.key | some f in _d({"connector": "microsoft", "form": true}, {}).result.setup_fields] == ["client_id", "client_secret", "tenant"]
	m := _d({"connector": "mcp-github", "form": true}, {}).result.setup_fields
	[f.key | some f in m] == ["GITHUB_TOKEN", "GITHUB_HOST"]
	m[0].kind == "secret"
	_d({"connector": "mcp-remote", "form": true}, {}).result.setup_fields == []
	_d({"connector": "nope", "form": true}, {}).error.code == "UNKNOWN_CONNECTOR"
}
