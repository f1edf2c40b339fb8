package nativeengine_test

import (
	"context"
	"testing"

	"github.com/grantwire/grantwire/core/nativeengine"
)

// The loopback rule Go reads (core.Loopback over the manifest) says what the policy's
// transport rule says: the shells, the remote MCP client and serve write it nowhere else.
func TestTheLoopbackRuleIsThePolicys(t *testing.T) {
	e, err := nativeengine.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	l := e.Manifest().Loopback
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.5.6.7": true, "::1": true, "[::1]": true,
		"::ffff:127.0.0.1": false, "10.0.0.1": false, "example.com": false, "localhost.example": false,
		"fe80::1%lo": false, "": false, "0.0.0.0": false, "::": false,
	} {
		if got := l.IsHost(host); got != want {
			t.Errorf("IsHost(%q) = %v, want %v", host, got, want)
		}
	}
	for addr, want := range map[string]string{
		"localhost:8080": "127.0.0.1:8080", "LOCALHOST:1": "127.0.0.1:1", "example.com:443": "example.com:443",
		"127.0.0.1:9": "127.0.0.1:9", "[::1]:9": "[::1]:9", "localhost": "localhost",
	} {
		if got := l.Addr(addr); got != want {
			t.Errorf("Addr(%q) = %q, want %q", addr, got, want)
		}
	}
}
