package grantwire_test

import (
	"os"
	"testing"

	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// TestMain gives the package's tests a cache directory of their own (provider locks,
// compiled policy), removed at the end: a test run leaves nothing in ~/.cache/grantwire.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
