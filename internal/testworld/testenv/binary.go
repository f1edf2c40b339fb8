package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// Binary is a Go command a package's tests build once per run and run as a user would:
// Pkg (an import path, or a directory relative to the test's package), built with Flags
// into the run's Dir(tb, "bin") (the package's TestMain runs Main), under Name (default:
// Pkg's last element).
// CGO is off, as for a release build.
type Binary struct {
	Pkg   string
	Name  string
	Flags []string

	once sync.Once
	path string
	err  error
}

// Path builds the command the first time and returns its path; a build that fails fails
// tb, every time it is asked for.
func (b *Binary) Path(tb testing.TB) string {
	tb.Helper()
	dir := Dir(tb, "bin")
	b.once.Do(func() {
		name := b.Name
		if name == "" {
			name = path.Base(b.Pkg)
		}
		b.path = filepath.Join(dir, name)
		cmd := exec.Command("go", append(append([]string{"build"}, b.Flags...), "-o", b.path, b.Pkg)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %v %s: %v\n%s", b.Flags, b.Pkg, err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}
