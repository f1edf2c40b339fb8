//go:build !linux && !darwin

package native

import "io/fs"

// fileStamp is unknown where no inode and change time are at hand: the read caches are
// off there (every read goes to the store).
func fileStamp(fs.FileInfo) (string, bool) { return "", false }
