// Package node holds grantwire's foreign shell: JavaScript on Node 20 that loads the same
// policy/policy.wasm with OPA's official loader (@open-policy-agent/opa-wasm) and implements
// the host ABI grantwire.host.v2 (hostabi/README.md) from its language-neutral description,
// validating what it sends and receives against hostabi/schema: the driver loop
// (driver.mjs), the engine (engine.mjs), the host (host.mjs) and stored JSON (json.mjs), an
// in-memory test world twin of internal/testworld/memhost (memworld.mjs, whose
// authorization server is the Go test worlds' one, reached over HTTP) and the conformance
// corpus runner (run.mjs). bench.mjs measures the gate's hot path on Node.
//
// The Go code here is only its test (node_test.go): it serves the authorization server's
// control API (internal/testworld/authserver), runs the corpus on Node, reports each
// scenario as a subtest, checks that Node read the YAML corpus as Go does, replays the
// queries the Node driver sent through both Go engines, demanding byte-identical decisions,
// and demands that Node asked the same questions as the Go host in every scenario.
// The package has no exported API; nothing imports it, and it must not be imported by any
// runtime package.
package node
