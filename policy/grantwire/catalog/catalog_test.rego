package grantwire.catalog_test

import data.grantwire.catalog
import data.grantwire.fixtures_test as fx

test_access if {
	catalog.known("google") with data.catalog as fx.catalog
	not catalog.known("nope") with data.catalog as fx.catalog
	not catalog.known(1) with data.catalog as {"connectors": {"1": {}}}
	not catalog.known("x") with data.catalog as {"connectors": {"x": "not an entry"}}
	catalog.type_of("mcp-remote") == "mcp_remote" with data.catalog as fx.catalog
	catalog.oauth("google") with data.catalog as fx.catalog
	not catalog.oauth("mcp-github") with data.catalog as fx.catalog
	catalog.mcp("mcp-github") with data.catalog as fx.catalog
	catalog.mcp("mcp-remote") with data.catalog as fx.catalog
	not catalog.mcp("google") with data.catalog as fx.catalog
	catalog.default_scopes("google") == ["email", "openid"] with data.catalog as fx.catalog
	catalog.default_scopes("mcp-github") == [] with data.catalog as fx.catalog
	catalog.ids == ["github", "google", "local", "mcp-github", "mcp-memory", "mcp-remote", "microsoft"] with data.catalog as fx.catalog
}

test_no_catalog if {
	catalog.connectors == {} with data.catalog as {}
	catalog.connectors == {} with data.catalog as {"connectors": []}
	catalog.ids == [] with data.catalog as {"connectors": "x"}
	catalog.problems(false) == ["the catalog has no connectors"] with data.catalog as {}
}

test_the_fixtures_catalog_is_valid_even_strictly if {
	catalog.problems(false) == [] with data.catalog as fx.catalog
	catalog.problems(true) == [] with data.catalog as fx.catalog
}

_oauth := {
	"type": "oauth_pkce", "display_name": "X", "tier": "core",
	"authorization_url": "https://as.example.com/authorize", "token_url": "https://as.example.com/token",
	"client_id_env": "X_CLIENT_ID", "default_scopes": ["a"], "available_scopes": ["a", "b"],
}

# The problems of one entry (id "x" unless given).
_problems(e) := catalog.entry_problems("x", e, false)

_strict(e) := catalog.entry_problems("x", e, true)

test_a_good_entry_has_no_problem if {
	_strict(_oauth) == []
	_strict({"type": "mcp_server", "display_name": "M", "tier": "t", "command": "npx", "env": [{"key": "lower_ok", "required": true}]}) == []
	_strict({"type": "mcp_remote", "display_name": "R", "tier": "t", "url": "https://mcp.example.com", "issuer": "https://as.example.com"}) == []
	_strict(fx.patch(_oauth, {
		"tenant": "common", "token_url": "https://login.example.com/{tenant}/token",
		"token_endpoint_auth_method": "none", "scope_separator": ",", "auth_params": {"prompt": "consent"},
		"client_secret_required": true, "client_secret_env": "X_SECRET", "docs_url": "https://docs.example.com",
		"default_scopes": [], "available_scopes": ["a"],
	})) == ["an oauth_pkce connector needs authorization_url, token_url, client_id_env, default_scopes and available_scopes"]
}

test_ids if {
	catalog.entry_problems("Google", _oauth, false) == ["the id must be 1-64 of a-z 0-9 _ . - starting with a letter or digit"]
	catalog.entry_problems("-x", _oauth, false) == ["the id must be 1-64 of a-z 0-9 _ . - starting with a letter or digit"]
	catalog.entry_problems("a|b", _oauth, false) == ["the id must be 1-64 of a-z 0-9 _ . - starting with a letter or digit"]
}

test_entries_must_be_objects_with_a_known_type if {
	"an entry must be an object" in _problems("oauth_pkce")
	"an entry must be an object" in _problems(["oauth_pkce"])
	_problems(fx.patch(_oauth, {"type": "oauth"})) == [
		`unknown type "oauth" (oauth_pkce, mcp_server or mcp_remote)`,
		"authorization_url, token_url, client_id_env are for oauth_pkce connectors only",
	]
	_problems(fx.patch(_oauth, {"type": null}))[0] == `unknown type null (oauth_pkce, mcp_server or mcp_remote)`
}

# An entry without a type is refused like one with an unknown type.
test_an_entry_without_a_type if {
	_problems({"display_name": "x"}) == [`unknown type null (oauth_pkce, mcp_server or mcp_remote)`]
}

