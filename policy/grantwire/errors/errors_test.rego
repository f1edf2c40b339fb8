package grantwire.errors_test

import data.grantwire.errors

# One instance of every constructor.
_all := [
	errors.usage("x"),
	errors.unknown_connector("nope"),
	errors.unknown_agents(["builtin:a", "builtin:b"]),
	errors.configuration("m", "grantwire catalog", {"connector": "google"}),
	errors.configuration("m", "", {}),
	errors.agent_not_granted("google", "builtin:chat", ["gmail"], ["openid"]),
	errors.agent_not_granted("google", "builtin:chat", [], []),
	errors.not_connected("google", ["gmail"]),
	errors.not_connected_mcp("mcp-github", ["GITHUB_TOKEN"]),
	errors.not_connected_mcp("mcp-memory", []),
	errors.connection_missing_scopes("google", "builtin:chat", ["gmail"], ["openid"]),
	errors.reauth_required("google", "why", ["gmail"]),
	errors.tenant_mismatch("microsoft", "a", "b", ["User.Read"]),
	errors.connection_revoked("google", ["gmail"]),
	errors.busy("google"),
	errors.busy_conflict(17),
	errors.scope_mismatch("google", ["gmail"], ["gmail", "openid"]),
	errors.provider_error("google", 500, "server_error"),
	errors.provider_problem("google", "no code", ""),
	errors.provider_problem("google", "no code", "grantwire connect google"),
	errors.token_failure("google", {"kind": "status", "status": 500, "error": "http_error"}),
	errors.interactive_required("google", "grantwire connect google --scopes gmail"),
	errors.consent_denied("google", "access_denied"),
	errors.insecure_transport("credentials in URLs are refused"),
	errors.corrupt_ledger("grants", "/h/.grantwire/connectors/grants.json", "invalid JSON"),
	errors.host_failure({"code": "INSECURE_STORE", "detail": "no Secret Service", "fix": "apt-get install gnome-keyring"}),
	errors.host_failure({"code": "IO", "detail": "disk full"}),
	errors.host_failure({"code": "STORE_UNAVAILABLE", "detail": "store unavailable: the PostgreSQL store postgres://u@db/g does not answer", "fix": "pg_isready -h db -p 5432"}),
	errors.issuer_mismatch("github", "names another issuer", ""),
	errors.authorization_timeout("google", 300000, "grantwire connect google --scopes gmail"),
	errors.internal("grant"),
	errors.headless("google", "authorizing google needs a browser", "grantwire connect google --device"),
	errors.headless("google", "nobody can see the code", ""),
	errors.device_timeout("google", "the google device code expired", "grantwire connect google --device"),
	errors.connect_superseded("google", "a@example.com"),
	errors.connect_superseded("local", ""),
	errors.mcp_not_granted("mcp-github", "builtin:chat"),
	errors.agent_not_active("mcp-github", "it's"),
	errors.flow_in_progress("google", "f1", "pkce"),
	errors.tool_not_allowed("mcp-github", "builtin:chat", "t", [], "grantwire activations activate mcp-github builtin:chat --tools t"),
]

test_the_table_lists_exactly_the_codes_the_constructors_return if {
{e.code | some e in _all} |
	errors.around_operation == object.keys(errors.table)
	count({e.code | some e in _all} & errors.around_operation) == 0
}

test_every_code_has_a_rest_status_and_an_exit_code if {
	every _, v in errors.table {
		object.keys(v) == {"status", "exit"}
		v.status >= 400
		v.status < 600
		v.exit in {1, 2, 3, 4, 5, 75, 126, 127, 130}
	}
	errors.table.BUSY == {"status": 503, "exit": 75}
	errors.table.USAGE == {"status": 400, "exit": 2}
	errors.table.UNKNOWN_CONNECTOR == {"status": 404, "exit": 1}
	errors.table.CONFIGURATION == {"status": 400, "exit": 3}
	errors.table.CANCELLED == {"status": 503, "exit": 130}
	errors.table.COMMAND_NOT_FOUND.exit == 127
}

