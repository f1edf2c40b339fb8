package grantwire_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/hostabi/memhost"
)

// Every operation of a client with a decision log becomes one line in OPA's
// decision-log format, replayable with `grantwire policy replay` or `opa eval -b`.
func ExampleWithDecisionLog() {
	ctx := context.Background()
	var log bytes.Buffer
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")),
		grantwire.WithDecisionLog(decisionlog.New(&log)))
	if err != nil {
		panic(err)
	}
	defer c.Close(ctx)
	if _, err := c.Grant(ctx, "google", "builtin:chat", []string{"openid"}); err != nil {
		panic(err)
	}
	events, err := decisionlog.ReadAll(&log)
	if err != nil {
		panic(err)
	}
	e := events[0]
	fmt.Println(e.Path, e.Custom["op"], e.Custom["outcome"], e.Revision == c.Revision())
	fmt.Println(string(e.Input))
	// Output:
	// grantwire/decide grant ok true
	// {"args":{"agent":"builtin:chat","connector":"google","scopes":["openid"]},"attempt":0,"facts":{"grant":{"found":false}},"op":"grant","round":0}
}

// A bundle built by package audit (or `grantwire policy build`) runs a client without
// OPA: the bundle's policy.wasm on the wasm engine and its data.catalog.
func ExampleReadBundle() {
	ctx := context.Background()
	built, err := audit.Build(ctx, audit.BuildOptions{Describe: "v0.1.0"})
	if err != nil {
		panic(err)
	}
	b, err := grantwire.ReadBundle(bytes.NewReader(built.Bytes))
	if err != nil {
		panic(err)
	}
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	c, err := grantwire.New(ctx, grantwire.WithBundle(b), grantwire.WithCapabilities(w.Capabilities("")))
	if err != nil {
		panic(err)
	}
	defer c.Close(ctx)
	fmt.Println(b.WasmPath, c.Revision() == grantwire.EmbeddedRevision()+"@v0.1.0")
	// Output:
	// policy.wasm true
}
