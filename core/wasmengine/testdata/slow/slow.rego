# METADATA
# title: slow
# description: |
#   A policy whose decision takes time quadratic in n, input.n or input.facts.n (about a
#   second at n = 3000 on wazero's compiler): the engine's cancellation tests interrupt it.
package grantwire

# METADATA
# title: decide
# entrypoint: true
decide := {"status": "done", "result": count(pairs), "effects": []} if {
	pairs := [1 |
		some i in numbers.range(1, n)
		some j in numbers.range(1, n)
		i != j
	]
}

n := object.get(input, "n", 0) + object.get(object.get(input, "facts", {}), "n", 0)

# METADATA
# title: manifest
# entrypoint: true
manifest := {"ops": {"x": {"prefetch": []}}, "errors": {}}
