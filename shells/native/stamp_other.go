//go:build !linux && !darwin

package native

// lstatStamp is unknown where no inode and change time are at hand: the read caches are
// off there (every read goes to the store).
func lstatStamp(string) (string, bool, error) { return "", false, errNoStamp }
