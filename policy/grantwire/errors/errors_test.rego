package grantwire.errors_test

import data.grantwire.errors

test_table_matches_behaviour if {
	# BEHAVIOUR.md's error table: REST status and CLI exit code of every code.
	errors.table == {
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
		"PROVIDER_ERROR": {"status": 502, "exit": 5},
		"UNKNOWN_CONNECTOR": {"status": 404, "exit": 1},
		"UNKNOWN_AGENT": {"status": 404, "exit": 1},
		"USAGE": {"status": 400, "exit": 2},
		"INTERNAL": {"status": 500, "exit": 5},
	}
}

test_error_appends_the_fix_to_the_message if {
	errors.error("X", "broken", "grantwire fix", {"a": 1}) == {"code": "X", "message": "broken; fix: grantwire fix", "fix": "grantwire fix", "a": 1}
	errors.error("X", "broken", "", {}) == {"code": "X", "message": "broken", "fix": ""}
}

test_fields_never_override_code_message_or_fix if {
	errors.error("X", "m", "", {"code": "Y", "message": "n", "fix": "f"}) == {"code": "X", "message": "m", "fix": ""}
}

test_usage if {
	errors.usage("grant needs agent") == {"code": "USAGE", "message": "usage: grant needs agent", "fix": ""}
}

test_unknown_connector_quotes_the_id if {
	errors.unknown_connector("a b") == {
		"code": "UNKNOWN_CONNECTOR", "connector": "a b", "fix": "grantwire catalog",
		"message": "unknown connector 'a b'; fix: grantwire catalog",
	}
}

test_unknown_agents if {
	errors.unknown_agents(["builtin:a", "builtin:b"]) == {
		"code": "UNKNOWN_AGENT", "agent_ids": ["builtin:a", "builtin:b"], "fix": "grantwire agents list",
		"message": "unknown agent(s): builtin:a, builtin:b; nothing was written; fix: grantwire agents list",
	}
}

test_configuration if {
	errors.configuration("no client", "grantwire configure google", {"connector": "google"}) == {
		"code": "CONFIGURATION", "connector": "google", "fix": "grantwire configure google",
		"message": "configuration error: no client; fix: grantwire configure google",
	}
}

test_not_connected_mcp_names_every_key if {
	errors.not_connected_mcp("mcp-github", ["GITHUB_HOST", "GITHUB_TOKEN"]) == {
		"code": "NOT_CONNECTED", "connector": "mcp-github", "env_keys": ["GITHUB_HOST", "GITHUB_TOKEN"],
		"fix": "grantwire configure mcp-github --from-stdin",
		"message": "mcp-github is not configured; fix: grantwire configure mcp-github --from-stdin",
	}
	errors.not_connected_mcp("mcp-memory", []).fix == "grantwire configure mcp-memory"
}

test_scope_mismatch_says_only_reconsent_fixes_it if {
	errors.scope_mismatch("google", ["a", "b"], ["a", "b", "c"]) == {
		"code": "SCOPE_MISMATCH", "connector": "google", "fix": "",
		"missing_scopes": ["a", "b"], "required_scopes": ["a", "b", "c"],
		"message": "the forwarded google consent lacks a b; a refresh can never widen scope, so nothing was written. Re-consent in the host application with all of: a b c",
	}
}

test_interactive_required if {
	errors.interactive_required("google", ["openid"]) == {
		"code": "INTERACTIVE_AUTH_REQUIRED", "connector": "google",
		"fix": "grantwire connect google --scopes openid --no-browser",
		"message": "authorizing google needs a browser and this session has none; fix: grantwire connect google --scopes openid --no-browser",
	}
}

test_consent_denied if {
	errors.consent_denied("google", "access_denied") == {
		"code": "CONSENT_DENIED", "connector": "google", "oauth_error": "access_denied", "fix": "",
		"message": "the google authorization was refused (access_denied)",
	}
}

test_insecure_transport if {
	errors.insecure_transport("credentials in URLs are refused") == {
		"code": "INSECURE_TRANSPORT", "reason": "credentials in URLs are refused", "fix": "",
		"message": "refused URL: credentials in URLs are refused",
	}
}

test_provider_error if {
	errors.provider_error("google", 500, "server_error") == {
		"code": "PROVIDER_ERROR", "connector": "google", "http_status": 500, "oauth_error": "server_error", "fix": "",
		"message": "the google token endpoint failed (status 500 server_error)",
	}
}

test_internal if {
	errors.internal("grant") == {"code": "INTERNAL", "fix": "", "message": "internal: no decision for grant (malformed facts?)"}
}

test_every_constructor_uses_a_code_of_the_table if {
	every e in [
		errors.usage("x"), errors.unknown_connector("c"), errors.unknown_agents(["a"]),
		errors.configuration("m", "", {}), errors.agent_not_granted("c", "a", ["s"], []),
		errors.not_connected("c", []), errors.not_connected_mcp("c", []),
		errors.connection_missing_scopes("c", "a", ["s"], []), errors.reauth_required("c", "x", []),
		errors.tenant_mismatch("c", "t1", "t2", []), errors.connection_revoked("c", []),
		errors.busy("c"), errors.busy_conflict(17), errors.scope_mismatch("c", ["s"], ["s"]),
		errors.provider_error("c", 500, "e"), errors.interactive_required("c", []),
		errors.consent_denied("c", "e"), errors.insecure_transport("r"), errors.internal("op"),
	] {
		errors.table[e.code]
		is_string(e.message)
		is_string(e.fix)
	}
}

test_agent_not_granted_without_missing_scopes if {
	errors.agent_not_granted("google", "builtin:chat", [], []) == {
		"code": "AGENT_NOT_GRANTED", "connector": "google", "agent": "builtin:chat",
		"missing_scopes": [], "full_scopes": [],
		"fix": "grantwire grants grant google builtin:chat",
		"message": "agent builtin:chat holds no grant for google; fix: grantwire grants grant google builtin:chat",
	}
}

test_numbers_beyond_32_bits_are_written_without_format_int if {
	errors.busy_conflict(4294967296).message == "gave up after 4294967296 attempts: other writers kept changing the same entries; retry shortly"
	errors.provider_error("google", 2147483648, "x").message == "the google token endpoint failed (status 2147483648 x)"
}
