# METADATA
# title: hostbuiltin
# description: |
#   A policy with grantwire entrypoints that needs a builtin the host provides (time.now_ns).
package grantwire

# METADATA
# title: decide
# entrypoint: true
decide := {"status": "done", "result": time.now_ns(), "effects": []}

# METADATA
# title: manifest
# entrypoint: true
manifest := {"ops": {"x": {"prefetch": []}}, "errors": {}}
