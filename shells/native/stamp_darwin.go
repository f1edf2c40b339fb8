package native

import "syscall"

// The modification and change times, in ns, of a stat result (lstatStamp, stamp_unix.go).
func mtime(st *syscall.Stat_t) int64 { return st.Mtimespec.Nano() }
func ctime(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }
