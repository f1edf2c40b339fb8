# The connectors page's view
#
# `connector_view`: what the Settings → Connectors page of grantwire serve shows, read-only.
# Every catalog connector (or one) as `status` sees it, plus its OAuth client as the page
# may show it (configured, has_secret, tenant, source; never the id or the secret) and the
# agents that concern it: those that declare it, for an MCP server those that consume MCP
# servers, and those that hold a grant or an activation on it, each with its declared,
# granted and active state. An unreadable agents.json leaves the built-in agents and is
# reported in `agents_problem`.
# (A second file of package grantwire.status: status.rego holds the package METADATA.)
package grantwire.status

import data.grantwire.agents
import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.health
import data.grantwire.step
import data.grantwire.store

_view_needs := array.concat(
	facts.missing(_f, array.concat(_status_needs, [facts.ledger("state", store.state_file, [])])),
	agents.needs(_f, "agents"),
)

_agents_problem := agents.unusable(_f, "agents")

_registry := agents.registry({"agents": {"found": false}}, "agents") if {
	_agents_problem
} else := agents.registry(_f, "agents")

_client_view(c) := {
	"configured": true, "has_secret": cl.has_secret,
	"tenant": cl.tenant, "source": cl.source,
} if {
	catalog.oauth(c)
	cl := _client(c)
	cl.found == true
} else := {"configured": false, "has_secret": false, "tenant": store.catalog_tenant(c), "source": null} if {
	catalog.oauth(c)
} else := null

_declares(a, c) if agents.declared(a, c)

_concerned(c) := (({id |
	some id, a in _registry
	_declares(a, c)
} | {id |
	some id, a in _registry
	_consumer_true(a, c)
}) | {id | some id, _ in object.get(_all_grants, c, {})}) | {id |
	some id, v in object.get(_all_actives, c, {})
	v == true
}

_declared_or_null(id, c) := s if {
	s := agents.declared(_registry[id], c)
} else := null

_reason(id, c) := r.reason if {
	some r in _registry[id].required_connectors
	r.connector == c
	is_string(r.reason)
} else := ""

_agent_row(id, c) := {
	"id": id,
	"name": object.get(object.get(_registry, id, {}), "name", ""),
	"registered": true,
	"declared_scopes": _declared_or_null(id, c),
	"reason": _reason(id, c),
	"consumes_mcp_servers": _consumer(_registry[id], c),
	"granted_scopes": object.get(object.get(_all_grants, c, {}), id, null),
	"active": object.get(object.get(_all_actives, c, {}), id, false) == true,
} if {
	id in object.keys(_registry)
} else := {
	"id": id, "name": "", "registered": false, "declared_scopes": null, "reason": "",
	"consumes_mcp_servers": false,
	"granted_scopes": object.get(object.get(_all_grants, c, {}), id, null),
	"active": object.get(object.get(_all_actives, c, {}), id, false) == true,
}

_consumer(a, c) if {
	_consumer_true(a, c)
} else := false

_consumer_true(a, c) if {
	catalog.mcp(c)
	a.consumes_mcp_servers == true
}

_view(c) := object.union(_entry(c), {
	"client": _client_view(c),
	"setup_fields": setup_fields(c, _client_view(c), object.get(_entry(c), "env_keys", [])),
	"agents": [_agent_row(id, c) | some id in sort(_concerned(c))],
	"health": _stored_health(c),
})

# METADATA
# title: setup fields
# description: |
#   The fields of a connector's configure form, as REST and the page show them: for an
#   OAuth provider its client id, client secret (required when the catalog says so) and,
#   where the catalog names a default tenant, the tenant; for a local MCP server each
#   environment key the catalog declares, in its order. A field's kind is text or secret
#   (secret fields are write-only); configured says whether a value is stored. Any other
#   connector has none.
setup_fields(c, cl, env_keys) := array.concat(
	[
		{"key": "client_id", "label": "Client ID", "kind": "text", "required": true, "configured": cl.configured},
		{
			"key": "client_secret", "label": "Client secret", "kind": "secret",
			"required": object.get(catalog.connectors[c], "client_secret_required", false) == true,
			"configured": cl.has_secret,
		},
	],
	_tenant_field(c),
) if {
	catalog.oauth(c)
} else := [object.union(
	{
		"key": k.key, "label": k.key, "kind": _kind(k),
		"required": object.get(k, "required", false) == true, "configured": k.key in env_keys,
	},
	_description(k),
) |
	some k in object.get(catalog.connectors[c], "env", [])
] if {
	catalog.type_of(c) == "mcp_server"
} else := []

_tenant_field(c) := [{
	"key": "tenant", "label": "Tenant", "kind": "text", "required": false, "configured": false,
	"description": concat("", ["default ", t]),
}] if {
	t := object.get(catalog.connectors[c], "tenant", "")
	t != ""
} else := []

_kind(k) := "secret" if k.secret == true

else := "text"

_description(k) := {"description": k.description} if {
	is_string(k.description)
	k.description != ""
} else := {}

_state_doc := d if {
	d := facts.value(_f, "state", {})
	is_object(d)
} else := {}

# What the last health pass recorded of an OAuth connection that is not healthy (the
# payload of its connector.health event), so that a page loaded after the event shows it.
_stored_health(c) := health.stored(c, object.get(_state_doc, c, {}), _bool(_conn(c).found), object.get(_conn(c), "scopes", [])) if {
	catalog.oauth(c)
} else := null

_problem_or_null := _agents_problem if _agents_problem

else := null

# METADATA
# title: connector_view decision
# description: |
#   Every catalog connector (or one) with its state (as `status`), its OAuth client as the
#   page may show it, and the agents that concern it; read-only (the same facts as status,
#   plus the agent registry).
# entrypoint: true
view := step.need(m) if {
	m := _view_needs
	count(m) > 0
} else := step.fail(errors.unknown_connector(_c), []) if {
	is_string(_c)
	not catalog.known(_c)
} else := step.need(m) if {
	m := facts.missing(_f, _status_fresh)
	count(m) > 0
} else := step.done({"connectors": [_view(c) | some c in _ids], "agents_problem": _problem_or_null}, [])
