package conformance_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/opaserver"
	"github.com/grantwire/grantwire/internal/memshell"
)

// TestOPAServer runs the whole corpus on OPA servers: the OPA pinned in go.mod (`go tool
// opa`, which evaluates Rego: the bundle is built --rego-only, as docs/fleet.md says for
// OPA builds without WebAssembly) serves grantwire's bundle on 127.0.0.1, and the
// opa-server engine sends it every query. A scenario whose catalog differs gets a server
// whose bundle carries that catalog (the bundle's data.json replaced), as a team ships
// its own catalog in the bundle.
func TestOPAServer(t *testing.T) {
	opa := pinnedOPA(t)
	built, err := audit.Build(context.Background(), audit.BuildOptions{RegoOnly: true, Describe: "conformance"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var (
		mu sync.Mutex
		n  int
	)
	factory := func(ctx context.Context, data []byte) (core.Engine, error) {
		mu.Lock()
		n++
		path := filepath.Join(dir, fmt.Sprintf("bundle-%d.tar.gz", n))
		mu.Unlock()
		b, err := withData(built.Bytes, data)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
		url, stop, err := startOPA(opa, path)
		if err != nil {
			return nil, err
		}
		e, err := opaserver.New(ctx, url)
		if err != nil {
			stop()
			return nil, err
		}
		if e.Revision() != built.Revision {
			stop()
			return nil, fmt.Errorf("the server runs revision %q, the bundle is %q", e.Revision(), built.Revision)
		}
		return &servedEngine{Engine: e, stop: stop}, nil
	}
	sh := memshell.New("opa-server", factory)
	t.Cleanup(func() { _ = sh.Close(context.Background()) })
	conformance.Run(t, sh)
}

// servedEngine stops its OPA server when closed.
type servedEngine struct {
	*opaserver.Engine
	stop func()
}

func (e *servedEngine) Close(ctx context.Context) error {
	err := e.Engine.Close(ctx)
	e.stop()
	return err
}

// pinnedOPA is the OPA of go.mod as `go tool opa` runs it.
func pinnedOPA(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "tool", "-n", "opa").Output()
	if err != nil {
		t.Fatalf("go tool -n opa: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// withData returns the bundle with its /data.json replaced by data.
func withData(bundle, data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(bundle))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(zr)
	replaced := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "/") == "data.json" {
			body, replaced = data, true
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if !replaced {
		return nil, fmt.Errorf("the bundle has no data.json")
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// startOPA runs `opa run --server --bundle` on a free port of 127.0.0.1 and waits until
// its bundle is active.
func startOPA(opa, bundle string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(opa, "run", "--server", "--addr", addr, "--log-level", "error", "--bundle", bundle)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	url := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get(url + "/health?bundles")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("opa run --server did not become healthy: %s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
