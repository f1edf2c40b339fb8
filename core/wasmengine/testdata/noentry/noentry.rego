# METADATA
# title: noentry
# description: A valid OPA Wasm module without grantwire's entrypoints.
package other

# METADATA
# title: allow
# entrypoint: true
allow := true
