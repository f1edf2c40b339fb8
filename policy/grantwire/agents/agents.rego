# METADATA
# title: The agent registry
# description: |
#   The agents a user runs and what each declares it needs: the built-in agents (data
#   `agents.builtin`, shipped with the catalog) merged with the home's agents.json, whose
#   entries replace built-ins of the same id. One-click activation grants an agent its
#   declared scopes (or ["use"] for an agent that consumes MCP servers), connect
#   --grant-agent grants them, and a forwarded connection must cover the union of what its
#   agents declare.
#
#   agents.json is `{"version": 1, "agents": [{id, name?, description?, source?,
#   required_connectors?: [{connector, scopes, reason?}], consumes_mcp_servers?}]}`. Unknown
#   fields of an agent are refused (a typo must not silently drop a declaration). A custom
#   agent is `custom:<first 16 hex of sha256(source)>:<name>`; an entry may give
#   "custom:<name>" with a "source" file (relative to the home, or "~/"), which is hashed
#   each time the registry is read, so an agent whose code changes gets a new id and
#   inherits nothing. A full custom id whose source no longer matches is left out and
#   reported as a problem.
package grantwire.agents

import data.grantwire.errors
import data.grantwire.facts
import data.grantwire.scopes
import data.grantwire.step
import data.grantwire.store

# METADATA
# title: maximum source size
# description: The largest agent source file that is hashed (bytes).
max_source_bytes := 16777216

_builtins := b if {
	b := data.agents.builtin
	is_array(b)
} else := []

_fields := {"id", "name", "description", "source", "required_connectors", "consumes_mcp_servers"}

# METADATA
# title: registry needs
# description: |
#   The facts the registry is read from under key k: agents.json, then the digest of every
#   custom agent's source (two questions at most).
needs(f, k) := [facts.ledger(k, store.agents_file, [])] if {
	not facts.has(f, k)
} else := [facts.digest(_src_key(k, i), _source_path(f[k], e.source), max_source_bytes) |
	some i, e in _entries(f[k])
	is_string(e.source)
	not facts.has(f, _src_key(k, i))
]

_src_key(k, i) := facts.key([k, "src", format_int(i, 10)])

_entries(fact) := fact.value.agents if {
	fact.exists == true
	is_array(fact.value.agents)
} else := []

# A source path: "~/..." and absolute paths as written, others relative to the home.
_source_path(fact, p) := p if {
	startswith(p, "~/")
} else := p if {
	startswith(p, "/")
} else := concat("", [trim_suffix(fact.file, store.agents_file), p])

# METADATA
# title: registry read
# description: Every fact the registry needs under key k is present.
read(f, k) if count(needs(f, k)) == 0

# METADATA
# title: registry unusable
# description: |
#   Why agents.json cannot be used: CORRUPT_LEDGER naming the file and the problem, with the
#   command that moves it aside (only the built-in agents remain); undefined when usable.
unusable(f, k) := errors.corrupt_ledger("agents", f[k].file, p) if {
	p := _unusable_problem(f, k)
}

_unusable_problem(f, k) := p if {
	p := _problem(f[k])
} else := first if {
	# The first pair (by the array's order) when several entries collide: one value.
	first := [concat("", ["agents[", format_int(i, 10), "] and agents[", format_int(j, 10), "] both declare ", id]) |
		some i, ei in _entries(f[k])
		some j, ej in _entries(f[k])
		i < j
		id := _registered_id(f, k, i, ei)
		id == _registered_id(f, k, j, ej)
	][0]
}

_problem(fact) := fact.corrupt if {
	is_string(fact.corrupt)
} else := "it must be a JSON object" if {
	fact.exists == true
	not is_object(fact.value)
} else := concat("", ["version ", json.marshal(fact.value.version), " is not supported (this grantwire reads version 1)"]) if {
	fact.exists == true
	fact.value.version != 1
} else := "\"agents\" must be a list" if {
	fact.exists == true
	not is_array(object.get(fact.value, "agents", []))
} else := first if {
	# The first entry with a problem (a rule with one value, however many entries have one).
	first := [concat("", ["agents[", format_int(i, 10), "]: ", p]) |
		some i, e in _entries(fact)
		p := _entry_problem(e)
	][0]
} else := first if {
	first := [concat("", ["agents[", format_int(i, 10), "] and agents[", format_int(j, 10), "] both declare ", _id_of(fact, i)]) |
		some i, j
		_ = _entries(fact)[i]
		_ = _entries(fact)[j]
		i < j
		_id_of(fact, i) == _id_of(fact, j)
		not _source_problem_at(fact, i)
	][0]
}

