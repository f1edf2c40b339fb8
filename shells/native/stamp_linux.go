package native

import (
	"encoding/binary"
	"io/fs"
	"syscall"
)

// fileStamp is the stamp of a stat(2) result: device, inode, size, mode, mtime and ctime
// in nanoseconds, as 48 bytes.
func fileStamp(fi fs.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return packStamp(uint64(st.Dev), st.Ino, uint64(st.Size), uint64(st.Mode),
		uint64(st.Mtim.Nano()), uint64(st.Ctim.Nano())), true
}

func packStamp(v ...uint64) string {
	var b [48]byte
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
	return string(b[:])
}
