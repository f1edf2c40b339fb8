//go:build !unix

package safefile

import "os"

// openFile opens path read-only. Without O_NONBLOCK and O_NOFOLLOW here, open relies on
// the examination before and the same-file check after.
func openFile(path string, _ bool) (*os.File, error) { return os.Open(path) }

// hasNoFollow: open refuses a symbolic link itself, so no same-file check is needed.
const hasNoFollow = false

func isLoop(error) bool { return false }