test_scopes if {
	_problems(fx.patch(_oauth, {"default_scopes": ["a b"]})) == ["default_scopes must be distinct scopes (no spaces, quotes, commas or backslashes)", "every default scope must be among available_scopes"]
	_problems(fx.patch(_oauth, {"default_scopes": ["a", "a"]})) == ["default_scopes must be distinct scopes (no spaces, quotes, commas or backslashes)"]
	_problems(fx.patch(_oauth, {"available_scopes": ["a", "b,c"]})) == ["available_scopes must be distinct scopes (no spaces, quotes, commas or backslashes)"]
	_problems(fx.patch(_oauth, {"available_scopes": "a"})) == ["available_scopes must be distinct scopes (no spaces, quotes, commas or backslashes)", "every default scope must be among available_scopes"]
	every bad in ["", "a\"b", "a\\b", "a\tb", 1] {
		_problems(fx.patch(_oauth, {"default_scopes": [bad], "available_scopes": [bad]})) == [
			"default_scopes must be distinct scopes (no spaces, quotes, commas or backslashes)",
			"available_scopes must be distinct scopes (no spaces, quotes, commas or backslashes)",
		]
	}
	_problems(fx.patch(_oauth, {"default_scopes": ["c"]})) == ["every default scope must be among available_scopes"]
	_problems(fx.patch(_oauth, {"default_scopes": ["c"], "available_scopes": []})) == []
	_problems(fx.patch(_oauth, {"scope_separator": ";"})) == ["scope_separator must be a space or a comma"]
}

test_client_fields if {
	_problems(fx.patch(_oauth, {"client_id_env": "x-id"})) == ["client_id_env and client_secret_env must be environment variable names (A-Z 0-9 _)"]
	_problems(fx.patch(_oauth, {"client_secret_env": 5})) == ["client_id_env and client_secret_env must be environment variable names (A-Z 0-9 _)"]
	_problems(fx.patch(_oauth, {"tenant": "a b"})) == ["tenant must be a tenant name or id (letters, digits, - _ .)"]
	_problems(fx.patch(_oauth, {"tenant": 1})) == ["tenant must be a tenant name or id (letters, digits, - _ .)"]
	_problems(fx.patch(_oauth, {"token_endpoint_auth_method": "private_key_jwt"})) == ["token_endpoint_auth_method must be client_secret_basic, client_secret_post or none"]
	_problems(fx.patch(_oauth, {"auth_params": ["prompt"]})) == ["auth_params must be an object of strings"]
	_problems(fx.patch(_oauth, {"auth_params": {"max_age": 0}})) == ["auth_params must be an object of strings"]
}

test_fields_of_another_type if {
	_problems({"type": "mcp_server", "command": "x", "token_url": "https://a/t", "tenant": "t", "issuer": "https://a"}) == ["token_url, tenant are for oauth_pkce connectors only"]
	_problems(fx.patch(_oauth, {"command": "npx"})) == ["command, args and env are for mcp_server connectors only"]
	_problems({"type": "mcp_remote", "url": "https://m", "env": []}) == ["command, args and env are for mcp_server connectors only"]
}

test_env if {
	m := {"type": "mcp_server", "command": "x"}
	_problems(fx.patch(m, {"env": {"KEY": {}}})) == ["env must be a list of {key, required, secret, description} with distinct environment variable names"]
	_problems(fx.patch(m, {"env": [{"key": "A-B"}]})) == ["env must be a list of {key, required, secret, description} with distinct environment variable names"]
	_problems(fx.patch(m, {"env": [{"key": "A"}, {"key": "A"}]})) == ["env must be a list of {key, required, secret, description} with distinct environment variable names"]
	_problems(fx.patch(m, {"env": [{"required": true}]})) == ["env must be a list of {key, required, secret, description} with distinct environment variable names"]
}

test_urls if {
	_problems(fx.patch(_oauth, {"token_url": "http://as.example.com/token"})) == ["token_url: plain HTTP is allowed only to a loopback IP address (127.0.0.1 or ::1)"]
	_problems(fx.patch(_oauth, {"userinfo_url": "https://u:p@as.example.com/me", "docs_url": "ftp://x"})) == [
		"userinfo_url: credentials in URLs are refused",
		"docs_url: only https URLs are allowed (plain http only to a loopback IP address)",
	]
	_problems({"type": "mcp_remote", "url": "https://169.254.169.254/mcp"}) == ["url: link-local addresses are refused"]

	# {tenant} only in the endpoints of a provider with a tenant
	_problems(fx.patch(_oauth, {"token_url": "https://as.example.com/{tenant}/token"})) == ["token_url holds {tenant}, but only the endpoints of a provider with a tenant may"]
	_problems(fx.patch(_oauth, {"tenant": "common", "docs_url": "https://docs.example.com/{tenant}"})) == ["docs_url holds {tenant}, but only the endpoints of a provider with a tenant may"]
	_problems({"type": "mcp_remote", "tenant": "t", "url": "https://m/{tenant}"}) == ["tenant are for oauth_pkce connectors only", "url holds {tenant}, but only the endpoints of a provider with a tenant may"]
	_problems(fx.patch(_oauth, {"tenant": "common", "authorization_url": "https://as.example.com/{tenant}/authorize"})) == []
}

