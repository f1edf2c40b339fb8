# METADATA
# title: grantwire
# description: |
#   The entrypoints of grantwire's core. `decide` routes a query `{op, args, facts, attempt}`
#   to the decision rule of its operation and always returns a decision (an unknown operation
#   gets a USAGE error, a query no rule matches gets INTERNAL). `manifest` publishes every
#   operation with the facts worth fetching before the first question (never the
#   credential store before a grant decision).
package grantwire

import data.grantwire.activations
import data.grantwire.connections
import data.grantwire.errors
import data.grantwire.forwarded
import data.grantwire.gate
import data.grantwire.grants
import data.grantwire.mcp
import data.grantwire.scopes
import data.grantwire.step
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
} else := connections.disconnect if {
	_op == "disconnect"
} else := connections.connect if {
	_op == "connect"
} else := connections.configure_client if {
	_op == "configure_client"
} else := connections.status if {
	_op == "status"
} else := connections.connections if {
	_op == "connections"
} else := forwarded.decision if {
	_op == "import_forwarded"
} else := mcp.configure if {
	_op == "configure_mcp"
} else := mcp.credential if {
	_op == "credential"
} else := transport.check_url if {
	_op == "check_url"
}

_known_op if _op in object.keys(manifest.ops)

_op_name := _op if is_string(_op)

else := "(missing)"

# METADATA
# title: decide
# description: |
#   The decision for input.op; see each operation's package for its rules. Before routing,
#   every operation's args must be an object without double quotes, backslashes or control
#   characters, agent ids (agent, grant_agents) 1 to 256 characters without spaces, and
#   scopes 1 to 512 characters without spaces or commas (USAGE otherwise; checked on an
#   operation's first question, round 0); more than max_attempts restarts give BUSY.
# entrypoint: true
decide := step.fail(errors.usage("the query needs an object of args"), []) if {
	not _args_object
} else := step.fail(errors.usage(_arg_problem), []) if {
	_round == 0
	_arg_problem
} else := step.fail(errors.busy_conflict(_attempts), []) if {
	_attempts > max_attempts
} else := d if {
	d := _decision
} else := step.fail(errors.usage(concat("", ["unknown operation ", _op_name])), []) if {
	not _known_op
} else := step.fail(errors.internal(_op_name), [])

# The argument rules every operation shares (see package scopes), checked before routing.
# The values are never echoed: they may be what makes them unsafe to print.
_arg_problem := "arguments must not contain double quotes, backslashes or control characters" if {
	not scopes.clean(input.args)
} else := "an agent id is 1 to 256 characters without spaces" if {
	some a in _agent_args
	not scopes.valid_agent_id(a)
} else := "a scope is 1 to 512 characters without spaces or commas" if {
	some s in _scope_args
	not scopes.valid_scope(s)
}

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
#   code with its REST status and CLI exit code.
# entrypoint: true
manifest := {"errors": errors.table, "ops": {
	"get_access_token": {"prefetch": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": [_arg("provider"), _arg("agent")]},
		{"key": "token", "kind": "token.get", "provider": _arg("provider")},
		{"key": "now", "kind": "clock.now"},
	]},
	"grant": {"prefetch": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": [_arg("connector"), _arg("agent")]},
	]},
	"revoke": {"prefetch": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": [_arg("connector"), _arg("agent")]},
		{"key": "active", "kind": "ledger.get", "ledger": "activations", "path": [_arg("connector"), _arg("agent")]},
	]},
	"list_grants": {"prefetch": []},
	"activate": {"prefetch": []},
	"deactivate": {"prefetch": []},
	"list_activations": {"prefetch": []},
	"visible_servers": {"prefetch": [
		{"key": "agent_grants", "kind": "ledger.get", "ledger": "grants", "path": ["*", _arg("agent")]},
		{"key": "agent_actives", "kind": "ledger.get", "ledger": "activations", "path": ["*", _arg("agent")]},
	]},
	"disconnect": {"prefetch": []},
	"connect": {"prefetch": []},
	"configure_client": {"prefetch": []},
	"status": {"prefetch": []},
	"connections": {"prefetch": []},
	"import_forwarded": {"prefetch": []},
	"configure_mcp": {"prefetch": []},
	"credential": {"prefetch": [
		{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": [_arg("connector"), _arg("agent")]},
		{"key": "mcp", "kind": "mcp.get", "connector": _arg("connector")},
	]},
	"check_url": {"prefetch": []},
}}
