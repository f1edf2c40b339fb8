//go:build unix

package native

import (
	"fmt"
	"os"
	"syscall"
)

// ownedPrivate: fi (of p) belongs to this user and no one else may write it.
func ownedPrivate(p string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: its owner cannot be read", p)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to another user (uid %d)", p, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by others (mode %04o)", p, fi.Mode().Perm())
	}
	return nil
}
