//go:build unix

package safefile_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/grantwire/grantwire/internal/safefile"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// A FIFO or a device in place of a file is refused at once, without blocking or reading.
func TestSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "a named pipe (FIFO)"}, {"/dev/zero", "a character device"}, {"/dev/null", "a character device"},
	} {
		testenv.Within(t, 5*time.Second, "the read of "+tc.path, func() {
			for _, read := range []func(string, int64) ([]byte, fs.FileInfo, error){safefile.ReadFile, safefile.ReadFileNoFollow} {
				_, _, err := read(tc.path, 1<<20)
				var nr *safefile.NotRegularError
				if !errors.As(err, &nr) || err.Error() != tc.path+" is "+tc.kind+", not a regular file" {
					t.Errorf("%s: %v", tc.path, err)
				}
			}
		})
	}
}
