package nativeshell_test

import (
	"context"
	"os"
	"testing"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/internal/testworld/engines"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/internal/testworld/nativeshell"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// policyWaitsEnv=1 runs the corpus with every lock wait the policy's (about 80 s more per
// engine; see nativeshell.PolicyLockWaits).
const policyWaitsEnv = "GRANTWIRE_NATIVE_POLICY_WAITS"

func shell(t *testing.T, engine string, f memshell.EngineFactory) *nativeshell.Shell {
	t.Helper()
	var opts []nativeshell.Option
	if os.Getenv(policyWaitsEnv) == "1" {
		opts = append(opts, nativeshell.PolicyLockWaits())
	}
	sh, err := nativeshell.New(engine, f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Close(context.Background()) })
	return sh
}

func TestWasmNative(t *testing.T) {
	requireKeyring(t)
	conformance.Run(t, shell(t, "wasm", engines.Wasm))
}

func TestRegoNative(t *testing.T) {
	requireKeyring(t)
	conformance.Run(t, shell(t, "rego", engines.Rego))
}

func TestNativeNative(t *testing.T) {
	requireKeyring(t)
	conformance.Run(t, shell(t, "native", engines.Native))
}

// BenchmarkScenario measures one scenario on the OS shell end to end: a fresh home and
// keyring service, staging through the Secret Service, two processes refreshing over HTTP
// against the local authorization server, the final checks, and the cleanup.
func BenchmarkScenario(b *testing.B) {
	if os.Getenv(realKeyringEnv) != "1" {
		b.Skipf("needs a Secret Service: scripts/with-keyring.sh go test -bench . ./internal/testworld/nativeshell")
	}
	c, err := conformance.DefaultCorpus()
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"gate/granted-agent-gets-a-token", "refresh/two-processes-never-reuse-a-token"} {
		s := c.Find(id)
		if s == nil {
			b.Fatalf("no scenario %s", id)
		}
		b.Run(id, func(b *testing.B) {
			sh, err := nativeshell.New("wasm", engines.Wasm)
			if err != nil {
				b.Fatal(err)
			}
			defer sh.Close(context.Background())
			b.ReportAllocs()
			for b.Loop() {
				rep, err := conformance.RunScenario(context.Background(), b, sh, s, nil)
				if err != nil || len(rep.Failures) > 0 {
					b.Fatalf("%s: %v %v", id, err, rep.Failures)
				}
			}
		})
	}
}

func requireKeyring(t testing.TB) {
	t.Helper()
	testenv.RequireKeyring(t, "./internal/testworld/nativeshell")
}

const realKeyringEnv = testenv.RealKeyringEnv
