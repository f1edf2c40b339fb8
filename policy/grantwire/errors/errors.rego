# METADATA
# title: Errors
# description: |
#   Every error the core returns: a stable code, a one-line message that ends with the exact
#   command that fixes it (when one exists), and structured fields. Messages never contain a
#   secret: the core never sees one. The codes and their REST statuses and CLI exit codes are
#   listed in docs/behaviour.md#errors; `table`, published by the manifest, is their source.
package grantwire.errors

import data.grantwire.scopes

# METADATA
# title: error table
# description: REST status and CLI exit code of every error code.
table := {
	"NOT_CONNECTED": {"status": 401, "exit": 4},
	"AGENT_NOT_GRANTED": {"status": 403, "exit": 4},
	"CONNECTION_MISSING_SCOPES": {"status": 403, "exit": 4},
	"REAUTH_REQUIRED": {"status": 401, "exit": 4},
	"TENANT_MISMATCH": {"status": 403, "exit": 4},
	"CONNECTION_REVOKED": {"status": 401, "exit": 4},
	"SCOPE_MISMATCH": {"status": 403, "exit": 4},
	"INTERACTIVE_AUTH_REQUIRED": {"status": 401, "exit": 4},
	"CONSENT_DENIED": {"status": 403, "exit": 4},
	"BUSY": {"status": 503, "exit": 75},
	"CONFIGURATION": {"status": 400, "exit": 3},
	"INSECURE_STORE": {"status": 500, "exit": 5},
	"CORRUPT_LEDGER": {"status": 500, "exit": 5},
	"INSECURE_TRANSPORT": {"status": 502, "exit": 5},
	"ISSUER_MISMATCH": {"status": 502, "exit": 5},
	"AUTHORIZATION_TIMEOUT": {"status": 408, "exit": 4},
	"IO_ERROR": {"status": 500, "exit": 5},
	"STORE_UNAVAILABLE": {"status": 503, "exit": 5},
	"PROVIDER_ERROR": {"status": 502, "exit": 5},
	"UNKNOWN_CONNECTOR": {"status": 404, "exit": 1},
	"UNKNOWN_AGENT": {"status": 404, "exit": 1},
	"USAGE": {"status": 400, "exit": 2},
	"INTERNAL": {"status": 500, "exit": 5},
	"AGENT_NOT_ACTIVE": {"status": 403, "exit": 4},
	"FLOW_IN_PROGRESS": {"status": 409, "exit": 75},
	"TOOL_NOT_ALLOWED": {"status": 403, "exit": 4},
	# Outcomes the surfaces meet before or around an operation (around_operation). The
	# policy publishes them too, so that no surface invents a code, a status or an exit code.
	"CANCELLED": {"status": 503, "exit": 130},
	"CHECK_FAILED": {"status": 422, "exit": 1},
	"BUNDLE_REFUSED": {"status": 500, "exit": 5},
	"BODY_TOO_LARGE": {"status": 413, "exit": 2},
	"UI_HEADER_REQUIRED": {"status": 403, "exit": 2},
	"FOREIGN_ORIGIN": {"status": 403, "exit": 2},
	"MISDIRECTED": {"status": 421, "exit": 2},
	"METHOD_NOT_ALLOWED": {"status": 405, "exit": 2},
	"TOKEN_REQUIRED": {"status": 401, "exit": 4},
	"NOT_FOUND": {"status": 404, "exit": 1},
	"STOPPING": {"status": 503, "exit": 75},
	# A local MCP server's command, as a shell reports it (127 not found, 126 not runnable).
	"COMMAND_NOT_FOUND": {"status": 424, "exit": 127},
	"COMMAND_CANNOT_RUN": {"status": 424, "exit": 126},
	# mcp proxy: forwarding to the remote server failed (refused, an upstream 5xx); it serves on.
	"UPSTREAM_ERROR": {"status": 502, "exit": 5},
}

# METADATA
# title: codes met around an operation
# description: |
#   The codes of the table that no operation returns: a surface meets them before or around
#   one (an interrupted command, a refused bundle, a failed policy check, the REST server's
#   own refusals, a local MCP server's command that cannot be started). Surfaces word
#   their messages; the policy gives their REST status and CLI exit code like any other.
around_operation := {
	"CANCELLED", "CHECK_FAILED", "BUNDLE_REFUSED", "BODY_TOO_LARGE", "UI_HEADER_REQUIRED",
	"FOREIGN_ORIGIN", "MISDIRECTED", "METHOD_NOT_ALLOWED", "TOKEN_REQUIRED", "NOT_FOUND",
	"STOPPING", "COMMAND_NOT_FOUND", "COMMAND_CANNOT_RUN", "UPSTREAM_ERROR",
}

