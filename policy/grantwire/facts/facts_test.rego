package grantwire.facts_test

import data.grantwire.facts

_f := {"grant": {"found": true, "value": ["gmail"]}, "active": {"found": false}, "lock": "held", "nil": null}

test_key if {
	facts.key(["conn", "google"]) == "conn|google"
	facts.key(["x"]) == "x"
}

test_has if {
	facts.has(_f, "grant")
	facts.has(_f, "nil")
	not facts.has(_f, "token")
}

test_missing_keeps_order if {
	needs := [facts.now("now"), facts.ledger("grant", "grants", ["google", "a"]), facts.token("token", "google")]
	facts.missing(_f, needs) == [facts.now("now"), facts.token("token", "google")]
	facts.missing(_f, []) == []
}

test_found if {
	facts.found(_f, "grant")
	not facts.found(_f, "active")
	not facts.found(_f, "nope")
	not facts.found(_f, "lock")
}

test_value if {
	facts.value(_f, "grant", []) == ["gmail"]
	facts.value(_f, "active", "d") == "d"
	facts.value(_f, "nope", {}) == {}
	facts.value({"x": {"found": true}}, "x", "d") == "d"
}

test_need_constructors if {
	facts.now("now") == {"key": "now", "kind": "clock.now"}
	facts.ledger("g", "grants", ["*", "a"]) == {"key": "g", "kind": "ledger.get", "ledger": "grants", "path": ["*", "a"]}
	facts.connection("conn", "google") == {"key": "conn", "kind": "connection.get", "provider": "google"}
	facts.client("client", "google", true) == {"key": "client", "kind": "client.get", "provider": "google", "fresh": true}
	facts.token("token", "google") == {"key": "token", "kind": "token.get", "provider": "google"}
	facts.lock("lock", "google", 500) == {"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 500}
	facts.refresh("refresh", "google", "sha256:r") == {"key": "refresh", "kind": "oauth.refresh", "provider": "google", "refresh": "sha256:r"}
	facts.authorize("authorize", "google", ["a"]) == {"key": "authorize", "kind": "oauth.authorize", "provider": "google", "scopes": ["a"]}
	facts.agent("agent", "builtin:chat") == {"key": "agent", "kind": "agent.get", "agent": "builtin:chat"}
	facts.mcp("mcp", "mcp-github") == {"key": "mcp", "kind": "mcp.get", "connector": "mcp-github"}
	facts.mcp_secrets("secrets", "mcp-github") == {"key": "secrets", "kind": "mcp.secrets", "connector": "mcp-github"}
}

test_after_marks_a_need_read_under_a_lock if {
	facts.after(facts.now("now@lock"), "lock") == {"key": "now@lock", "kind": "clock.now", "after": "lock"}
}

test_ref if {
	facts.ref("refresh", "access_token") == {"$ref": "refresh#access_token"}
}

test_not_held if {
	every v in ["busy", "timeout", false, null, {}] {
		facts.not_held({"lock": v}, "lock")
	}
	not facts.not_held({"lock": "held"}, "lock")
	not facts.not_held({}, "lock")
}

test_client_expect if {
	facts.client_expect({"found": true, "source": "keyring", "version": "k1"}) == {"version": "k1"}
	facts.client_expect({"found": true, "version": "k1"}) == {"version": "k1"}
	facts.client_expect({"found": true, "source": "env", "version": "env:aaaa0001"}) == {"found": false}
	facts.client_expect({"found": false}) == {"found": false}
	facts.client_expect({"found": true, "source": "keyring"}) == {"found": false}
}
