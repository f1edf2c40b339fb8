// Package bundletar reads and writes a policy bundle's gzipped tar as a map of files, for
// tests that take a bundle apart, change a file and put it back together (the root
// package's and audit's bundle tests, opatest's bundle with other data). It imports no
// grantwire package.
package bundletar

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Files returns the files of the gzipped tar b by name, prefix trimmed from each name.
func Files(t testing.TB, b []byte, prefix string) map[string][]byte {
	t.Helper()
	files, err := Read(b, prefix)
	require.NoError(t, err)
	return files
}

// Read is Files for a caller with no test at hand: it returns the error.
func Read(b []byte, prefix string) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(h.Name, prefix)] = body
	}
}

// Write returns files as a gzipped tar, in name order, each name with prefix before it.
func Write(t testing.TB, files map[string][]byte, prefix string) []byte {
	t.Helper()
	b, err := Pack(files, prefix)
	require.NoError(t, err)
	return b
}

// Pack is Write for a caller with no test at hand: it returns the error.
func Pack(files map[string][]byte, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: prefix + n, Mode: 0o600, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
