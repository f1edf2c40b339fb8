package safefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/internal/safefile"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular.json")
	if err := os.WriteFile(regular, []byte(`{"a": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	b, _, err := safefile.ReadFile(regular, 16)
	if err != nil || string(b) != `{"a": 1}` {
		t.Fatalf("regular: %q, %v", b, err)
	}
	if b, _, err = safefile.ReadFile(link, 16); err != nil || string(b) != `{"a": 1}` {
		t.Fatalf("link followed: %q, %v", b, err)
	}
	_, _, err = safefile.ReadFileNoFollow(link, 16)
	var nr *safefile.NotRegularError
	if !errors.As(err, &nr) || !errors.Is(err, safefile.ErrSymlink) || !strings.Contains(err.Error(), link+" is a symbolic link") {
		t.Fatalf("link not followed: %v", err)
	}
	_, _, err = safefile.ReadFile(regular, 7)
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 7 || !strings.Contains(err.Error(), regular+" is larger than 7 bytes") {
		t.Fatalf("limit: %v", err)
	}
	if _, _, err = safefile.ReadFile(dir, 16); !errors.As(err, &nr) || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("directory: %v", err)
	}
	if _, _, err = safefile.ReadFile(filepath.Join(dir, "missing"), 16); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func TestReadAllLimit(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int64
		ok    bool
	}{{"", 0, true}, {"abc", 3, true}, {"abcd", 3, false}, {strings.Repeat("x", 5000), 5000, true}, {strings.Repeat("x", 5001), 5000, false}} {
		b, err := safefile.ReadAll(strings.NewReader(tc.in), "f", 0, tc.limit)
		if tc.ok != (err == nil) || (tc.ok && string(b) != tc.in) {
			t.Errorf("%d bytes, limit %d: %d bytes, %v", len(tc.in), tc.limit, len(b), err)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{16 << 20: "16 MiB", 1 << 30: "1 GiB", 4096: "4 KiB", 1000: "1000 bytes"} {
		if got := safefile.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
