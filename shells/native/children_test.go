package native_test

import (
	"fmt"
	"os"
)

// runChild runs the role of a re-executed test binary and returns its exit code.
func runChild(role string) int {
	switch role {
	case "ledger-writer":
		return childLedgerWriter()
	case "refresher":
		return childRefresher()
	case "ledger-ops":
		return childLedgerOps()
	case "ops":
		return childOps()
	case "lock-holder":
		return childLockHolder()
	case "changer":
		return childChanger()
	case "keyring-nostore":
		return childKeyringNoStore()
	}
	fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
	return 2
}
