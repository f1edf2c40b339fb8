package conformance_test

import (
	"testing"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/internal/testworld/engines"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

func TestNativeMemhost(t *testing.T) {
	conformance.Run(t, memshell.New("native", engines.Native))
}

func TestWasmMemhost(t *testing.T) {
	conformance.Run(t, memshell.New("wasm", engines.Wasm))
}

func TestRegoMemhost(t *testing.T) {
	conformance.Run(t, memshell.New("rego", engines.Rego))
}