test_messages_end_with_the_fix if {
	every e in _all {
		is_string(e.message)
		is_string(e.fix)
		_fix_ok(e)
	}
}

_fix_ok(e) if {
	e.fix != ""
	endswith(e.message, concat("", ["; fix: ", e.fix]))
}

_fix_ok(e) if {
	e.fix == ""
	not contains(e.message, "; fix:")
}

test_error_builder if {
	errors.error("X", "m", "f", {"a": 1}) == {"code": "X", "summary": "m", "message": "m; fix: f", "fix": "f", "a": 1}
	errors.error("X", "m", "", {}) == {"code": "X", "summary": "m", "message": "m", "fix": ""}

	# fields never override the code, the message or the fix
	errors.error("X", "m", "", {"code": "Y", "summary": "n", "message": "n", "fix": "g"}) == {"code": "X", "summary": "m", "message": "m", "fix": ""}
}

test_usage_and_unknowns if {
	errors.usage("grant needs connector") == {"code": "USAGE", "summary": "usage: grant needs connector", "message": "usage: grant needs connector", "fix": ""}
	errors.unknown_connector("no pe") == {
		"code": "UNKNOWN_CONNECTOR", "connector": "no pe", "fix": "grantwire catalog",
		"summary": "unknown connector 'no pe'", "message": "unknown connector 'no pe'; fix: grantwire catalog",
	}
	errors.unknown_agents(["builtin:a", "builtin:b"]) == {
		"code": "UNKNOWN_AGENT", "agent_ids": ["builtin:a", "builtin:b"], "fix": "grantwire agents list",
		"summary": "unknown agent(s): builtin:a, builtin:b; nothing was written", "message": "unknown agent(s): builtin:a, builtin:b; nothing was written; fix: grantwire agents list",
	}
}

test_agent_not_granted if {
	errors.agent_not_granted("google", "builtin:chat", ["gmail", "openid"], ["openid", "email"]) == {
		"code": "AGENT_NOT_GRANTED", "connector": "google", "agent": "builtin:chat",
		"missing_scopes": ["gmail"], "full_scopes": ["email", "gmail", "openid"],
		"fix": "grantwire grants grant google builtin:chat --scopes email,gmail,openid",
		"summary": "agent builtin:chat is not granted gmail on google", "message": "agent builtin:chat is not granted gmail on google; fix: grantwire grants grant google builtin:chat --scopes email,gmail,openid",
	}

	# no grant at all, nothing asked
	e := errors.agent_not_granted("mcp-github", "builtin:chat", [], [])
	e.message == "agent builtin:chat holds no grant for mcp-github; fix: grantwire grants grant mcp-github builtin:chat --scopes ''"
	e.missing_scopes == []
}

test_not_connected if {
	errors.not_connected("google", ["gmail", "openid"]) == {
		"code": "NOT_CONNECTED", "connector": "google", "fix": "grantwire connect google --scopes gmail,openid",
		"summary": "google is not connected", "message": "google is not connected; fix: grantwire connect google --scopes gmail,openid",
	}
	errors.not_connected_mcp("mcp-github", ["GITHUB_HOST", "GITHUB_TOKEN"]) == {
		"code": "NOT_CONNECTED", "connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"],
		"fix": "grantwire configure mcp-github --from-stdin",
		"summary": "mcp-github is not configured", "message": "mcp-github is not configured; fix: grantwire configure mcp-github --from-stdin",
	}
	errors.not_connected_mcp("mcp-memory", []).fix == "grantwire configure mcp-memory"
}

