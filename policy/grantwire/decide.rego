# METADATA
# title: grantwire
# description: |
#   The entrypoints of grantwire's core. `decide` routes a query `{op, args, facts, attempt,
#   round}` to the decision rule of its operation and always returns a decision: before
#   routing it turns a host failure (a fact carrying host_error) into the operation's error,
#   refuses an unreadable or misshapen ledger (CORRUPT_LEDGER naming the file and the fix),
#   and checks the arguments every operation shares; an unknown operation gets a USAGE
#   error, a query no rule matches gets INTERNAL. `manifest` publishes every operation with
#   the facts worth fetching before the first question (never the credential store before a
#   grant decision), and every error code with its REST status and CLI exit code.
package grantwire

import data.grantwire.activations
import data.grantwire.agents
import data.grantwire.catalog
import data.grantwire.challenge
import data.grantwire.client
import data.grantwire.configure
import data.grantwire.connect
import data.grantwire.disconnect
import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.flows
import data.grantwire.forwarded
import data.grantwire.gate
import data.grantwire.grants
import data.grantwire.health
import data.grantwire.launch
import data.grantwire.mcp
import data.grantwire.remote
import data.grantwire.remoteauth
import data.grantwire.remotetoken
import data.grantwire.scopes
import data.grantwire.status
import data.grantwire.step
import data.grantwire.store
import data.grantwire.tools
import data.grantwire.transport

# METADATA
# title: maximum attempts
# description: Restarts after failed preconditions (concurrent writers) before the operation reports BUSY.
max_attempts := 16

_op := input.op

_decision := gate.decision if {
	_op == "get_access_token"
} else := grants.grant if {
	_op == "grant"
} else := grants.revoke if {
	_op == "revoke"
} else := grants.list if {
	_op == "list_grants"
} else := activations.activate if {
	_op == "activate"
} else := activations.deactivate if {
	_op == "deactivate"
} else := activations.list if {
	_op == "list_activations"
} else := activations.visible if {
	_op == "visible_servers"
} else := activations.changes if {
	_op == "activation_changes"
} else := grants.changes if {
	_op == "grant_changes"
} else := disconnect.decision if {
	_op == "disconnect"
} else := connect.decision if {
	_op == "connect"
} else := client.decision if {
	_op == "configure_client"
} else := status.status if {
	_op == "status"
} else := status.connections if {
	_op == "connections"
} else := status.test if {
	_op == "test_connector"
} else := forwarded.decision if {
	_op == "import_forwarded"
} else := mcp.configure if {
	_op == "configure_mcp"
} else := mcp.credential if {
	_op == "credential"
} else := mcp.list if {
	_op == "mcp_list"
} else := agents.list if {
	_op == "list_agents"
} else := agents.agent_id if {
	_op == "agent_id"
} else := catalog.validate if {
	_op == "validate_catalog"
} else := remote.add if {
	_op == "mcp_add"
} else := remoteauth.decision if {
	_op == "mcp_auth"
} else := challenge.decision if {
	_op == "mcp_challenge"
} else := remotetoken.decision if {
	_op == "mcp_token"
} else := remote.logout if {
	_op == "mcp_logout"
} else := remote.remove if {
	_op == "mcp_remove"
} else := remote.list if {
	_op == "mcp_remote_list"
} else := launch.decision if {
	_op == "launch"
} else := tools.decision if {
	_op == "mcp_tool"
} else := status.view if {
	_op == "connector_view"
} else := flows.start if {
	_op == "start_flow"
} else := health.decision if {
	_op == "maintain"
} else := configure.decision if {
	_op == "configure"
}

_known_op if _op in object.keys(manifest.ops)

_op_name := _op if is_string(_op)

else := "(missing)"

_facts := object.get(input, "facts", {})

