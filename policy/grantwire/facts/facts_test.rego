package grantwire.facts_test

import data.grantwire.facts

_f := {"a": 1, "b": false, "c": null, "lock": "held", "busy": "busy", "odd": {"x": 1}}

test_key if {
	facts.key(["conn", "google"]) == "conn|google"
	facts.key(["grant", "builtin:chat"]) == "grant|builtin:chat"
	facts.key(["x"]) == "x"
}

test_has_and_missing if {
	facts.has(_f, "a")
	facts.has(_f, "b")
	facts.has(_f, "c")
	not facts.has(_f, "d")
	facts.missing(_f, [{"key": "d"}, {"key": "a"}, {"key": "e"}, {"key": "b"}]) == [{"key": "d"}, {"key": "e"}]
	facts.missing(_f, []) == []
}

test_found_and_value if {
	facts.found({"k": {"found": true}}, "k")
	not facts.found({"k": {"found": false}}, "k")
	not facts.found({"k": {"found": "true"}}, "k")
	not facts.found({}, "k")
	facts.value({"k": {"exists": true, "value": [1]}}, "k", []) == [1]
	facts.value({"k": {"exists": true, "value": null}}, "k", []) == null
	facts.value({"k": {"exists": false}}, "k", []) == []
	facts.value({"k": {"found": false}}, "k", {}) == {}
	facts.value({}, "k", "d") == "d"
}

test_secret_references if {
	facts.ref("conn", "refresh_token") == {"$ref": "conn#refresh_token"}
	facts.arg({"arg": {"client_id": {"$ref": "arg#client_id"}}}, "client_id") == {"$ref": "arg#client_id"}
	not facts.arg({"arg": {}}, "client_id")
	not facts.arg({}, "client_id")
}

test_need_builders if {
	facts.now("now") == {"key": "now", "kind": "clock.now"}
	facts.entropy("state", 32) == {"key": "state", "kind": "entropy", "bytes": 32}
	facts.env("e", "HOME", false) == {"key": "e", "kind": "env.get", "name": "HOME", "secret": false}
	facts.keyring_info("k") == {"key": "k", "kind": "keyring.info"}
	facts.keyring("k", "u", ["f"], false) == {"key": "k", "kind": "keyring.get", "user": "u", "fields": ["f"], "fresh": false}
	facts.keyring_secret("k", "u") == {"key": "k", "kind": "keyring.get", "user": "u", "fresh": true}
	facts.ledger("k", "f.json", ["a"]) == {"key": "k", "kind": "ledger.read", "ledger": "f.json", "path": ["a"]}
	facts.digest("k", "~/a.py", 10) == {"key": "k", "kind": "file.digest", "path": "~/a.py", "max_bytes": 10}
	facts.lock("lock", "google", 500) == {"key": "lock", "kind": "lock.acquire", "name": "google", "wait_ms": 500}
	facts.after(facts.now("n"), "lock") == {"key": "n", "kind": "clock.now", "after": "lock"}
	facts.http("h", {"method": "GET", "url": "https://x"}) == {"key": "h", "kind": "http.request", "method": "GET", "url": "https://x"}
	facts.commit(facts.now("n")) == {"key": "n", "kind": "clock.now", "commit": true}
	facts.loopback_open("loopback", "google") == {"key": "loopback", "kind": "loopback.open", "connector": "google"}
	facts.loopback_wait("cb", {"$url": "u"}, {"$ref": "state#value"}, 1000, "google") == {
		"key": "cb", "kind": "loopback.wait", "url": {"$url": "u"}, "state": {"$ref": "state#value"},
		"timeout_ms": 1000, "connector": "google",
	}
}

test_locks if {
	facts.not_held(_f, "busy")
	facts.not_held(_f, "a")
	facts.not_held(_f, "odd")
	not facts.not_held(_f, "lock")
	not facts.not_held(_f, "missing")
}

test_host_errors if {
	he := {"code": "INSECURE_STORE", "detail": "no Secret Service", "fix": "apt-get install gnome-keyring"}
	facts.host_errors({"a": {"found": true}, "b": {"host_error": he}, "c": "held", "d": 5}) == [he]
	facts.host_errors(_f) == []
}
