//go:build unix

package safefile

import (
	"errors"
	"os"
	"syscall"
)

// openFile opens path read-only without blocking on a FIFO (O_NONBLOCK; for a regular
// file the flag changes nothing) and, with noFollow, without following a symbolic link.
func openFile(path string, noFollow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flags, 0)
}

// hasNoFollow: open refuses a symbolic link itself, so no same-file check is needed.
const hasNoFollow = true

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
