# METADATA
# title: abort
# description: |
#   A policy that aborts (two complete definitions conflict) when input.a and input.b hold.
package grantwire

# METADATA
# title: decide
# entrypoint: true
decide := {"status": "done", "result": "a", "effects": []} if input.a

decide := {"status": "done", "result": "b", "effects": []} if input.b

# METADATA
# title: manifest
# entrypoint: true
manifest := {"ops": {"x": {"prefetch": []}}, "errors": {}}
