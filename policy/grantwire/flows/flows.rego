# METADATA
# title: Authorization flows of a server
# description: |
#   `start_flow`: whether grantwire serve may start an authorization in the user's browser
#   for a connector, given the flows it already has waiting. The server keeps its flows in
#   memory and passes them as `pending: [{flow_id, connector, kind}]`; the connect
#   operation itself then decides everything about the authorization. One flow per
#   connector at a time: a second one is FLOW_IN_PROGRESS naming the first (the page offers
#   to cancel it), whatever its kind. Kinds: `pkce` (the loopback redirect) and `device`
#   (RFC 8628: a code entered on another device; whether the provider offers it is the
#   connect operation's decision, which refuses it with its fix).
package grantwire.flows

import data.grantwire.catalog
import data.grantwire.errors
import data.grantwire.step

# METADATA
# title: flow kinds
# description: The kinds of authorization a server can start, and which connectors each takes.
kinds := {"device", "pkce"}

_c := input.args.connector

_kind := input.args.kind

_pending := input.args.pending

_args_ok if {
	is_string(_c)
	is_string(_kind)
	is_array(_pending)
	every p in _pending {
		is_string(p.flow_id)
		is_string(p.connector)
		is_string(p.kind)
	}
}

# METADATA
# title: start_flow decision
# description: |
#   The connector must exist and be an OAuth provider (for either kind), and no flow of it
#   may be pending, of either kind. The result names the connector and the kind; nothing is read or written.
# entrypoint: true
start := step.fail(errors.usage("start_flow needs connector, kind and pending: [{flow_id, connector, kind}]"), []) if {
	not _args_ok
} else := step.fail(errors.usage(concat("", ["a flow's kind is one of ", concat(", ", sort(kinds))])), []) if {
	not _kind in kinds
} else := step.fail(errors.unknown_connector(_c), []) if {
	not catalog.known(_c)
} else := step.fail(
	errors.configuration(concat("", [_c, " is not an OAuth provider; configure it instead"]), concat("", ["grantwire configure ", _c]), {"connector": _c}),
	[],
) if {
	not catalog.oauth(_c)
} else := step.fail(errors.flow_in_progress(_c, first.flow_id, first.kind), []) if {
	# The first pending flow of the connector (a server passing two gets one answer).
	first := [p | some p in _pending; p.connector == _c][0]
} else := step.done({"connector": _c, "kind": _kind}, [])
