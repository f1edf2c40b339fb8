// Package safefile opens files grantwire reads but does not control (ledgers, the agents
// file, agent sources, catalog files) as regular files only, with a size limit, so a
// named pipe, a device or a huge file in their place is a clear error naming the path
// instead of a hang or an exhausted memory.
//
// The check is made twice: the path is examined first (a FIFO or device is never opened,
// since opening some devices has effects), then opened without blocking (O_NONBLOCK: a
// FIFO swapped in meanwhile does not wait for a writer) and examined again through the
// open descriptor, which is what is read.
//
// It imports only the standard library.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// NotRegularError reports a path that is not a regular file (or, for the NoFollow
// functions, a symbolic link).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, Kind(e.Mode))
}

// TooLargeError reports a file larger than the caller's limit.
type TooLargeError struct {
	Path  string
	Size  int64 // the size seen (at least Limit+1)
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s (%d bytes or more)", e.Path, Size(e.Limit), e.Size)
}

// ErrSymlink is wrapped by the NotRegularError of a symbolic link refused by a NoFollow
// function.
var ErrSymlink = errors.New("safefile: symbolic link")

// Unwrap lets errors.Is(err, ErrSymlink) tell a symbolic link from other kinds.
func (e *NotRegularError) Unwrap() error {
	if e.Mode&fs.ModeSymlink != 0 {
		return ErrSymlink
	}
	return nil
}

// Kind names a file type for messages: "a named pipe", "a directory", ...
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}

// Size prints a byte count in binary units ("16 MiB").
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Open opens the regular file at path for reading, following symbolic links. A missing
// file is an error wrapping fs.ErrNotExist.
func Open(path string) (*os.File, fs.FileInfo, error) { return open(path, false) }

// OpenNoFollow is Open, except that a symbolic link at path (its last element) is refused
// with a *NotRegularError wrapping ErrSymlink.
func OpenNoFollow(path string) (*os.File, fs.FileInfo, error) { return open(path, true) }

// ReadFile reads the regular file at path, following symbolic links, refusing one larger
// than limit bytes with a *TooLargeError before reading it.
func ReadFile(path string, limit int64) ([]byte, fs.FileInfo, error) {
	return readFile(path, limit, false)
}

// ReadFileNoFollow is ReadFile refusing a symbolic link as OpenNoFollow does.
func ReadFileNoFollow(path string, limit int64) ([]byte, fs.FileInfo, error) {
	return readFile(path, limit, true)
}

func readFile(path string, limit int64, noFollow bool) ([]byte, fs.FileInfo, error) {
	f, fi, err := open(path, noFollow)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := ReadAll(f, path, fi.Size(), limit)
	return b, fi, err
}

// ReadAll reads at most limit bytes of r (a file of the given size, 0 if unknown) and
// returns a *TooLargeError naming path when there is more.
func ReadAll(r io.Reader, path string, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, &TooLargeError{Path: path, Size: size, Limit: limit}
	}
	buf := make([]byte, 0, size+1) // +1: EOF is seen without growing
	for {
		if int64(len(buf)) > limit {
			return nil, &TooLargeError{Path: path, Size: int64(len(buf)), Limit: limit}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) > limit {
				return nil, &TooLargeError{Path: path, Size: int64(len(buf)), Limit: limit}
			}
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
}

func open(path string, noFollow bool) (*os.File, fs.FileInfo, error) {
	// A file replaced by a rename between the two looks (how grantwire writes ledgers) is
	// looked at again; on systems without O_NOFOLLOW that is also how a symbolic link
	// swapped in after the first look is caught.
	for attempt := 0; ; attempt++ {
		f, fi, again, err := openOnce(path, noFollow)
		if !again || attempt == 3 {
			return f, fi, err
		}
	}
}

func openOnce(path string, noFollow bool) (_ *os.File, _ fs.FileInfo, again bool, _ error) {
	stat := os.Stat
	if noFollow {
		stat = os.Lstat
	}
	before, err := stat(path)
	if err != nil {
		return nil, nil, false, err
	}
	if !before.Mode().IsRegular() {
		return nil, nil, false, &NotRegularError{Path: path, Mode: before.Mode()}
	}
	f, err := openFile(path, noFollow)
	if err != nil {
		if isLoop(err) {
			return nil, nil, false, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
		}
		return nil, nil, errors.Is(err, fs.ErrNotExist), err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, false, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, false, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if !hasNoFollow && !os.SameFile(before, fi) {
		_ = f.Close()
		return nil, nil, true, fmt.Errorf("%s changed while it was being opened; try again", path)
	}
	return f, fi, false, nil
}