# METADATA
# title: error
# description: |
#   Build an error object; fields are merged over the code, the message (the summary, then
#   "; fix: " and the fixing command when there is one), the summary and the fix. Surfaces
#   print the summary and the fix as they like; the message reads whole where one string
#   is all there is room for.
error(code, message, fix, fields) := object.union(fields, {"code": code, "message": msg, "summary": message, "fix": fix}) if {
	fix != ""
	msg := concat("", [message, "; fix: ", fix])
} else := object.union(fields, {"code": code, "message": message, "summary": message, "fix": ""})

# A number as decimal text. OPA's Wasm runtime aborts format_int beyond 32 bits, so larger
# numbers (integers, as the engines accept no others) are written by json.marshal.
_decimal(n) := format_int(n, 10) if {
	n >= -2147483648
	n <= 2147483647
} else := json.marshal(n)

# METADATA
# title: usage
# description: The arguments of an operation are malformed.
usage(message) := error("USAGE", concat("", ["usage: ", message]), "", {})

# METADATA
# title: unknown connector
# description: The connector id is not in the catalog.
unknown_connector(c) := error(
	"UNKNOWN_CONNECTOR",
	concat("", ["unknown connector ", scopes.quote(c)]),
	"grantwire catalog",
	{"connector": c},
)

# METADATA
# title: unknown agents
# description: Agents that the agent registry does not know.
unknown_agents(list) := error(
	"UNKNOWN_AGENT",
	concat("", ["unknown agent(s): ", concat(", ", list), "; nothing was written"]),
	"grantwire agents list",
	{"agent_ids": list},
)

# METADATA
# title: configuration
# description: A misuse of the configuration (activation on OAuth, no scopes to grant, no client configured, ...).
configuration(message, fix, fields) := error("CONFIGURATION", concat("", ["configuration error: ", message]), fix, fields)

# METADATA
# title: agent not granted
# description: The grant layer refused; the fix grants the union of held and requested scopes.
agent_not_granted(c, a, requested, held) := error(
	"AGENT_NOT_GRANTED",
	concat("", ["agent ", scopes.quote(a), _not_granted(scopes.missing(requested, held)), c]),
	scopes.grant_cmd(c, a, scopes.union(held, requested)),
	{
		"connector": c, "agent": a,
		"missing_scopes": scopes.missing(requested, held),
		"full_scopes": scopes.union(held, requested),
	},
)

# No scope is missing when the agent holds no grant at all and asked for none.
_not_granted(missing) := concat("", [" is not granted ", concat(" ", missing), " on "]) if {
	count(missing) > 0
} else := " holds no grant for "

# METADATA
# title: not connected
# description: No connection is stored for the provider.
not_connected(c, list) := error(
	"NOT_CONNECTED",
	concat("", [c, " is not connected"]),
	scopes.connect_cmd(c, list),
	{"connector": c},
)

# METADATA
# title: MCP server not configured
# description: An MCP server has no stored configuration.
not_connected_mcp(c, keys) := error(
	"NOT_CONNECTED",
	concat("", [c, " is not configured"]),
	_configure_cmd(c, keys),
	{"connector": c, "env_keys": keys},
)

# Values come on stdin: the CLI never takes secrets from arguments.
_configure_cmd(c, keys) := concat("", ["grantwire configure ", c, " --from-stdin"]) if count(keys) > 0

else := concat("", ["grantwire configure ", c])

# METADATA
# title: connection missing scopes
# description: The stored connection lacks requested scopes; reconnect with the union.
connection_missing_scopes(c, a, requested, held) := error(
	"CONNECTION_MISSING_SCOPES",
	concat("", [
		"the ", c, " connection lacks ", concat(" ", scopes.missing(requested, held)),
	]),
	scopes.connect_cmd(c, scopes.union(held, requested)),
	{
		"connector": c, "agent": a,
		"missing_scopes": scopes.missing(requested, held),
		"full_scopes": scopes.union(held, requested),
	},
)

