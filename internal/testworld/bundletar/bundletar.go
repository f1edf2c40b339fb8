// Package bundletar reads and writes a policy bundle's gzipped tar as a map of files, for
// tests that take a bundle apart, change a file and put it back together (the root
// package's and audit's bundle tests). It imports no grantwire package.
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
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[strings.TrimPrefix(h.Name, prefix)] = body
	}
}

// Write returns files as a gzipped tar, in name order, each name with prefix before it.
func Write(t testing.TB, files map[string][]byte, prefix string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: prefix + n, Mode: 0o600, Size: int64(len(files[n])), Typeflag: tar.TypeReg}))
		_, err := tw.Write(files[n])
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
