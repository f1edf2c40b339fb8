package testenv

import (
	"math/rand/v2"
	"os"
	"testing"
)

// SoakEnv is set to 1 by `make soak` (scripts/test.sh with GRANTWIRE_SOAK=1): the
// randomized tests then run their whole input set on fresh seeds. Unset (`make test`,
// plain go test), they run a fixed share of it on a fixed seed, so a run of make test is
// as repeatable as it is quick, and checks the same things on fewer inputs.
const SoakEnv = "GRANTWIRE_SOAK"

// Soak reports whether the randomized tests run in full (SoakEnv=1).
func Soak() bool { return os.Getenv(SoakEnv) == "1" }

// Share is how many of a randomized test's full inputs to run: full under Soak, else
// full/div (at least 1), the fixed share of make test.
func Share(full, div int) int {
	if Soak() || div <= 1 {
		return full
	}
	return max(1, full/div)
}

// Seed is the seed of a randomized test: fixed (make test: the same inputs every run),
// or under Soak a fresh one. It logs the seed and reproduce, the command that runs the
// test again on it (reproduce holds one %d, the seed; under Soak it is prefixed with
// GRANTWIRE_SOAK=1, the counts of that run).
func Seed(t testing.TB, fixed uint64, reproduce string) uint64 {
	t.Helper()
	s, how := fixed, "fixed; "+SoakEnv+"=1 draws a fresh one"
	if Soak() {
		s, how = rand.Uint64(), "fresh: "+SoakEnv+"=1"
		reproduce = SoakEnv + "=1 " + reproduce
	}
	t.Logf("seed %d (%s); reproduce with: "+reproduce, s, how, s)
	return s
}
