package conformance_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/opaserver"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/internal/testworld/opatest"
)

// TestOPAServer runs the whole corpus on OPA servers: the OPA pinned in go.mod (`go tool
// opa`, which evaluates Rego: the bundle is built --rego-only, as docs/fleet.md says for
// OPA builds without WebAssembly) serves grantwire's bundle on 127.0.0.1, and the
// opa-server engine sends it every query. A scenario whose catalog differs gets a server
// whose bundle carries that catalog (the bundle's data.json replaced), as a team ships
// its own catalog in the bundle.
func TestOPAServer(t *testing.T) {
	dir := t.TempDir()
	factory := func(ctx context.Context, data []byte) (core.Engine, error) {
		url, revision, stop, err := opatest.ServeData(dir, data)
		if err != nil {
			return nil, err
		}
		e, err := opaserver.New(ctx, url)
		if err != nil {
			stop()
			return nil, err
		}
		if e.Revision() != revision {
			stop()
			return nil, fmt.Errorf("the server runs revision %q, the bundle is %q", e.Revision(), revision)
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
