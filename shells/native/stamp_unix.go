//go:build linux || darwin

package native

import (
	"encoding/binary"
	"syscall"
)

// lstatStamp is the stamp of path by lstat(2) without os.FileInfo (fewer allocations on
// the hot path); absent reports a path that does not exist.
func lstatStamp(path string) (stamp string, absent bool, err error) {
	var st syscall.Stat_t
	for {
		err = syscall.Lstat(path, &st)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.ENOENT || err == syscall.ENOTDIR {
		return "", true, nil
	}
	if err != nil {
		return "", false, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", false, errNotRegular
	}
	return packStamp(uint64(st.Dev), st.Ino, uint64(st.Size), uint64(st.Mode),
		uint64(mtime(&st)), uint64(ctime(&st))), false, nil
}

func packStamp(v ...uint64) string {
	var b [48]byte
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
	return string(b[:])
}