# METADATA
# title: decide
# description: |
#   The decision for input.op; see each operation's package for its rules. Before routing:
#   a host failure in any fact ends the operation with its error; an unreadable or
#   misshapen ledger read ends it with CORRUPT_LEDGER (except connectors/state.json, a
#   mirror the operations handle, agents.json, which the agent registry reports, and any
#   ledger during disconnect and revoke, which must always be possible); args must be an object
#   without double quotes, backslashes or control characters, agent ids (agent,
#   grant_agents) valid and scopes valid (USAGE otherwise; checked on an operation's first
#   question, round 0); more than max_attempts restarts give BUSY.
# entrypoint: true
decide := step.fail(errors.usage("the query needs an object of args"), []) if {
	not _args_object
} else := step.fail(errors.host_failure(he), []) if {
	he := facts.host_errors(_facts)[0]
} else := step.fail(errors.corrupt_ledger(store.ledger_name(f.ledger), f.file, store.problem(f)), []) if {
	not _op in _revoking_ops
	f := _unusable_ledgers[0]
} else := step.fail(errors.usage(_arg_problem), []) if {
	_round == 0
	_arg_problem
} else := step.fail(errors.busy_conflict(_attempts), []) if {
	_attempts > max_attempts
} else := step.need([remote.ledger_need]) if {
	_remote_unread
} else := d if {
	d := _decision
} else := step.fail(errors.usage(concat("", ["unknown operation ", _op_name])), []) if {
	not _known_op
} else := step.fail(errors.internal(_op_name), [])

# A connector the catalog does not have may be a remote MCP server a person added
# (mcp_remote.json): it is read before routing, and package catalog then knows it.
_remote_unread if _unread_remote(object.get(input.args, "connector", null))

_remote_unread if _unread_remote(object.get(input.args, "provider", null))

_unread_remote(c) if {
	is_string(c)
	not catalog.base_known(c)
	not facts.has(_facts, store.remote_key)
}

# Revoking access is always possible: these operations judge unreadable ledgers themselves
# (they clean what they can and name the rest in warnings).
_revoking_ops := {"disconnect", "revoke"}

# Ledger facts the central check judges (the hot path reads one or two), in the order of
# their keys (OPA's Wasm runtime iterates an object in another order than its Go
# evaluator), so that when several are unusable both report the same one.
_ledger_keys := sort([k |
	some k, f in _facts
	is_string(f.ledger)
	not f.ledger in {store.state_file, store.agents_file}
])

_unusable_ledgers := [f | some k in _ledger_keys; f := _facts[k]; store.problem(f)]

# The operations that take an agent's access away accept any id a ledger may hold (a GAIA
# home's `my-agent`), so that whatever a listing shows can be revoked and deactivated.
_removing_ops := {"revoke", "deactivate"}

# The argument rules every operation shares (see package scopes), checked before routing.
# The values are never echoed: they may be what makes them unsafe to print.
_arg_problem := "arguments must not contain double quotes, backslashes or control characters" if {
	not scopes.clean(_checked_args)
} else := "an agent id is namespaced (builtin:, installed:, native: or custom:<16 hex>:) with a name of 1 to 128 letters, digits and _ . @ + -" if {
	not _op in _removing_ops
	some a in _agent_args
	not scopes.valid_agent_id(a)
} else := "an agent id is 1 to 256 characters" if {
	_op in _removing_ops
	some a in _agent_args
	not scopes.stored_agent_id(a)
} else := "a scope is 1 to 512 visible ASCII characters without spaces or commas" if {
	some s in _scope_args
	not scopes.valid_scope(s)
}

# The views a ledger watcher passes are ledger content, not names a person typed.
_checked_args := object.remove(input.args, ["before", "after"]) if _op in {"activation_changes", "grant_changes"}

else := input.args

_agent_args contains a if {
	a := input.args.agent
	is_string(a)
}

_agent_args contains a if {
	is_array(input.args.grant_agents)
	some a in input.args.grant_agents
	is_string(a)
}

_scope_args contains s if {
	is_array(input.args.scopes)
	some s in input.args.scopes
	is_string(s)
}

# A rule, not `not is_object(input.args)`: OPA evaluates a negated call whose argument is
# undefined to false, so a query without args would slip past.
_args_object if is_object(input.args)

_attempts := input.attempt if is_number(input.attempt)

else := 0

# The question's number within its operation. An operation's args never change between its
# questions, so the character-level argument rules (the costliest checks of a decision) run
# on its first question only; a query without round counts as a first question.
_round := input.round if is_number(input.round)

else := 0

_arg(name) := {"$arg": name}

