package grantwire.scopes_test

import data.grantwire.scopes

# ---------------------------------------------------------------------------------------
# sets

test_set_sorted_missing_union_covers if {
	scopes.set(["b", "a", "b"]) == {"a", "b"}
	scopes.sorted(["b", "a", "b"]) == ["a", "b"]
	scopes.sorted({"z", "y"}) == ["y", "z"]
	scopes.missing(["c", "a", "b", "a"], ["b"]) == ["a", "c"]
	scopes.missing([], ["b"]) == []
	scopes.union(["b", "a"], ["c", "a"]) == ["a", "b", "c"]
	scopes.covers(["a", "b"], ["b"])
	scopes.covers(["a"], [])
	not scopes.covers(["a"], ["A"])
	not scopes.covers([], ["a"])
}

# ---------------------------------------------------------------------------------------
# agent ids

test_agent_ids_of_every_namespace if {
	every a in [
		"builtin:chat", "installed:my-agent", "native:Agent_1.0", "builtin:a",
		"builtin:user@example.com", "installed:x+y", "custom:0123456789abcdef:mine",
		"custom:ffffffffffffffff:9lives",
		concat("", ["builtin:", concat("", [c | some _ in numbers.range(1, 128); c := "a"])]),
	] {
		scopes.valid_agent_id(a)
	}
}

test_agent_ids_need_a_namespace_and_a_name if {
	every a in [
		"", "chat", ":chat", "builtin", "builtin:", "Builtin:chat", "BUILTIN:chat", "user:chat",
		"custom:chat", "custom::chat", "custom:0123456789abcdef:", "custom:0123456789abcdef",
		"custom:0123456789ABCDEF:chat", "custom:0123456789abcdeg:chat", "custom:0123456789abcde:chat",
		"custom:0123456789abcdef0:chat", "custom:0123456789abcdef-chat",
	] {
		not scopes.valid_agent_id(a)
	}
}

test_agent_names_start_with_a_letter_or_digit if {
	every a in ["builtin:_x", "builtin:.x", "builtin:@x", "builtin:+x", "builtin:-x", "custom:0123456789abcdef:-x"] {
		not scopes.valid_agent_id(a)
	}
	scopes.valid_agent_id("builtin:x_.@+-")
}

test_agent_names_are_at_most_128_characters if {
	long := concat("", [c | some _ in numbers.range(1, 129); c := "a"])
	not scopes.valid_agent_id(concat("", ["builtin:", long]))
	not scopes.valid_agent_id(concat("", ["custom:0123456789abcdef:", long]))
	scopes.valid_agent_id(concat("", ["custom:0123456789abcdef:", substring(long, 0, 128)]))
}

test_agent_names_refuse_punctuation_and_spaces if {
	every ch in [
		"!", "#", "$", "%", "&", "'", "(", ")", "*", ",", "/", ":", ";", "<", "=", ">",
		"?", "[", "]", "^", "`", "{", "|", "}", "~", " ",
	] {
		not scopes.valid_agent_id(concat("", ["builtin:a", ch, "b"]))
	}
}

# Look-alikes: non-ASCII letters, zero-width and bidi controls, C1 controls, no-break and
# other Unicode spaces.
test_agent_names_refuse_unicode if {
	every a in [
		"builtin:chät", "builtin:сhat", "builtin:chat\u200b", "builtin:ch\u200dat",
		"builtin:\u202echat", "builtin:chat\u2066", "builtin:chat\u0085", "builtin:chat\u009b",
		"builtin:chat\u00a0", "builtin:chat\u3000", "builtin:chat\ufeff", "builtin:😀",
		"custom:0123456789abcdef:chät", "custom:０123456789abcdef:chat",
	] {
		not scopes.valid_agent_id(a)
	}
}

