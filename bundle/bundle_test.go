package bundle_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/policy"
)

func contents(t *testing.T) bundle.Contents {
	t.Helper()
	var data map[string]any
	require.NoError(t, json.Unmarshal(catalog.Default().Data(), &data))
	sum := bundle.RevisionOf(policy.Wasm)
	return bundle.Contents{
		Revision: sum + "@test", Wasm: policy.Wasm, Data: data,
		Entrypoints: []string{"grantwire/manifest", "grantwire/decide"},
		Metadata:    map[string]any{bundle.MetadataKey: map[string]any{bundle.WasmSHA256Key: sha256hex(policy.Wasm)}},
		Modules:     []bundle.File{{Path: "policy/grantwire/b.rego", Raw: []byte("package grantwire.b\n")}, {Path: "policy/grantwire/a.rego", Raw: []byte("package grantwire.a\n")}},
	}
}

// What Write writes, Read accepts, whole; the same contents give the same bytes.
func TestWriteThenRead(t *testing.T) {
	c := contents(t)
	var one, two bytes.Buffer
	require.NoError(t, bundle.Write(&one, c))
	require.NoError(t, bundle.Write(&two, c))
	require.Equal(t, one.Bytes(), two.Bytes(), "deterministic")

	b, err := bundle.Read(bytes.NewReader(one.Bytes()))
	require.NoError(t, err)
	require.Equal(t, c.Revision, b.Revision)
	require.Equal(t, policy.Wasm, b.Wasm)
	require.Equal(t, bundle.WasmPath, b.WasmPath)
	require.Equal(t, []string{"grantwire/decide", "grantwire/manifest"}, b.Entrypoints)
	require.Equal(t, []string{"policy/grantwire/a.rego", "policy/grantwire/b.rego"}, b.Rego)
	cat, err := catalog.Load(b.Catalog)
	require.NoError(t, err)
	require.Equal(t, catalog.Default().IDs(), cat.IDs())
	require.NotEmpty(t, b.Agents)
}

// Write refuses what would make a broken bundle, and a Rego-only bundle is written but
// not run.
func TestWriteRefusals(t *testing.T) {
	c := contents(t)
	c.Revision = ""
	require.ErrorContains(t, bundle.Write(&bytes.Buffer{}, c), "revision")
	for _, p := range []string{"/abs.rego", "../up.rego", "policy/x.txt", "policy//y.rego"} {
		c := contents(t)
		c.Modules = []bundle.File{{Path: p, Raw: []byte("package x")}}
		require.ErrorContains(t, bundle.Write(&bytes.Buffer{}, c), "module path", p)
	}
	c = contents(t)
	c.Wasm = nil
	require.ErrorContains(t, bundle.Write(&bytes.Buffer{}, c), "entrypoints without a wasm module")
	c.Entrypoints = nil
	var buf bytes.Buffer
	require.NoError(t, bundle.Write(&buf, c))
	_, err := bundle.Read(bytes.NewReader(buf.Bytes()))
	require.ErrorIs(t, err, bundle.ErrRefused)
	require.ErrorContains(t, err, "no wasm entrypoint")
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