test_connection_errors if {
	errors.connection_missing_scopes("google", "builtin:chat", ["gmail", "openid"], ["openid"]) == {
		"code": "CONNECTION_MISSING_SCOPES", "connector": "google", "agent": "builtin:chat",
		"missing_scopes": ["gmail"], "full_scopes": ["gmail", "openid"],
		"fix": "grantwire connect google --scopes gmail,openid",
		"summary": "the google connection lacks gmail", "message": "the google connection lacks gmail; fix: grantwire connect google --scopes gmail,openid",
	}
	errors.reauth_required("google", "the OAuth client was rotated", ["gmail"]) == {
		"code": "REAUTH_REQUIRED", "connector": "google", "cause": "the OAuth client was rotated",
		"fix": "grantwire connect google --scopes gmail",
		"summary": "the google connection must be authorized again (the OAuth client was rotated)", "message": "the google connection must be authorized again (the OAuth client was rotated); fix: grantwire connect google --scopes gmail",
	}
	errors.tenant_mismatch("microsoft", "contoso", "common", []) == {
		"code": "TENANT_MISMATCH", "connector": "microsoft", "stored_tenant": "contoso", "configured_tenant": "common",
		"fix": "grantwire connect microsoft",
		"summary": "the microsoft connection belongs to tenant contoso but the configured tenant is common; the connection was cleared", "message": "the microsoft connection belongs to tenant contoso but the configured tenant is common; the connection was cleared; fix: grantwire connect microsoft",
	}
	errors.connection_revoked("google", ["gmail"]).message == "the provider revoked the google connection (invalid_grant); fix: grantwire connect google --scopes gmail"
}

test_busy if {
	errors.busy("google") == {
		"code": "BUSY", "connector": "google", "retry_after_ms": 500, "fix": "",
		"summary": "another grantwire operation holds the google lock; nothing was changed, retry shortly", "message": "another grantwire operation holds the google lock; nothing was changed, retry shortly",
	}
	errors.busy_conflict(17) == {
		"code": "BUSY", "retry_after_ms": 500, "attempts": 17, "fix": "",
		"summary": "gave up after 17 attempts: other writers kept changing the same entries; retry shortly", "message": "gave up after 17 attempts: other writers kept changing the same entries; retry shortly",
	}

	# numbers beyond 32 bits are written without format_int
	errors.busy_conflict(4294967296).message == "gave up after 4294967296 attempts: other writers kept changing the same entries; retry shortly"
	errors.busy_conflict(-3).message == "gave up after -3 attempts: other writers kept changing the same entries; retry shortly"
}

test_scope_mismatch if {
	errors.scope_mismatch("google", ["gmail"], ["gmail", "openid"]) == {
		"code": "SCOPE_MISMATCH", "connector": "google", "missing_scopes": ["gmail"], "required_scopes": ["gmail", "openid"],
		"fix": "",
		"summary": "the forwarded google consent lacks gmail; a refresh can never widen scope, so nothing was written. Re-consent in the host application with all of: gmail openid", "message": "the forwarded google consent lacks gmail; a refresh can never widen scope, so nothing was written. Re-consent in the host application with all of: gmail openid",
	}
}

test_provider_errors if {
	errors.provider_error("google", 503, "temporarily_unavailable") == {
		"code": "PROVIDER_ERROR", "connector": "google", "http_status": 503, "oauth_error": "temporarily_unavailable", "fix": "",
		"summary": "the google token endpoint failed (status 503 temporarily_unavailable)", "message": "the google token endpoint failed (status 503 temporarily_unavailable)",
	}
	errors.provider_problem("google", "no code", "") == {"code": "PROVIDER_ERROR", "connector": "google", "fix": "", "summary": "google: no code", "message": "google: no code"}
}

_failure(r) := errors.token_failure("google", r).message

test_token_failure_texts if {
	_failure({"kind": "transport", "status": 0, "error": "timeout", "detail": "no answer in time"}) == "the google token endpoint could not be reached (no answer in time)"
	_failure({"kind": "not_json", "status": 200, "error": "not_json"}) == "the google token endpoint answered non-JSON (status 200)"
	_failure({"kind": "no_access_token", "status": 200, "error": "no_access_token"}) == "the google token endpoint answered without an access_token"
	_failure({"kind": "oauth", "status": 400, "error": "invalid_scope"}) == "the google token endpoint failed (status 400 invalid_scope)"
	_failure({"kind": "status", "status": 500, "error": "http_error"}) == "the google token endpoint failed (status 500)"
	e := errors.token_failure("google", {"kind": "oauth", "status": 400, "error": "invalid_scope"})
	e.code == "PROVIDER_ERROR"
	e.http_status == 400
	e.oauth_error == "invalid_scope"
}