# The grammar is "letters, digits and _ . @ + -": C0 controls, DEL, quotes and backslashes
# are not among them. decide refuses them in arguments (clean), but agents.json entries are
# judged by valid_agent_id alone (policy bug: see the report).
test_agent_names_refuse_controls_quotes_and_backslashes if {
	every a in ["builtin:a\tb", "builtin:a\nb", "builtin:a\u0000b", "builtin:a\u007fb", "builtin:a\"b", "builtin:a\\b"] {
		not scopes.valid_agent_id(a)
	}
}

# ---------------------------------------------------------------------------------------
# scopes and connector ids

test_valid_scopes if {
	every s in [
		"openid", "https://www.googleapis.com/auth/gmail.readonly", "repo:read", "User.Read",
		"a", concat("", [c | some _ in numbers.range(1, 512); c := "s"]),
	] {
		scopes.valid_scope(s)
	}
	scopes.valid_scopes([])
	scopes.valid_scopes(["a", "b"])
}

test_invalid_scopes if {
	every s in [
		"", "a b", "a,b", " ", "gmäil", "a\u200bb", "a\u00a0b", 7, null,
		concat("", [c | some _ in numbers.range(1, 513); c := "s"]),
	] {
		not scopes.valid_scope(s)
	}
	not scopes.valid_scopes("a")
	not scopes.valid_scopes(["a", "b c"])
}

# "visible ASCII characters" (policy bug: see the report).
test_scopes_refuse_controls_quotes_and_backslashes if {
	every s in ["a\tb", "a\u007fb", "a\"b", "a\\b"] {
		not scopes.valid_scope(s)
	}
}

test_connector_ids if {
	every c in ["google", "mcp-github", "a", "0x", "a.b_c-d", concat("", [c | some _ in numbers.range(1, 64); c := "a"])] {
		scopes.valid_connector_id(c)
	}
	every c in ["", "Google", "-x", "_x", ".x", "a b", "a/b", "a|b", concat("", [c | some _ in numbers.range(1, 65); c := "a"])] {
		not scopes.valid_connector_id(c)
	}
}

# ---------------------------------------------------------------------------------------
# clean

test_clean_refuses_quotes_backslashes_and_controls_anywhere if {
	scopes.clean({"a": ["b", 1, true, null], "c": {"d": "e f@g'h"}})
	scopes.clean("chät\u200b")
	every x in [
		"a\"b", "a\\b", "a\nb", "a\rb", "a\tb", "a\bb", "a\fb", "a\u0000b", "a\u001fb", "a\u007fb",
		{"k\"": "v"}, {"k": ["ok", {"deep": "x\u0001"}]},
	] {
		not scopes.clean(x)
	}
}

# ---------------------------------------------------------------------------------------
# quoting and commands

test_quote if {
	scopes.quote("builtin:chat") == "builtin:chat"
	scopes.quote("gmail,openid") == "gmail,openid"
	scopes.quote("") == "''"
	scopes.quote("a b") == "'a b'"
	scopes.quote("it's") == `'it'\''s'`
	scopes.quote("$HOME") == "'$HOME'"
	every s in [
		" ", "'", "\"", `\`, "$", "`", "!", "&", "|", ";", "<", ">", "(", ")",
		"*", "?", "[", "]", "{", "}", "~", "#", "\t", "\n",
	] {
		scopes.quote(concat("", ["a", s])) != concat("", ["a", s])
		startswith(scopes.quote(concat("", ["a", s])), "'")
	}
}

test_flag if {
	scopes.flag(["a", "b"]) == " --scopes a,b"
	scopes.flag([]) == ""
	scopes.flag(["a b"]) == " --scopes 'a b'"
}

test_commands if {
	scopes.grant_cmd("google", "builtin:chat", ["gmail", "openid"]) == "grantwire grants grant google builtin:chat --scopes gmail,openid"
	scopes.grant_cmd("mcp-github", "builtin:chat", []) == "grantwire grants grant mcp-github builtin:chat --scopes ''"
	scopes.connect_cmd("google", ["gmail"]) == "grantwire connect google --scopes gmail"
	scopes.connect_cmd("google", []) == "grantwire connect google"
}
