# METADATA
# title: slow
# description: |
#   A policy whose decision takes time quadratic in input.n (about a second at n = 3000 on
#   wazero's compiler): the engine's cancellation tests interrupt it.
package grantwire

# METADATA
# title: decide
# entrypoint: true
decide := {"status": "done", "result": count(pairs), "effects": []} if {
	pairs := [1 |
		some i in numbers.range(1, input.n)
		some j in numbers.range(1, input.n)
		i != j
	]
}

# METADATA
# title: manifest
# entrypoint: true
manifest := {"ops": {"x": {"prefetch": []}}, "errors": {}}
