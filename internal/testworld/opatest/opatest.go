// Package opatest serves grantwire's bundle with the OPA pinned in go.mod (`go tool opa
// run --server`) on 127.0.0.1, for the tests of the opa-server engine (conformance, the
// root package, the CLI). It is test support: only _test files import it, and it imports
// OPA (through package audit).
package opatest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/internal/testworld/bundletar"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

var (
	once    sync.Once
	built   *audit.Built
	opaPath string
	onceErr error
)

// Bundle is grantwire's bundle built --rego-only (the pinned OPA evaluates Rego; it has no
// WebAssembly) with the embedded catalog, built once per process, and the pinned OPA.
func Bundle() (*audit.Built, string, error) {
	once.Do(func() {
		if opaPath, onceErr = PinnedOPA(); onceErr != nil {
			return
		}
		built, onceErr = audit.Build(context.Background(), audit.BuildOptions{RegoOnly: true, Describe: "opatest"})
	})
	return built, opaPath, onceErr
}

// Serve starts an OPA server on grantwire's bundle whose data document is data (nil: the
// embedded catalog's), stopped when the test ends. It returns the server's URL and the
// bundle's revision.
func Serve(t testing.TB, data []byte) (string, string) {
	t.Helper()
	url, revision, stop, err := ServeData(t.TempDir(), data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url, revision
}

// ServeData is Serve for callers that stop the server themselves: the bundle goes to dir.
func ServeData(dir string, data []byte) (url, revision string, stop func(), err error) {
	b, opa, err := Bundle()
	if err != nil {
		return "", "", nil, err
	}
	raw := b.Bytes
	if data != nil {
		if raw, err = WithData(raw, data); err != nil {
			return "", "", nil, err
		}
	}
	f, err := os.CreateTemp(dir, "bundle-*.tar.gz")
	if err != nil {
		return "", "", nil, err
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return "", "", nil, err
	}
	if err := f.Close(); err != nil {
		return "", "", nil, err
	}
	url, stop, err = Start(opa, filepath.Clean(f.Name()))
	return url, b.Revision, stop, err
}

// PinnedOPA is the OPA of go.mod as `go tool opa` runs it (built without WebAssembly).
func PinnedOPA() (string, error) {
	out, err := exec.Command("go", "tool", "-n", "opa").Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n opa: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// WithData returns the bundle with its /data.json replaced by data.
func WithData(bundle, data []byte) ([]byte, error) {
	files, err := bundletar.Read(bundle, "/")
	if err != nil {
		return nil, err
	}
	if _, ok := files["data.json"]; !ok {
		return nil, fmt.Errorf("the bundle has no data.json")
	}
	files["data.json"] = data
	return bundletar.Pack(files, "/")
}

// Start runs `opa run --server --bundle` on a free port of 127.0.0.1 and waits until
// its bundle is active.
func Start(opa, bundle string) (string, func(), error) {
	url, _, stop, err := StartArgs(opa, "--bundle", bundle)
	return url, stop, err
}

// StartArgs runs `opa run --server` with args on a free port of 127.0.0.1 and waits until
// its bundles are active (/health?bundles answers 200, not 500); logs returns what OPA
// wrote so far (its console decision log, with --set decision_logs.console=true).
func StartArgs(opa string, args ...string) (url string, logs func() []byte, stop func(), err error) {
	port, err := testenv.FreePort()
	if err != nil {
		return "", nil, nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(opa, append([]string{"run", "--server", "--addr", addr, "--log-format", "json"}, args...)...)
	url = "http://" + addr
	out, stop, err := testenv.StartServer(cmd, url+"/health?bundles", 60*time.Second)
	if err != nil {
		return "", nil, nil, fmt.Errorf("opa run --server did not become healthy: %w", err)
	}
	return url, out.Bytes, stop, nil
}