# METADATA
# title: reauth required
# description: The connection must be made again (client rotated, corrupt blob, 401 on refresh).
reauth_required(c, cause, list) := error(
	"REAUTH_REQUIRED",
	concat("", ["the ", c, " connection must be authorized again (", cause, ")"]),
	scopes.connect_cmd(c, list),
	{"connector": c, "cause": cause},
)

# METADATA
# title: tenant mismatch
# description: The stored tenant differs from the configured tenant; the connection was cleared.
tenant_mismatch(c, stored, configured, list) := error(
	"TENANT_MISMATCH",
	concat("", [
		"the ", c, " connection belongs to tenant ", stored,
		" but the configured tenant is ", configured, "; the connection was cleared",
	]),
	scopes.connect_cmd(c, list),
	{"connector": c, "stored_tenant": stored, "configured_tenant": configured},
)

# METADATA
# title: connection revoked
# description: The token endpoint answered invalid_grant; the connection was deleted.
connection_revoked(c, list) := error(
	"CONNECTION_REVOKED",
	concat("", ["the provider revoked the ", c, " connection (invalid_grant)"]),
	scopes.connect_cmd(c, list),
	{"connector": c},
)

# METADATA
# title: busy
# description: Another operation holds the provider's lock; nothing was changed. Transient.
busy(c) := error(
	"BUSY",
	concat("", ["another grantwire operation holds the ", c, " lock; nothing was changed, retry shortly"]),
	"",
	{"connector": c, "retry_after_ms": 500},
)

# METADATA
# title: busy after conflicts
# description: Concurrent writers kept changing what this operation read; nothing more was written.
busy_conflict(n) := error(
	"BUSY",
	concat("", [
		"gave up after ", _decimal(n),
		" attempts: other writers kept changing the same entries; retry shortly",
	]),
	"",
	{"retry_after_ms": 500, "attempts": n},
)

# METADATA
# title: scope mismatch
# description: Forwarded scopes do not cover what the listed agents declare. Only re-consent fixes it.
scope_mismatch(c, missing, wanted) := error(
	"SCOPE_MISMATCH",
	concat("", [
		"the forwarded ", c, " consent lacks ", concat(" ", missing),
		"; a refresh can never widen scope, so nothing was written. ",
		"Re-consent in the host application with all of: ", concat(" ", wanted),
	]),
	"",
	{"connector": c, "missing_scopes": missing, "required_scopes": wanted},
)

# METADATA
# title: provider error
# description: The token endpoint failed in a way that is neither invalid_grant nor 401.
provider_error(c, status, code) := error(
	"PROVIDER_ERROR",
	concat("", ["the ", c, " token endpoint failed (status ", _decimal(status), " ", code, ")"]),
	"",
	{"connector": c, "http_status": status, "oauth_error": code},
)

# METADATA
# title: provider problem
# description: The provider answered, but not in a way a connection can be made from.
provider_problem(c, message, fix) := error(
	"PROVIDER_ERROR",
	concat("", [c, ": ", message]),
	fix,
	{"connector": c},
)

# METADATA
# title: token failure
# description: |
#   A token request that failed otherwise than invalid_grant, invalid_client or 401 (see
#   oauth.response for the kinds). Descriptions a server sent are never repeated.
token_failure(c, r) := error(
	"PROVIDER_ERROR",
	concat("", ["the ", c, " token endpoint ", _failure_text(r)]),
	"",
	{"connector": c, "http_status": r.status, "oauth_error": r.error},
)

_failure_text(r) := concat("", ["could not be reached (", r.detail, ")"]) if {
	r.kind == "transport"
} else := "answered non-JSON (status 200)" if {
	r.kind == "not_json"
} else := "answered without an access_token" if {
	r.kind == "no_access_token"
} else := concat("", ["failed (status ", _decimal(r.status), " ", r.error, ")"]) if {
	r.kind == "oauth"
} else := concat("", ["failed (status ", _decimal(r.status), ")"])

# METADATA
# title: interactive auth required
# description: |
#   Authorization needs a browser and none is available; the fix is the connect command
#   (again) with --no-browser, which prints the URL and waits.
interactive_required(c, again) := error(
	"INTERACTIVE_AUTH_REQUIRED",
	concat("", ["authorizing ", c, " needs a browser and this session has none"]),
	concat("", [again, " --no-browser"]),
	{"connector": c},
)

# METADATA
# title: consent denied
# description: The user or the provider refused the authorization.
consent_denied(c, code) := error(
	"CONSENT_DENIED",
	concat("", ["the ", c, " authorization was refused (", code, ")"]),
	"",
	{"connector": c, "oauth_error": code},
)

