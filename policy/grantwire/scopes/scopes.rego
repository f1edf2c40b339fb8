# METADATA
# title: Scopes, ids and commands
# description: |
#   Scopes are exact, case-sensitive strings with set semantics: nothing is implied or
#   normalised. This package also validates identifiers and renders the copy-pasteable
#   commands that error messages carry.
package grantwire.scopes

# METADATA
# title: set
# description: The set of strings in an array (duplicates collapse).
set(xs) := {s | some s in xs}

# METADATA
# title: sorted
# description: A sorted, duplicate-free array of the strings in an array or set.
sorted(xs) := sort({s | some s in xs})

# METADATA
# title: missing
# description: The requested scopes that a held set lacks, sorted.
missing(requested, held) := sort(set(requested) - set(held))

# METADATA
# title: covers
# description: True when held contains every requested scope.
covers(held, requested) if {
	every s in requested {
		s in held
	}
}

# METADATA
# title: union
# description: Sorted union of two scope lists.
union(a, b) := sort(set(a) | set(b))

# Validation uses only cheap builtins. OPA's Wasm runtime compiles regular expressions again
# on every evaluation (milliseconds), and its trim() and strings.replace_n() are slow, so
# none of them is used on the hot path.

# The JSON escapes that mark a backslash, a double quote or a C0 control character inside
# a string. Both engines write these the same way (Go's encoder also escapes <, > and &,
# but as \u003c, \u003e and \u0026, which none of these patterns matches).
_escapes := [`\\`, `\"`, `\n`, `\r`, `\t`, `\b`, `\f`, `\u000`, `\u001`]

# METADATA
# title: clean
# description: |
#   True when no string anywhere in x (keys included) holds a backslash, a double quote, a
#   C0 control character or DEL. One JSON encoding, ten substring checks.
clean(x) if {
	m := json.marshal(x)
	not _escaped(m)
	not contains(m, "\u007f")
}

_escaped(m) if {
	some e in _escapes
	contains(m, e)
}

_word(s, limit) if {
	is_string(s)
	count(s) > 0
	count(s) <= limit
	not contains(s, " ")
}

# METADATA
# title: valid connector id
# description: |
#   A connector id is a string naming a catalog entry; catalog ids are 1 to 64 lowercase
#   ASCII letters, digits, "-", "_" and "." (checked when the catalog is loaded).
valid_connector_id(c) if is_string(c)

# METADATA
# title: valid agent id
# description: |
#   Agent ids are stored verbatim: 1 to 256 characters without spaces (builtin:<id>,
#   installed:<id>, native:<id>, custom:<16 hex>:<id>). decide also requires clean(args).
valid_agent_id(a) if _word(a, 256)

# METADATA
# title: valid scope list
# description: An array of scopes, each 1 to 512 characters without spaces or commas.
valid_scopes(xs) if {
	is_array(xs)
	every s in xs {
		valid_scope(s)
	}
}

# METADATA
# title: valid scope
# description: One scope, 1 to 512 characters without spaces or commas.
valid_scope(s) if {
	_word(s, 512)
	not contains(s, ",")
}

# Characters a POSIX shell treats specially.
_shell_special := [
	" ", "'", "\"", `\`, "$", "`", "!", "&", "|", ";", "<", ">", "(", ")",
	"*", "?", "[", "]", "{", "}", "~", "#", "\t", "\n",
]

# METADATA
# title: quote
# description: Quote a word for a POSIX shell when it holds a character the shell treats specially.
quote(s) := s if {
	count(s) > 0
	not _special(s)
} else := concat("", ["'", replace(s, "'", `'\''`), "'"])

_special(s) if {
	some ch in _shell_special
	contains(s, ch)
}

# METADATA
# title: scope flag
# description: The "--scopes a,b" flag for a command line (nothing for an empty list).
flag(list) := concat("", [" --scopes ", quote(concat(",", list))]) if {
	count(list) > 0
} else := ""

# METADATA
# title: grant command
# description: The command that grants an agent exactly the given scopes.
grant_cmd(c, a, list) := concat("", ["grantwire grants grant ", c, " ", quote(a), flag(list)])

# METADATA
# title: connect command
# description: The command that connects a provider with the given scopes.
connect_cmd(c, list) := concat("", ["grantwire connect ", c, flag(list)])
