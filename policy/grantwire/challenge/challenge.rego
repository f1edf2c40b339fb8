# METADATA
# title: A remote MCP session's refused request
# description: |
#   `mcp_challenge(connector, status, www_authenticate?, sent, uses?, refreshed?, authorizations?, step_ups?)`:
#   what a remote MCP session does when the server refuses a request with 401 or 403 (MCP
#   authorization, RFC 6750 §3), decided from what the session knows and nothing else (no
#   need: a pure decision). `sent` is what the refused request carried: "none" (no token),
#   "other" (a token this session did not get from the policy), "current" (the token last
#   handed out) or "fresh" (that token, first handed out after this session's last
#   authorization; `uses` is how many requests carried it). `refreshed` says a refresh was
#   already tried for this refusal and gave no new token; `authorizations` and `step_ups`
#   count this session's authorizations after a 401 and its step-ups so far.
#
#   The result's `action`: "refresh" (a 401 refusing the current token: ask mcp_token again
#   with that token's digest as rejected, which refreshes under the server's lock), then
#   "authorize" (mcp_auth with the challenge), or "step_up" (a 403 insufficient_scope:
#   mcp_auth with the challenge and the step-up's number, which bounds step-ups per session,
#   max_step_ups, and refuses one that would change nothing); `scopes` are the scopes the
#   challenge names. A fresh token refused on its first request, or a session that has
#   authorized max_reauthorizations times after a 401, fails (PROVIDER_ERROR: authorizing
#   again would loop), as does a 403 that asks for no scope and any other status.
package grantwire.challenge

import data.grantwire.discovery
import data.grantwire.errors
import data.grantwire.remoteauth
import data.grantwire.step

# METADATA
# title: re-authorization limit
# description: |
#   How many authorizations one session makes after 401s (a server that moved to another
#   authorization server needs a second one; more would be a loop).
max_reauthorizations := 3

_c := input.args.connector

_status := input.args.status

_sent := input.args.sent

_count(name) := n if {
	n := input.args[name]
	is_number(n)
} else := 0

_count_ok(name) if object.get(input.args, name, null) == null

_count_ok(name) if {
	n := input.args[name]
	is_number(n)
	n >= 0
	n == floor(n)
}

_refreshed if input.args.refreshed == true

_refreshed_ok if object.get(input.args, "refreshed", null) == null

_refreshed_ok if is_boolean(input.args.refreshed)

_challenge_ok if object.get(input.args, "www_authenticate", null) == null

_challenge_ok if {
	is_string(input.args.www_authenticate)
	count(input.args.www_authenticate) <= 16384
}

_args_ok if {
	is_string(_c)
	is_number(_status)
	_status == floor(_status)
	_sent in {"none", "other", "current", "fresh"}
	_challenge_ok
	_refreshed_ok
	every name in ["uses", "authorizations", "step_ups"] {
		_count_ok(name)
	}
}

_header := base64url.decode(input.args.www_authenticate) if is_string(input.args.www_authenticate)

else := ""

_challenge := discovery.bearer(_header)

_scopes := s if {
	s := discovery.challenge_scopes(_challenge)
} else := []

_insufficient_scope if _challenge.error == "insufficient_scope"

_refused(message) := errors.provider_problem(_c, message, "")

# METADATA
# title: mcp_challenge decision
# description: What a remote MCP session does about a refused request; see the package description.
# entrypoint: true
decision := step.fail(errors.usage("mcp_challenge needs connector, status (a number) and sent (none, other, current or fresh), and optional www_authenticate (base64url), uses, refreshed, authorizations and step_ups"), []) if {
	not _args_ok
} else := step.done({"action": "refresh", "scopes": _scopes}, []) if {
	_status == 401
	_sent in {"current", "fresh"}
	not _refreshed
} else := step.fail(_refused("the server refused the token of a fresh authorization on the first request that carried it; authorizing again would loop"), []) if {
	_status == 401
	_sent == "fresh"
	_count("uses") <= 1
} else := step.fail(_refused(concat("", ["the server refused the request again after ", format_int(max_reauthorizations, 10), " authorizations in this session"])), []) if {
	_status == 401
	_count("authorizations") >= max_reauthorizations
} else := step.done({"action": "authorize", "scopes": _scopes}, []) if {
	_status == 401
} else := step.fail(_refused("the server refused the request (403) without asking for more scopes (insufficient_scope); authorizing again would not help"), []) if {
	_status == 403
	not _insufficient_scope
} else := step.done({"action": "step_up", "scopes": _scopes, "step_up": _count("step_ups") + 1, "max_step_ups": remoteauth.max_step_ups}, []) if {
	_status == 403
} else := step.fail(_refused(concat("", ["the server answered ", format_int(_status, 10), ", which is no request for authorization"])), [])