# METADATA
# title: insecure transport
# description: A URL refused by the transport rule.
insecure_transport(reason) := error("INSECURE_TRANSPORT", concat("", ["refused URL: ", reason]), "", {"reason": reason})

# METADATA
# title: corrupt ledger
# description: |
#   A ledger that cannot be read is never reset or rewritten: the error names the file, why,
#   and the command that moves it aside (the ledger then starts empty; nothing else is lost).
corrupt_ledger(name, file, reason) := error(
	"CORRUPT_LEDGER",
	concat("", ["the ", name, " ledger at ", file, " is unreadable (", reason, "); nothing was changed"]),
	_corrupt_fix(file, reason),
	{"ledger": name, "path": file},
)

# A symbolic link is replaced by a copy of its target (the ledger keeps its content; a
# write would otherwise replace the link and leave the target stale); anything else is
# moved aside (move_aside).
_corrupt_fix(file, "a symbolic link") := concat("", [
	"cp -p -- \"$(readlink -f -- ", scopes.quote(file), ")\" ", scopes.quote(concat("", [file, ".copy"])),
	" && mv -f -- ", scopes.quote(concat("", [file, ".copy"])), " ", scopes.quote(file),
])

_corrupt_fix(file, reason) := move_aside(file) if reason != "a symbolic link"

_store_home_flag("default") := ""

_store_home_flag(home) := concat("", ["--store-home ", scopes.quote(home), " "]) if home != "default"

# METADATA
# title: move aside
# description: |
#   The command that moves an unreadable ledger aside: a file with mv (quoted for a POSIX
#   shell); a row of a PostgreSQL store, which names it postgres://USER@HOST:PORT/DATABASE/HOME/LEDGER,
#   with grantwire store move-aside (the home named unless it is the default one), run
#   with the same store (GRANTWIRE_STORE or --store).
move_aside(file) := concat("", ["grantwire store move-aside ", _store_home_flag(parts[1]), scopes.quote(parts[2])]) if {
	parts := regex.find_all_string_submatch_n(`^postgres(?:ql)?://[^/]*/[^/]+/([^/]+)/(.+)$`, file, 1)[0]
} else := concat("", ["mv ", scopes.quote(file), " ", scopes.quote(concat("", [file, ".corrupt"]))])

# METADATA
# title: host failure
# description: |
#   The host could not do what was asked: no secure credential store (INSECURE_STORE, with
#   what to install), a shared store (PostgreSQL) that does not answer (STORE_UNAVAILABLE:
#   the host's detail names the store and why, the fix checks it; nothing was changed and
#   the same call succeeds once it is back), or a file, lock or listener failed (IO_ERROR).
host_failure(he) := error(
	"INSECURE_STORE",
	concat("", ["no secure credential store is available (", he.detail, "); grantwire never stores secrets in a file"]),
	object.get(he, "fix", ""),
	{},
) if {
	he.code == "INSECURE_STORE"
} else := error("STORE_UNAVAILABLE", he.detail, object.get(he, "fix", ""), {}) if {
	he.code == "STORE_UNAVAILABLE"
} else := error("IO_ERROR", concat("", ["the host failed: ", he.detail]), object.get(he, "fix", ""), {})

# METADATA
# title: issuer mismatch
# description: |
#   The authorization response names another issuer than the provider's (RFC 9207), or
#   names none where the provider promises one: a mix-up attack or a misconfiguration.
#   Nothing was exchanged or stored. The cause names the issuer expected, and the one
#   received only when it is a plain http(s) address. The fix ("" when no command fixes
#   it) writes the received issuer into the user's catalog file (oauth.issuer_fix).
issuer_mismatch(c, cause, fix) := error(
	"ISSUER_MISMATCH",
	concat("", ["the ", c, " authorization response ", cause, "; the code was not exchanged and nothing was stored"]),
	fix,
	{"connector": c},
)

# METADATA
# title: authorization timeout
# description: |
#   Nobody completed the authorization in the browser in time (ms); nothing was stored. The
#   fix is the connect command again.
authorization_timeout(c, ms, again) := error(
	"AUTHORIZATION_TIMEOUT",
	concat("", ["no answer from the browser in ", duration(ms), "; nothing was stored"]),
	again,
	{"connector": c, "timeout_ms": ms},
)

