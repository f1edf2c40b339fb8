//go:build !unix

package native

import (
	"errors"
	"os"
)

// ownedPrivate: no Secret Service (and no session file) off Unix.
func ownedPrivate(p string, _ os.FileInfo) error {
	return errors.New(p + ": keyring session files are read on Unix only")
}