_entry_problem(e) := "an agent must be an object" if {
	not is_object(e)
} else := concat("", ["unknown field ", concat(", ", sort([k | some k, _ in e; not k in _fields]))]) if {
	some k, _ in e
	not k in _fields
} else := "\"id\" is required" if {
	not _has(e, "id")
} else := concat("", ["\"source\" is for custom agents; write the id as \"custom:<name>\""]) if {
	is_string(e.source)
	not startswith(e.id, "custom:")
} else := concat("", [scopes.quote(e.id), " is not a valid agent id (", _id_grammar, ")"]) if {
	not _has(e, "source")
	not scopes.valid_agent_id(e.id)
} else := concat("", [scopes.quote(e.id), ": custom agents with a source are custom:<name> or custom:<16 hex>:<name>"]) if {
	is_string(e.source)
	not scopes.valid_agent_id(_custom_candidate(e, "0000000000000000"))
} else := p if {
	p := _requirements_problem(object.get(e, "required_connectors", []))
} else := "\"consumes_mcp_servers\" must be true or false" if {
	not is_boolean(object.get(e, "consumes_mcp_servers", false))
}

# The member is a string (a positive rule: a negated call on an undefined argument is
# false in Rego, not true).
_has(obj, k) if is_string(obj[k])

_id_grammar := "builtin:<name>, installed:<name>, native:<name> or custom:<16 hex>:<name>; a name is 1 to 128 of letters, digits and _ . @ + -"

# Each branch names the first requirement with that problem (one value per branch).
_requirements_problem(rs) := "\"required_connectors\" must be a list" if {
	not is_array(rs)
} else := first if {
	first := [concat("", ["required_connectors[", format_int(j, 10), "]: \"connector\" is required"]) |
		some j, r in rs
		not _has(r, "connector")
	][0]
} else := first if {
	first := [concat("", ["required_connectors: ", r.connector, " appears twice"]) |
		some j, r in rs
		some l, o in rs
		j < l
		r.connector == o.connector
	][0]
} else := first if {
	first := [concat("", ["required_connectors[", format_int(j, 10), "] (", r.connector, "): declare at least one scope (\"use\" for an MCP server)"]) |
		some j, r in rs
		not _nonempty(object.get(r, "scopes", null))
	][0]
} else := first if {
	first := [concat("", ["required_connectors[", format_int(j, 10), "] (", r.connector, "): not a list of valid, distinct scopes"]) |
		some j, r in rs
		not _scope_list(r.scopes)
	][0]
}

_nonempty(xs) if {
	is_array(xs)
	count(xs) > 0
}

_scope_list(xs) if {
	scopes.valid_scopes(xs)
	count(scopes.set(xs)) == count(xs)
}

# The id a custom entry with a source gets for a digest: the name of "custom:<name>" or of
# "custom:<16 hex>:<name>", behind the source's digest.
_custom_candidate(e, hex) := concat("", ["custom:", hex, ":", _custom_name(e.id)])

_custom_name(id) := substring(id, 24, -1) if {
	count(id) > 24
	substring(id, 23, 1) == ":"
	scopes.valid_agent_id(id)
} else := substring(id, 7, -1)

_digest(f, k, i) := substring(f[_src_key(k, i)].sha256, 0, 16) if f[_src_key(k, i)].found == true

_source_problem_at(fact, i) if {
	e := _entries(fact)[i]
	is_string(e.source)
}

# The id an entry registers under (for duplicate detection before digests are known).
_id_of(fact, i) := _entries(fact)[i].id

# METADATA
# title: registry
# description: |
#   Every registered agent by id ({id, name, description, source?, required_connectors,
#   consumes_mcp_servers, origin: "builtin"|"file"}), once read and usable.
registry(f, k) := object.union(
	{a.id: object.union(_normal(a), {"origin": "builtin"}) | some a in _builtins},
	{id: object.union(_normal(e), {"id": id, "origin": "file"}) |
		some id in _file_ids(f, k)
		i := min([j | some j, x in _entries(f[k]); _registered_id(f, k, j, x) == id])
		e := _entries(f[k])[i]
	},
)

_file_ids(f, k) := {id | some i, e in _entries(f[k]); id := _registered_id(f, k, i, e)}

_registered_id(_, _, _, e) := e.id if not _has(e, "source")

_registered_id(f, k, i, e) := id if {
	is_string(e.source)
	id := _custom_candidate(e, _digest(f, k, i))
	_matches(e.id, id)
}

