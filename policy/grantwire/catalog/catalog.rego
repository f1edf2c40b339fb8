# METADATA
# title: Catalog access
# description: |
#   The catalog of connectors is data (`data.catalog.connectors`), shipped in the bundle and
#   overridable at start-up. Types: oauth_pkce (an OAuth 2.0 + PKCE provider), mcp_server (a
#   local MCP server with API keys in its environment) and mcp_remote (a remote MCP server
#   behind OAuth 2.1).
package grantwire.catalog

# METADATA
# title: connectors
# description: Every catalog entry by id.
connectors := c if {
	c := data.catalog.connectors
	is_object(c)
} else := {}

# METADATA
# title: known
# description: The connector id names a catalog entry.
known(c) if {
	is_string(c)
	is_object(connectors[c])
}

# METADATA
# title: type
# description: The type of a catalog entry.
type_of(c) := connectors[c].type

# METADATA
# title: oauth
# description: The connector is an OAuth 2.0 + PKCE provider.
oauth(c) if connectors[c].type == "oauth_pkce"

# METADATA
# title: mcp types
# description: Connector types whose tools an agent can see (activations apply to these only).
mcp_types := {"mcp_server", "mcp_remote"}

# METADATA
# title: mcp
# description: The connector is an MCP server (local or remote).
mcp(c) if connectors[c].type in mcp_types

# METADATA
# title: default scopes
# description: The scopes a connection asks for when none are given.
default_scopes(c) := s if {
	s := connectors[c].default_scopes
	is_array(s)
} else := []

# METADATA
# title: ids
# description: Every catalog id, sorted.
ids := sort(object.keys(connectors))