# METADATA
# title: duration
# description: |
#   A number of milliseconds as a person reads it, in the largest unit that divides it:
#   5m, 90s, 1500ms (as the CLI's --timeout takes it).
duration(ms) := concat("", [_decimal(ms / 60000), "m"]) if {
	ms > 0
	ms % 60000 == 0
} else := concat("", [_decimal(ms / 1000), "s"]) if {
	ms % 1000 == 0
} else := concat("", [_decimal(ms), "ms"])

# METADATA
# title: internal
# description: The facts did not match any rule (a shell bug or malformed facts).
internal(op) := error("INTERNAL", concat("", ["internal: no decision for ", op, " (malformed facts?)"]), "", {})

# METADATA
# title: authorization not completable here
# description: |
#   Nobody can complete the authorization the way it was asked for (no browser, nothing to
#   paste into, nowhere to show a device code); the fix names a way that can, if any.
headless(c, message, fix) := error("INTERACTIVE_AUTH_REQUIRED", message, fix, {"connector": c})

# METADATA
# title: device code not approved in time
# description: |
#   The device code expired (expired_token), or the wait ended, before the user approved it
#   (RFC 8628 §3.5). Nothing was stored.
device_timeout(c, message, fix) := error("AUTHORIZATION_TIMEOUT", concat("", [message, "; nothing was stored"]), fix, {"connector": c})

# METADATA
# title: connect superseded
# description: |
#   Another connect of the same provider stored its connection while this one waited for
#   the user: that connection is kept, this authorization is discarded (and revoked at the
#   provider where it can be). Nothing of this operation was stored and there is nothing to
#   fix: the connection the user wanted exists.
connect_superseded(c, account) := error(
	"BUSY",
	concat("", [
		"another connect of ", c, " stored a connection", _as(account),
		" while this one waited for the authorization; it was kept and this authorization was discarded",
	]),
	"",
	{"connector": c, "retry_after_ms": 500},
)

_as(account) := concat("", [" (", account, ")"]) if account != ""

else := ""

# METADATA
# title: MCP server not granted
# description: |
#   An agent without a grant for an MCP server it wants to use. The fix grants and activates
#   in one step (revoking removes both, so a pair without a grant has no activation either).
mcp_not_granted(c, a) := error(
	"AGENT_NOT_GRANTED",
	concat("", ["agent ", scopes.quote(a), " holds no grant for ", c]),
	concat("", ["grantwire activations activate ", c, " ", scopes.quote(a), " --scopes use"]),
	{"connector": c, "agent": a, "missing_scopes": ["use"], "full_scopes": ["use"]},
)

# METADATA
# title: agent not active
# description: An agent granted an MCP server that is not active for it (its tools are hidden from it).
agent_not_active(c, a) := error(
	"AGENT_NOT_ACTIVE",
	concat("", ["agent ", scopes.quote(a), " is granted ", c, " but it is not active for it"]),
	concat("", ["grantwire activations activate ", c, " ", scopes.quote(a)]),
	{"connector": c, "agent": a},
)

# METADATA
# title: tool not allowed
# description: |
#   An agent active for an MCP server whose tool rule does not list the tool it asked for;
#   fix is the command that allows it (package tools words it).
tool_not_allowed(c, a, t, allowed, fix) := error(
	"TOOL_NOT_ALLOWED",
	concat("", [
		"agent ", scopes.quote(a), " may not use tool ", scopes.quote(t), " of ", c,
		" (its tool rule allows ", _tool_names(allowed), ")",
	]),
	fix,
	{"connector": c, "agent": a, "tool": t, "allowed_tools": allowed},
)

_tool_names(xs) := "no tool" if count(xs) == 0

else := concat(", ", xs)

# METADATA
# title: flow in progress
# description: |
#   An authorization of the connector is already waiting (grantwire serve starts one per
#   connector at a time): for the browser (kind pkce), or for its code to be entered on
#   another device (kind device). The page cancels it, or it ends with its timeout. No
#   command fixes it.
flow_in_progress(c, flow_id, kind) := error(
	"FLOW_IN_PROGRESS",
	concat("", ["an authorization of ", c, " is already waiting for ", _flow_waits_for(kind), " (flow ", flow_id, "); finish or cancel it first"]),
	"",
	{"connector": c, "flow_id": flow_id},
)

_flow_waits_for(kind) := "its code to be entered on another device" if kind == "device"

else := "the browser"
