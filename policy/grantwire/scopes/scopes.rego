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

# A visible word: 1 to limit ASCII characters without spaces. The byte length comes from
# the base64 encoding (four characters per three bytes, less the padding) and equals the
# character count only for ASCII; clean(args) has already refused control characters,
# quotes and backslashes. No regular expression: OPA's Wasm runtime compiles one on every
# evaluation.
_word(s, limit) if {
	is_string(s)
	n := count(s)
	n > 0
	n <= limit
	not contains(s, " ")
	b := base64.encode(s)
	((count(b) / 4) * 3) - _padding(b) == n
}

_padding(b) := 2 if endswith(b, "==")

else := 1 if endswith(b, "=")

else := 0

_namespaces := ["builtin:", "installed:", "native:"]

_hex := {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"}

# METADATA
# title: valid connector id
# description: |
#   A connector id: 1 to 64 of lowercase ASCII letters, digits, "-", "_" and ".", starting
#   with a letter or a digit (the catalog's ids; validate_catalog checks them).
valid_connector_id(c) if regex.match(`^[a-z0-9][a-z0-9_.-]{0,63}$`, c)

# METADATA
# title: valid agent id
# description: |
#   Agent ids are namespaced and stored verbatim: builtin:<name>, installed:<name>,
#   native:<name> or custom:<16 lowercase hex>:<name>, where a name is 1 to 128 ASCII
#   letters, digits and _ . @ + - starting with a letter or a digit, so that no two ids
#   look alike on a terminal (no spaces, controls, bidi or zero-width characters).
valid_agent_id(a) if {
	some ns in _namespaces
	startswith(a, ns)
	_name(substring(a, count(ns), -1))
}

valid_agent_id(a) if {
	startswith(a, "custom:")
	substring(a, 23, 1) == ":"
	every i in numbers.range(7, 22) {
		substring(a, i, 1) in _hex
	}
	_name(substring(a, 24, -1))
}

# METADATA
# title: stored agent id
# description: |
#   An agent id as a ledger may hold it: GAIA stores ids verbatim and validates nothing, and
#   its SDK documentation uses un-namespaced ids such as `my-agent`. Any string of 1 to 256
#   characters (clean: no quotes, backslashes or control characters, checked for every
#   argument) names such an entry for the operations that remove access (revoke,
#   deactivate), so that whatever a listing shows can be taken away. New grants and
#   activations, tokens and credentials still need a valid (namespaced) agent id.
stored_agent_id(a) if {
	is_string(a)
	count(a) > 0
	count(a) <= 256
}

# A name: 1 to 128 ASCII letters, digits and _ . @ + -, starting with a letter or a digit.
_name(n) if {
	_word(n, 128)
	clean(n)
	not substring(n, 0, 1) in {"_", ".", "@", "+", "-"}
	not _forbidden(n)
}

_name_forbidden := [
	"!", "#", "$", "%", "&", "'", "(", ")", "*", ",", "/", ":", ";", "<", "=", ">",
	"?", "[", "]", "^", "`", "{", "|", "}", "~",
]

_forbidden(n) if {
	some ch in _name_forbidden
	contains(n, ch)
}

# METADATA
# title: valid scope list
# description: An array of scopes, each valid.
valid_scopes(xs) if {
	is_array(xs)
	every s in xs {
		valid_scope(s)
	}
}

# METADATA
# title: valid scope
# description: One scope, 1 to 512 visible ASCII characters without spaces or commas.
valid_scope(s) if {
	_word(s, 512)
	clean(s)
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
# description: |
#   The command that grants an agent exactly the given scopes (an empty list is the grant
#   of no scope, `--scopes ''`, which the ledger records but which hands out no token).
grant_cmd(c, a, list) := concat("", ["grantwire grants grant ", c, " ", quote(a), " --scopes ", quote(concat(",", list))])

# METADATA
# title: connect command
# description: The command that connects a provider with the given scopes.
connect_cmd(c, list) := concat("", ["grantwire connect ", c, flag(list)])