test_connect_errors if {
	errors.interactive_required("google", "grantwire connect google --scopes gmail") == {
		"code": "INTERACTIVE_AUTH_REQUIRED", "connector": "google",
		"fix": "grantwire connect google --scopes gmail --no-browser",
		"summary": "authorizing google needs a browser and this session has none", "message": "authorizing google needs a browser and this session has none; fix: grantwire connect google --scopes gmail --no-browser",
	}
	errors.consent_denied("google", "access_denied") == {
		"code": "CONSENT_DENIED", "connector": "google", "oauth_error": "access_denied", "fix": "",
		"summary": "the google authorization was refused (access_denied)", "message": "the google authorization was refused (access_denied)",
	}
	errors.issuer_mismatch("github", "names another issuer", "") == {
		"code": "ISSUER_MISMATCH", "connector": "github", "fix": "",
		"summary": "the github authorization response names another issuer; the code was not exchanged and nothing was stored", "message": "the github authorization response names another issuer; the code was not exchanged and nothing was stored",
	}
	errors.authorization_timeout("google", 300000, "grantwire connect google --scopes gmail") == {
		"code": "AUTHORIZATION_TIMEOUT", "connector": "google", "timeout_ms": 300000, "fix": "grantwire connect google --scopes gmail",
		"summary": "no answer from the browser in 5m; nothing was stored", "message": "no answer from the browser in 5m; nothing was stored; fix: grantwire connect google --scopes gmail",
	}
}

test_durations if {
	errors.duration(300000) == "5m"
	errors.duration(1800000) == "30m"
	errors.duration(90000) == "90s"
	errors.duration(1000) == "1s"
	errors.duration(1500) == "1500ms"
}

test_transport_and_ledgers if {
	errors.insecure_transport("credentials in URLs are refused") == {
		"code": "INSECURE_TRANSPORT", "reason": "credentials in URLs are refused", "fix": "",
		"summary": "refused URL: credentials in URLs are refused", "message": "refused URL: credentials in URLs are refused",
	}
	errors.corrupt_ledger("grants", "/h/.grantwire/connectors/grants.json", "invalid JSON") == {
		"code": "CORRUPT_LEDGER", "ledger": "grants", "path": "/h/.grantwire/connectors/grants.json",
		"fix": "mv /h/.grantwire/connectors/grants.json /h/.grantwire/connectors/grants.json.corrupt",
		"summary": "the grants ledger at /h/.grantwire/connectors/grants.json is unreadable (invalid JSON); nothing was changed",
		"message": "the grants ledger at /h/.grantwire/connectors/grants.json is unreadable (invalid JSON); nothing was changed; fix: mv /h/.grantwire/connectors/grants.json /h/.grantwire/connectors/grants.json.corrupt",
	}
	errors.corrupt_ledger("grants", "postgres://grantwire@db:5432/grantwire/default/connectors/grants.json", "not valid JSON").fix == "grantwire store move-aside connectors/grants.json"
	errors.corrupt_ledger("grants", "postgresql://db/g/team-2/connectors/grants.json", "larger than 16 MiB").fix == "grantwire store move-aside --store-home team-2 connectors/grants.json"
	errors.corrupt_ledger("agents", "/h/postgres://x/agents.json", "not valid JSON").fix == "mv /h/postgres://x/agents.json /h/postgres://x/agents.json.corrupt"
	errors.move_aside("postgres://u@db:5432/g/default/connectors/state.json") == "grantwire store move-aside connectors/state.json"
	errors.move_aside("/home/a b/.grantwire/x.json") == "mv '/home/a b/.grantwire/x.json' '/home/a b/.grantwire/x.json.corrupt'"
	errors.move_aside("/home/it's/x") == `mv '/home/it'\''s/x' '/home/it'\''s/x.corrupt'`
}

