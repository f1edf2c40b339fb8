// Package python holds grantwire's Python shell: the pip-installable package `grantwire`
// (src/grantwire) that runs the same policy/policy.wasm on wasmtime, implements the host ABI
// grantwire.host.v2 (hostabi/README.md) over the OS — the keyring through Python's `keyring`
// with the Go shell's slots, the ledger files and provider locks of shells/native, HTTP, the
// PKCE loopback — and offers GAIA's gaia.connectors API shape (docs/python.md).
//
// The Go code here is only its test (python_test.go, corpus_test.go): it installs the pinned
// environment into a virtual environment under build/python, runs pytest (every exchange
// validated against hostabi/schema), runs the whole conformance corpus on the Python shell
// against the test worlds' one authorization server over HTTP, demanding the Go memory host's
// questions and the Go engines' decisions byte for byte, proves that Go's and Python's file
// locks exclude each other, races Go and Python processes on one home at the rotating local
// authorization server, and installs the wheel into a fresh virtual environment. The package
// has no exported API; nothing imports it.
package python
