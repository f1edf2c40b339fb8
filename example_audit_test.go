package grantwire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/policy"
)

// Every operation of a client with a decision log becomes one line in OPA's
// decision-log format, replayable with `grantwire policy replay` or `opa eval -b`.
func Example_decisionLog() {
	ctx := context.Background()
	var log bytes.Buffer
	dl := decisionlog.New(&log)
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")),
		grantwire.WithObserver(func(d grantwire.Decision) { _ = dl.Log(d.Record()) }))
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
	// {"args":{"agent":"builtin:chat","connector":"google","scopes":["openid"]},"attempt":0,"facts":{"agents":{"file":"/home/user/.grantwire/agents.json","found":false,"ledger":"agents.json","path":[]},"grant":{"file":"/home/user/.grantwire/connectors/grants.json","found":false,"ledger":"connectors/grants.json","path":["google","builtin:chat"]}},"op":"grant","round":0}
}

// A bundle built by package audit (or `grantwire policy build`) runs a client without
// OPA: the bundle's policy.wasm on the wasm engine, its data.catalog and its built-in
// agents (data.agents.builtin).
func ExampleWithBundle() {
	ctx := context.Background()
	built, err := audit.Build(ctx, audit.BuildOptions{Describe: "v0.1.0"})
	if err != nil {
		panic(err)
	}
	b, err := bundle.Read(bytes.NewReader(built.Bytes))
	if err != nil {
		panic(err)
	}
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	c, err := grantwire.New(ctx, grantwire.WithBundle(b), grantwire.WithCapabilities(w.Capabilities("")))
	if err != nil {
		panic(err)
	}
	defer c.Close(ctx)
	fmt.Println(b.WasmPath, c.Revision() == bundle.EmbeddedRevision()+"@v0.1.0")
	// Output:
	// policy.wasm true
}

// bundle.Open reads a bundle file (`grantwire --bundle FILE` runs on one).
func ExampleWithBundle_file() {
	ctx := context.Background()
	built, err := audit.Build(ctx, audit.BuildOptions{Describe: "v0.1.0"})
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "grantwire-bundle-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "grantwire-bundle.tar.gz")
	if err := os.WriteFile(path, built.Bytes, 0o600); err != nil {
		panic(err)
	}
	b, err := bundle.Open(path)
	if err != nil {
		panic(err)
	}
	var agents []struct{ ID string }
	if err := json.Unmarshal(b.Agents, &agents); err != nil {
		panic(err)
	}
	fmt.Println(b.Revision == built.Revision, b.WasmSHA256 == built.WasmSHA256, agents[0].ID)
	fmt.Println(slices.Contains(b.Entrypoints, "grantwire/decide"), slices.Contains(b.Entrypoints, "grantwire/manifest"))

	_, err = bundle.Open(filepath.Join(dir, "absent.tar.gz"))
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// true true builtin:chat
	// true true
	// true
}

// A policy's revision names its policy.wasm: decision logs and bundles carry it.
func ExampleRevisionOf() {
	fmt.Println(bundle.RevisionOf([]byte("\x00asm\x01\x00\x00\x00")))
	fmt.Println(bundle.RevisionOf(policy.Wasm) == bundle.EmbeddedRevision())
	// Output:
	// sha256:93a44bbb96c75121
	// true
}