test_host_failure if {
	errors.host_failure({"code": "INSECURE_STORE", "detail": "no Secret Service on the session bus", "fix": "apt-get install gnome-keyring"}) == {
		"code": "INSECURE_STORE", "fix": "apt-get install gnome-keyring",
		"summary": "no secure credential store is available (no Secret Service on the session bus); grantwire never stores secrets in a file", "message": "no secure credential store is available (no Secret Service on the session bus); grantwire never stores secrets in a file; fix: apt-get install gnome-keyring",
	}
	errors.host_failure({"code": "INSECURE_STORE", "detail": "locked"}).fix == ""
	errors.host_failure({"code": "IO", "detail": "open grants.json: permission denied", "fix": "chmod 600 grants.json"}) == {
		"code": "IO_ERROR", "fix": "chmod 600 grants.json",
		"summary": "the host failed: open grants.json: permission denied", "message": "the host failed: open grants.json: permission denied; fix: chmod 600 grants.json",
	}
	errors.host_failure({"code": "STORE_UNAVAILABLE", "detail": "store unavailable: the PostgreSQL store postgres://u@db/g does not answer (connection refused)", "fix": "pg_isready -h db -p 5432"}) == {
		"code": "STORE_UNAVAILABLE", "fix": "pg_isready -h db -p 5432",
		"summary": "store unavailable: the PostgreSQL store postgres://u@db/g does not answer (connection refused)",
		"message": "store unavailable: the PostgreSQL store postgres://u@db/g does not answer (connection refused); fix: pg_isready -h db -p 5432",
	}
	errors.host_failure({"code": "anything", "detail": "d"}) == {"code": "IO_ERROR", "fix": "", "summary": "the host failed: d", "message": "the host failed: d"}
}

test_internal if {
	errors.internal("grant") == {"code": "INTERNAL", "fix": "", "summary": "internal: no decision for grant (malformed facts?)", "message": "internal: no decision for grant (malformed facts?)"}
	errors.configuration("no client", "grantwire configure google --client-id <id>", {"connector": "google"}) == {
		"code": "CONFIGURATION", "connector": "google", "fix": "grantwire configure google --client-id <id>",
		"summary": "configuration error: no client", "message": "configuration error: no client; fix: grantwire configure google --client-id <id>",
	}
}

test_mcp_gate_errors if {
	errors.mcp_not_granted("mcp-github", "builtin:chat") == {
		"code": "AGENT_NOT_GRANTED", "connector": "mcp-github", "agent": "builtin:chat",
		"missing_scopes": ["use"], "full_scopes": ["use"],
		"fix": "grantwire activations activate mcp-github builtin:chat --scopes use",
		"summary": "agent builtin:chat holds no grant for mcp-github",
		"message": "agent builtin:chat holds no grant for mcp-github; fix: grantwire activations activate mcp-github builtin:chat --scopes use",
	}
	errors.agent_not_active("mcp-github", "it's") == {
		"code": "AGENT_NOT_ACTIVE", "connector": "mcp-github", "agent": "it's",
		"fix": `grantwire activations activate mcp-github 'it'\''s'`,
		"summary": `agent 'it'\''s' is granted mcp-github but it is not active for it`,
		"message": `agent 'it'\''s' is granted mcp-github but it is not active for it; fix: grantwire activations activate mcp-github 'it'\''s'`,
	}
	errors.table.AGENT_NOT_ACTIVE == {"status": 403, "exit": 4}
}

test_tool_not_allowed if {
	errors.tool_not_allowed("mcp-github", "builtin:chat", "push", ["read", "list"], "F") == {
		"code": "TOOL_NOT_ALLOWED", "connector": "mcp-github", "agent": "builtin:chat",
		"tool": "push", "allowed_tools": ["read", "list"], "fix": "F",
		"summary": "agent builtin:chat may not use tool push of mcp-github (its tool rule allows read, list)",
		"message": "agent builtin:chat may not use tool push of mcp-github (its tool rule allows read, list); fix: F",
	}
	errors.tool_not_allowed("mcp-github", "builtin:chat", "push", [], "F").summary == "agent builtin:chat may not use tool push of mcp-github (its tool rule allows no tool)"
	errors.table.TOOL_NOT_ALLOWED == {"status": 403, "exit": 4}
}