# A full custom id must still be the source's; "custom:<name>" takes whatever it hashes to.
_matches(written, id) if written == id

_matches(written, _) if {
	not _full_custom(written)
}

_full_custom(id) if {
	count(id) > 24
	substring(id, 23, 1) == ":"
	scopes.valid_agent_id(id)
}

_normal(a) := {
	"id": a.id,
	"name": object.get(a, "name", ""),
	"description": object.get(a, "description", ""),
	"required_connectors": object.get(a, "required_connectors", []),
	"consumes_mcp_servers": object.get(a, "consumes_mcp_servers", false),
}

# METADATA
# title: problems
# description: |
#   Custom agents of agents.json that are not registered, and why; and declarations of a
#   connector the catalog does not have, or of scopes it does not offer.
problems(f, k) := array.concat(
	[{"agent": e.id, "message": _why(f, k, i, e)} |
		some i, e in _entries(f[k])
		is_string(e.source)
		not _registered_id(f, k, i, e)
	],
	[{"agent": id, "message": m} |
		some id, a in registry(f, k)
		some r in a.required_connectors
		m := _declaration_problem(r)
	],
)

_declaration_problem(r) := concat("", ["declares connector ", json.marshal(r.connector), ", which the catalog does not have"]) if {
	not data.grantwire.catalog.known(r.connector)
} else := concat("", ["declares scopes ", concat(" ", extra), " on ", r.connector, " that the catalog does not offer"]) if {
	offered := object.get(data.grantwire.catalog.connectors[r.connector], "available_scopes", [])
	count(offered) > 0
	extra := [s | some s in r.scopes; not s in offered]
	count(extra) > 0
}

_why(f, k, i, e) := concat("", ["its source ", _source_path(f[k], e.source), " cannot be read: ", f[_src_key(k, i)].reason]) if {
	not f[_src_key(k, i)].found == true
} else := concat("", [
	"its source changed: the agent is now ", _custom_candidate(e, _digest(f, k, i)),
	" and inherits nothing from ", e.id, "; update the id to grant it again",
])

# METADATA
# title: declared scopes
# description: The scopes agent a declares for connector c (undefined when it declares none).
declared(agent, c) := r.scopes if {
	some r in agent.required_connectors
	r.connector == c
}

# METADATA
# title: custom id
# description: The custom agent id of a source with the given digest and name.
custom_id(sha256, name) := concat("", ["custom:", substring(sha256, 0, 16), ":", name])

_f := object.get(input, "facts", {})

# METADATA
# title: list_agents decision
# description: |
#   Every registered agent (built-in and from agents.json), sorted by id, and the custom
#   agents of agents.json that are not registered, with why.
# entrypoint: true
list := step.need(m) if {
	m := needs(_f, "agents")
	count(m) > 0
} else := step.fail(unusable(_f, "agents"), []) if {
	unusable(_f, "agents")
} else := step.done(
	{
		"agents": [a | some id in sort(object.keys(registry(_f, "agents"))); a := registry(_f, "agents")[id]],
		"problems": problems(_f, "agents"),
	},
	[],
)

_source := input.args.source

_source_arg if is_string(_source)

_name := input.args.name if {
	is_string(input.args.name)
	input.args.name != ""
} else := n if {
	base := _last(split(_source, "/"))
	parts := split(base, ".")
	n := concat(".", array.slice(parts, 0, max([1, count(parts) - 1])))
}

_last(xs) := xs[count(xs) - 1]

# METADATA
# title: agent_id decision
# description: |
#   The custom agent id of a source file: custom:<first 16 hex of its SHA-256>:<name>, the
#   name given or else the file's base name without its extension.
# entrypoint: true
agent_id := step.fail(errors.usage("agent_id needs source (a file path) and an optional name"), []) if {
	not _source_arg
} else := step.need([facts.digest("source", _source, max_source_bytes)]) if {
	not facts.has(_f, "source")
} else := step.fail(
	errors.usage(concat("", ["the agent source cannot be read: ", _f.source.reason])),
	[],
) if {
	not _f.source.found == true
} else := step.fail(
	errors.usage(concat("", ["agent name ", scopes.quote(_name), " must be 1-128 of letters, digits and _ . @ + - (starting with a letter or digit)"])),
	[],
) if {
	not scopes.valid_agent_id(custom_id(_f.source.sha256, _name))
} else := step.done({"id": custom_id(_f.source.sha256, _name), "source": _source}, [])
