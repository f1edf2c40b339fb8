# METADATA
# title: minimal
# description: |
#   A trivial policy whose decision is `true`: the cost of one evaluation with no output to
#   speak of.
package grantwire

# METADATA
# title: decide
# entrypoint: true
decide := true

# METADATA
# title: manifest
# entrypoint: true
manifest := {"ops": {"get_access_token": {"prefetch": []}}, "errors": {}}
