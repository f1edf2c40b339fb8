# METADATA
# title: floor
# description: |
#   A trivial policy with grantwire's entrypoints whose decision is a constant, equal to the
#   gate's allow decision: the benchmarks measure what OPA's Wasm runtime costs for the
#   same input and output with no policy logic at all.
package grantwire

# METADATA
# title: decide
# entrypoint: true
decide := {
	"effects": [],
	"result": {
		"access_token": {"$ref": "token#access_token"},
		"expires_at": 1790003600000,
		"provider": "c000",
		"scopes": ["email", "openid", "s1", "s2", "s3", "s4", "s5", "s6"],
	},
	"status": "done",
}

# METADATA
# title: manifest
# entrypoint: true
manifest := {"ops": {"get_access_token": {"prefetch": []}}, "errors": {}}
