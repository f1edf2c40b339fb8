# Rules whose plans use every statement of OPA's IR the planner emits: blocks, breaks,
# scans, negation, with (input, data, functions), dynamic calls, merged virtual and base
# documents, array and object unification, comprehensions, partial rules, else chains,
# defaults and the conflicts that are runtime errors. statements is the object of their
# values for the input; the test compares it with OPA's evaluator for many inputs.
package irtest

import rego.v1

# WithStmt on input, with a path and without one.
statements.with_input := x if {
	x := _double with input.n as 21
}

statements.with_input_whole := x if {
	x := _double with input as {"n": 4}
}

statements.with_input_nested := x if {
	x := _deep with input.p.q.r as input.n
}

_double := input.n * 2

_deep := [input.p.q.r, input.n]

# WithStmt on data.
statements.with_data := x if {
	x := data.cfg.v with data.cfg.v as input.n
}

# WithStmt replacing a function.
statements.with_func := x if {
	x := _twice(input.n) with _twice as _thrice
}

_twice(x) := x * 2

_thrice(x) := x * 3

# CallDynamicStmt: a rule chosen at run time.
statements.dynamic := data.irtest.dyn[input.k]

dyn.a := 1

dyn.b := input.n

dyn.c := [input.k, input.k]

# ObjectMergeStmt: a document that is part base data, part rules.
statements.merged := data.irtest.tree

tree.v.y := input.n

tree.r := 3

# LenStmt, MakeNumberIntStmt, AssignIntStmt: unification of arrays and objects.
statements.pair := [q, p] if {
	[p, q] := input.pair
}

statements.obj := [y, x] if {
	{"x": x, "y": y} := input.obj
}

# ScanStmt, NotStmt, comprehensions, every.
statements.evens := [x | some x in input.nums; x % 2 == 0]

statements.squares := {x: y | some x in input.nums; y := x * x}

statements.distinct := {x | some x in input.nums}

statements.all_pos if {
	every x in input.nums {
		x > 0
	}
}

statements.none_big if not _big

_big if {
	some x in input.nums
	x > 100
}

statements.keys := [k | some k, _ in input.obj]

statements.setmembers := [x | some x in {y | some y in input.nums}]

# Partial set and object rules; ObjectInsertOnceStmt.
statements.tags contains t if {
	some t in input.tags
}

statements.lengths[t] := count(t) if {
	some t in input.tags
}

# else chains, defaults, functions with several parameters.
statements.grade := _grade(input.n, 10)

_grade(n, m) := "high" if {
	n > m
} else := "equal" if {
	n == m
} else := "low"

default statements.flag := "default"

statements.flag := "set" if input.flag

# Set lookups (DotStmt on a set) and IsSetStmt.
statements.has_tag if _tagset[input.k]

_tagset := {t | some t in input.tags}

statements.is_set if {
	every x in _tagset {
		is_string(x)
	}
}

# Conflicts: runtime errors in every engine (asked for with input.conflict).
statements.conflict := x if {
	input.conflict == "complete"
	x := _complete
}

statements.conflict := x if {
	input.conflict == "object"
	x := _object
}

_complete := 1 if input.conflict

_complete := 2 if input.conflict

_object[k] := v if {
	some [k, v] in [["a", 1], ["a", 2]]
}

# MakeNullStmt.
statements.nothing := [null, input.k]
