package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/internal/testworld/audittest"
	"github.com/grantwire/grantwire/internal/testworld/bundletar"
	"github.com/grantwire/grantwire/internal/testworld/opatest"
	"github.com/grantwire/grantwire/policy"
)

// shared is a directory for artefacts several tests use (built once per test binary).
var shared string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "grantwire-audit-test-")
	if err != nil {
		panic(err)
	}
	shared = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// once runs fn once per test binary and remembers its result or error.
type once[T any] struct {
	sync.Once
	v   T
	err error
}

func (o *once[T]) get(t *testing.T, fn func() (T, error)) T {
	t.Helper()
	o.Do(func() { o.v, o.err = fn() })
	require.NoError(t, o.err)
	return o.v
}

var logOnce once[string]

// scenarioLog runs the audit scenario on the embedded policy (wasm engine) and returns the
// path of its decision log.
func scenarioLog(t *testing.T) string {
	return logOnce.get(t, func() (string, error) {
		ctx := context.Background()
		path := filepath.Join(shared, "decisions.jsonl")
		l, err := decisionlog.Open(path)
		if err != nil {
			return "", err
		}
		w, caps := audittest.World()
		c, err := grantwire.New(ctx, grantwire.WithCapabilities(caps), grantwire.WithObserver(func(d grantwire.Decision) { _ = l.Log(d.Record()) }))
		if err != nil {
			return "", err
		}
		defer c.Close(ctx)
		if err := audittest.Run(ctx, c, w); err != nil {
			return "", err
		}
		return path, l.Close()
	})
}

func readEvents(t *testing.T, path string) []*decisionlog.Event {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	events, err := decisionlog.ReadAll(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Len(t, events, len(audittest.Steps()))
	return events
}

var bundleOnce, regoOnlyOnce once[string]

// embeddedBundle builds the bundle of the embedded policy into a file.
func embeddedBundle(t *testing.T, regoOnly bool) string {
	o, name := &bundleOnce, "grantwire.tar.gz"
	if regoOnly {
		o, name = &regoOnlyOnce, "grantwire-rego.tar.gz"
	}
	return o.get(t, func() (string, error) {
		b, err := audit.Build(context.Background(), audit.BuildOptions{RegoOnly: regoOnly, Describe: "test"})
		if err != nil {
			return "", err
		}
		path := filepath.Join(shared, name)
		return path, os.WriteFile(path, b.Bytes, 0o600)
	})
}

// copyPolicy copies the embedded Rego sources to dir/grantwire and applies edits
// (file → [old, new] pairs; each old must occur exactly once).
func copyPolicy(t *testing.T, dir string, edits map[string][][2]string) string {
	t.Helper()
	root := filepath.Join(dir, "grantwire")
	err := fs.WalkDir(policy.Sources, "grantwire", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		src, err := fs.ReadFile(policy.Sources, p)
		if err != nil {
			return err
		}
		s := string(src)
		for _, e := range edits[strings.TrimPrefix(p, "grantwire/")] {
			require.Equal(t, 1, strings.Count(s, e[0]), "%s: %q", p, e[0])
			s = strings.Replace(s, e[0], e[1], 1)
		}
		return os.WriteFile(dst, []byte(s), 0o644)
	})
	require.NoError(t, err)
	return root
}

// wasmOnlyBundle writes a copy of a bundle without its Rego modules: OPA then has nothing
// but the wasm entrypoints to answer data.grantwire.decide with, so it runs policy.wasm on
// its own WebAssembly runtime. (With the Rego present, OPA evaluates the Rego: rules take
// precedence over wasm resolvers.)
func wasmOnlyBundle(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	files := bundletar.Files(t, raw, "/")
	for name := range files {
		if strings.HasSuffix(name, ".rego") {
			delete(files, name)
		}
	}
	out := filepath.Join(t.TempDir(), "wasm-only-"+filepath.Base(path))
	require.NoError(t, os.WriteFile(out, bundletar.Write(t, files, "/"), 0o600))
	return out
}

var opaWasmOnce, opaOnce once[string]

// opaWithWasm builds the pinned OPA with its release build tag opa_wasm (so it evaluates
// wasm entrypoints with OPA's own WebAssembly runtime), once per test binary.
func opaWithWasm(t *testing.T) string {
	return opaWasmOnce.get(t, func() (string, error) {
		bin := filepath.Join(shared, "opa-wasm")
		out, err := exec.Command("go", "build", "-tags", "opa_wasm", "-o", bin, "github.com/open-policy-agent/opa").CombinedOutput()
		if err != nil {
			return "", &exec.Error{Name: "go build opa: " + string(out), Err: err}
		}
		return bin, nil
	})
}

// opaStock is the pinned OPA as `go tool opa` runs it (built without WebAssembly).
func opaStock(t *testing.T) string {
	return opaOnce.get(t, opatest.PinnedOPA)
}

// redacted returns what a decision log would record for decision, next to its input.
func redacted(t *testing.T, input, decision []byte) string {
	t.Helper()
	r, err := decisionlog.Redact(input, decision)
	require.NoError(t, err)
	return string(r.Result)
}

// opaEval evaluates data.grantwire.decide on input with `opa eval -b bundle --stdin-input`.
func opaEval(t *testing.T, opa, bundle string, input []byte) []byte {
	t.Helper()
	cmd := exec.Command(opa, "eval", "-b", bundle, "--stdin-input", "--format", "json", "data.grantwire.decide")
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s\n%s", out, stderr.String())
	var res struct {
		Result []struct {
			Expressions []struct {
				Value json.RawMessage `json:"value"`
			} `json:"expressions"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	require.Len(t, res.Result, 1, "%s", out)
	return res.Result[0].Expressions[0].Value
}