test_strict_problems if {
	_strict(fx.patch(_oauth, {"scopes": ["a"], "Type": "x"})) == ["unknown field(s) Type, scopes"]
	_strict(object.remove(_oauth, ["display_name", "tier"])) == ["display_name is required", "tier is required"]
	_strict(fx.patch(_oauth, {"display_name": "  "})) == ["display_name is required"]
	every f in ["authorization_url", "token_url", "client_id_env", "default_scopes", "available_scopes"] {
		_strict(object.remove(_oauth, [f])) == ["an oauth_pkce connector needs authorization_url, token_url, client_id_env, default_scopes and available_scopes"]
	}
	_strict(fx.patch(_oauth, {"client_secret_required": true})) == ["client_secret_required needs client_secret_env"]
	_strict({"type": "mcp_server", "display_name": "M", "tier": "t", "command": " "}) == ["an mcp_server connector needs command"]
	_strict({"type": "mcp_server", "display_name": "M", "tier": "t"}) == ["an mcp_server connector needs command"]
	_strict({"type": "mcp_remote", "display_name": "R", "tier": "t"}) == ["an mcp_remote connector needs url"]

	# none of these is a problem outside strict mode
	_problems(fx.patch(_oauth, {"scopes": ["a"]})) == []
	_problems({"type": "mcp_remote"}) == []
}

test_problems_are_prefixed_and_sorted if {
	cat := {"connectors": {
		"zz": fx.patch(_oauth, {"scope_separator": ";"}),
		"Bad": _oauth,
		"ok": _oauth,
		"mm": {"type": "mcp_remote", "display_name": "R", "tier": "t"},
	}}
	catalog.problems(false) == [
		`connector "Bad": the id must be 1-64 of a-z 0-9 _ . - starting with a letter or digit`,
		`connector "zz": scope_separator must be a space or a comma`,
	] with data.catalog as cat
	catalog.problems(true) == [
		`connector "Bad": the id must be 1-64 of a-z 0-9 _ . - starting with a letter or digit`,
		`connector "mm": an mcp_remote connector needs url`,
		`connector "zz": scope_separator must be a space or a comma`,
	] with data.catalog as cat
}

# ---------------------------------------------------------------------------------------
# validate_catalog

_validate(args, cat) := d if {
	d := fx.decide_with(fx.q("validate_catalog", args, {}), cat)
}

test_validate_a_good_catalog if {
	_validate({}, fx.catalog) == fx.done({"problems": []}, [])
	_validate({"strict": true}, fx.catalog) == fx.done({"problems": []}, [])
}

test_validate_a_bad_catalog if {
	cat := {"connectors": {"x": fx.patch(_oauth, {"scopes": ["a"], "scope_separator": ";"}), "y": {"type": "mcp_remote"}}}
	_validate({}, cat) == fx.failed(
		fx.err(
			"CONFIGURATION",
			`configuration error: the catalog: connector "x": scope_separator must be a space or a comma`,
			"",
			{"problems": [`connector "x": scope_separator must be a space or a comma`]},
		),
		[],
	)
	_validate({"strict": true}, cat) == fx.failed(
		fx.err(
			"CONFIGURATION",
			`configuration error: the catalog: connector "x": scope_separator must be a space or a comma (and 4 more)`,
			"",
			{"problems": [
				`connector "x": scope_separator must be a space or a comma`,
				`connector "x": unknown field(s) scopes`,
				`connector "y": an mcp_remote connector needs url`,
				`connector "y": display_name is required`,
				`connector "y": tier is required`,
			]},
		),
		[],
	)

	# strict must be a boolean to count
	_validate({"strict": "yes"}, cat).error.problems == [`connector "x": scope_separator must be a space or a comma`]
	_validate({}, {}).error.message == "configuration error: the catalog: the catalog has no connectors"

	# the file it came from is named
	_validate({"strict": false, "file": "/etc/grantwire/catalog.json"}, cat).error.summary == `configuration error: the catalog /etc/grantwire/catalog.json: connector "x": scope_separator must be a space or a comma`
}

# device_scopes: the scopes a provider's device flow allows, with its endpoint.
test_device_scopes if {
	d := fx.patch(_oauth, {"device_authorization_url": "https://as.example.com/device", "device_scopes": ["a"]})
	_strict(d) == []
	bad := "device_scopes must be distinct scopes among available_scopes, with a device_authorization_url"
	_problems(fx.patch(d, {"device_scopes": ["a", "a"]})) == [bad]
	_problems(fx.patch(d, {"device_scopes": "a"})) == [bad]
	_problems(fx.patch(d, {"device_scopes": ["zzz"]})) == [bad]
	_problems(object.remove(d, ["device_authorization_url"])) == [bad]
	_problems({"type": "mcp_remote", "url": "https://m", "device_scopes": ["a"]}) == ["device_scopes are for oauth_pkce connectors only", bad]
}
