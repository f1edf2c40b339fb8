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
)

// within fails the test when f does not return in time (a read that blocks on a FIFO).
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked for 5 s")
	}
}

// A FIFO or a device in place of a file is refused at once, without blocking or reading.
func TestSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "a named pipe (FIFO)"}, {"/dev/zero", "a character device"}, {"/dev/null", "a character device"},
	} {
		within(t, func() {
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
