package grantwire.catalog_test

import data.grantwire.catalog
import data.grantwire.fixtures_test as fx

test_connectors_come_from_data if {
	c := catalog.connectors with data.catalog as fx.catalog
	c == fx.catalog.connectors
}

test_no_catalog_is_empty if {
	catalog.connectors == {} with data.catalog as {}
	catalog.connectors == {} with data.catalog as {"connectors": ["google"]}
	catalog.ids == [] with data.catalog as {"connectors": 7}
}

test_known if {
	catalog.known("google") with data.catalog as fx.catalog
	not catalog.known("nope") with data.catalog as fx.catalog
	not catalog.known(7) with data.catalog as fx.catalog
	not catalog.known("bad") with data.catalog as {"connectors": {"bad": "oauth_pkce"}}
}

test_types if {
	catalog.type_of("mcp-remote") == "mcp_remote" with data.catalog as fx.catalog
	catalog.oauth("google") with data.catalog as fx.catalog
	not catalog.oauth("mcp-github") with data.catalog as fx.catalog
	catalog.mcp("mcp-github") with data.catalog as fx.catalog
	catalog.mcp("mcp-remote") with data.catalog as fx.catalog
	not catalog.mcp("google") with data.catalog as fx.catalog
	not catalog.mcp("nope") with data.catalog as fx.catalog
	catalog.mcp_types == {"mcp_server", "mcp_remote"}
}

test_default_scopes if {
	catalog.default_scopes("google") == ["openid", "email"] with data.catalog as fx.catalog
	catalog.default_scopes("mcp-github") == [] with data.catalog as fx.catalog
	catalog.default_scopes("x") == [] with data.catalog as {"connectors": {"x": {"type": "oauth_pkce", "default_scopes": "openid"}}}
}

test_ids_are_sorted if {
	catalog.ids == ["google", "mcp-github", "mcp-memory", "mcp-remote", "microsoft"] with data.catalog as fx.catalog
}
