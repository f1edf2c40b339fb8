package grantwire.scopes_test

import data.grantwire.scopes

test_set_and_sorted if {
	scopes.set(["b", "a", "b"]) == {"a", "b"}
	scopes.sorted(["b", "a", "b"]) == ["a", "b"]
	scopes.sorted({"b", "a"}) == ["a", "b"]
	scopes.sorted([]) == []
}

test_missing_is_sorted_set_difference if {
	scopes.missing(["c", "a", "b", "a"], ["b"]) == ["a", "c"]
	scopes.missing(["a"], ["a", "b"]) == []
	scopes.missing([], []) == []
}

test_covers_is_exact_and_case_sensitive if {
	scopes.covers(["a", "b"], ["b", "a", "a"])
	scopes.covers(["a"], [])
	scopes.covers([], [])
	not scopes.covers(["A"], ["a"])
	not scopes.covers(["gmail.modify"], ["gmail"])
	not scopes.covers([], ["a"])
}

test_union if {
	scopes.union(["b", "a"], ["c", "a"]) == ["a", "b", "c"]
	scopes.union([], []) == []
}

test_clean if {
	scopes.clean({"agent": "builtin:chat", "scopes": ["https://x/y?a=b&c=<d>"], "n": 1, "t": true, "z": null})
	scopes.clean({"agent": "native:é-日本-😀"})
	scopes.clean([])
	every v in [
		`a"b`, `a\b`, "a\nb", "a\rb", "a\tb", "a\bb", "a\fb",
		"a\u0000b", "a\u0001b", "a\u000bb", "a\u001bb", "a\u001fb", "a\u007fb",
	] {
		not scopes.clean({"agent": v})
		not scopes.clean({v: 1})
		not scopes.clean([[v]])
	}
}

test_valid_connector_id if {
	scopes.valid_connector_id("google")
	not scopes.valid_connector_id(7)
}

test_valid_agent_id if {
	scopes.valid_agent_id("builtin:chat")
	scopes.valid_agent_id("custom:0123456789abcdef:x")
	scopes.valid_agent_id(concat("", [s | some _ in numbers.range(1, 256); s := "a"]))
	not scopes.valid_agent_id(concat("", [s | some _ in numbers.range(1, 257); s := "a"]))
	not scopes.valid_agent_id("")
	not scopes.valid_agent_id("a b")
	not scopes.valid_agent_id(["a"])
}

test_valid_scopes if {
	scopes.valid_scopes([])
	scopes.valid_scopes(["openid", "https://www.googleapis.com/auth/gmail.readonly"])
	scopes.valid_scope(concat("", [s | some _ in numbers.range(1, 512); s := "s"]))
	not scopes.valid_scope(concat("", [s | some _ in numbers.range(1, 513); s := "s"]))
	not scopes.valid_scopes(["a,b"])
	not scopes.valid_scopes(["a b"])
	not scopes.valid_scopes([""])
	not scopes.valid_scopes(["a", 1])
	not scopes.valid_scopes("a")
}

test_quote if {
	scopes.quote("builtin:chat") == "builtin:chat"
	scopes.quote("https://x/y.z") == "https://x/y.z"
	scopes.quote("") == "''"
	scopes.quote("a b") == "'a b'"
	scopes.quote("a$b") == "'a$b'"
	scopes.quote("it's") == `'it'\''s'`
	every ch in [" ", "'", "\"", `\`, "$", "`", "!", "&", "|", ";", "<", ">", "(", ")", "*", "?", "[", "]", "{", "}", "~", "#", "\t", "\n"] {
		scopes.quote(concat("", ["a", ch])) != concat("", ["a", ch])
	}
}

test_flag if {
	scopes.flag(["a", "b"]) == " --scopes a,b"
	scopes.flag(["a b"]) == " --scopes 'a b'"
	scopes.flag([]) == ""
}

test_commands if {
	scopes.grant_cmd("google", "builtin:chat", ["a", "b"]) == "grantwire grants grant google builtin:chat --scopes a,b"
	scopes.grant_cmd("google", "x;rm -rf", []) == "grantwire grants grant google 'x;rm -rf'"
	scopes.connect_cmd("google", ["openid"]) == "grantwire connect google --scopes openid"
	scopes.connect_cmd("google", []) == "grantwire connect google"
}