# METADATA
# title: manifest
# description: |
#   Every operation with its prefetch templates (needs whose parameters may be
#   {"$arg": name}, replaced by that argument before the first question), and every error
#   code with its REST status and CLI exit code, and the loopback rule (transport.loopback)
#   that the Go shell, the remote MCP client and serve read through core.Loopback.
# entrypoint: true
manifest := {"errors": errors.table, "loopback": transport.loopback, "ops": {
	"get_access_token": {"prefetch": [
		{"key": "grant", "kind": "ledger.read", "ledger": store.grants_file, "path": [_arg("provider"), _arg("agent")]},
		{"key": "now", "kind": "clock.now"},
	]},
	"grant": {"prefetch": [
		{"key": "grant", "kind": "ledger.read", "ledger": store.grants_file, "path": [_arg("connector"), _arg("agent")]},
		{"key": "agents", "kind": "ledger.read", "ledger": store.agents_file, "path": []},
	]},
	"revoke": {"prefetch": [
		{"key": "grant", "kind": "ledger.read", "ledger": store.grants_file, "path": [_arg("connector"), _arg("agent")]},
		{"key": "active", "kind": "ledger.read", "ledger": store.activations_file, "path": ["activations", _arg("connector"), _arg("agent")]},
	]},
	"list_grants": {"prefetch": []},
	"activate": {"prefetch": []},
	"deactivate": {"prefetch": []},
	"list_activations": {"prefetch": []},
	"visible_servers": {"prefetch": [
		{"key": "grants", "kind": "ledger.read", "ledger": store.grants_file, "path": []},
		{"key": "actives", "kind": "ledger.read", "ledger": store.activations_file, "path": ["activations"]},
		remote.ledger_need,
	]},
	"activation_changes": {"prefetch": []},
	"grant_changes": {"prefetch": []},
	"disconnect": {"prefetch": []},
	"connect": {"prefetch": []},
	"configure_client": {"prefetch": []},
	"status": {"prefetch": [remote.ledger_need]},
	"connections": {"prefetch": []},
	"test_connector": {"prefetch": []},
	"import_forwarded": {"prefetch": []},
	"configure_mcp": {"prefetch": []},
	"credential": {"prefetch": [
		{"key": "grant", "kind": "ledger.read", "ledger": store.grants_file, "path": [_arg("connector"), _arg("agent")]},
		{"key": "mcp", "kind": "ledger.read", "ledger": store.mcp_file, "path": []},
	]},
	"mcp_list": {"prefetch": []},
	"list_agents": {"prefetch": []},
	"agent_id": {"prefetch": []},
	"validate_catalog": {"prefetch": []},
	"mcp_add": {"prefetch": [remote.ledger_need]},
	"mcp_auth": {"prefetch": [remote.ledger_need]},
	"mcp_token": {"prefetch": remotetoken.prefetch},
	"mcp_challenge": {"prefetch": []},
	"mcp_logout": {"prefetch": [remote.ledger_need]},
	"mcp_remove": {"prefetch": [remote.ledger_need]},
	"mcp_remote_list": {"prefetch": []},
	"launch": {"prefetch": [
		remote.ledger_need,
		{"key": "grant", "kind": "ledger.read", "ledger": store.grants_file, "path": [_arg("connector"), _arg("agent")]},
		{"key": "active", "kind": "ledger.read", "ledger": store.activations_file, "path": ["activations", _arg("connector"), _arg("agent")]},
		{"key": "mcp", "kind": "ledger.read", "ledger": store.mcp_file, "path": []},
	]},
	"mcp_tool": {"prefetch": [
		remote.ledger_need,
		{"key": "grant", "kind": "ledger.read", "ledger": store.grants_file, "path": [_arg("connector"), _arg("agent")]},
		{"key": "active", "kind": "ledger.read", "ledger": store.activations_file, "path": ["activations", _arg("connector"), _arg("agent")]},
		{"key": "rule", "kind": "ledger.read", "ledger": store.activations_file, "path": ["tools", _arg("connector"), _arg("agent")]},
	]},
	"connector_view": {"prefetch": [remote.ledger_need]},
	"start_flow": {"prefetch": []},
	"maintain": {"prefetch": health.prefetch},
	"configure": {"prefetch": []},
}}
