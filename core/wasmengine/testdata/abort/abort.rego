# METADATA
# title: abort
# description: |
#   A policy that aborts (two complete definitions conflict) when a and b hold, each in
#   input or in input.facts.
package grantwire

# METADATA
# title: decide
# entrypoint: true
decide := {"status": "done", "result": "a", "effects": []} if holds("a")

decide := {"status": "done", "result": "b", "effects": []} if holds("b")

holds(k) if input[k]

holds(k) if input.facts[k]

# METADATA
# title: manifest
# entrypoint: true
manifest := {"ops": {"x": {"prefetch": []}}, "errors": {}}
