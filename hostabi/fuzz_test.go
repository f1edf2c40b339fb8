package hostabi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
)

// FuzzLedgers puts arbitrary bytes in a ledger and runs an operation that reads it and one
// that writes it (issue 10, item 19). Whatever the bytes: no failure other than an error of
// the policy's table; a ledger that is not strict JSON, or of the wrong shape, is refused
// with CORRUPT_LEDGER naming it and is left byte for byte; a ledger that is accepted and
// written keeps every entry the operation did not touch.
// Longer: go test ./hostabi -run '^$' -fuzz FuzzLedgers -fuzztime 5m
func FuzzLedgers(f *testing.F) {
	for _, seed := range []struct {
		doc string
		k   uint8
	}{
		{`{"google": {"builtin:email": ["gmail"]}, "x-unknown": {"a": ["b"]}}`, 0},
		{`{"google": {"builtin:email": ["gmail"]}, "google": {}}`, 0},
		{"{\"google\": {\"builtin:email\": [\"caf\xe9\"]}}", 0},
		{`{"google": ["not", "an", "object"]}`, 0},
		{`{"version": 1, "activations": {"mcp-github": {"builtin:chat": true, "builtin:code": true}}, "extra": 7}`, 1},
		{`{"version": 1, "activations": {"mcp-github": {"builtin:chat": "yes"}}}`, 1},
		{`{"mcpServers": {"other": {"command": "x", "args": [], "env": {}}}, "keep": true}`, 2},
		{`{"servers": {"legacy": {"command": "y"}}}`, 2},
		{`{} {}`, 2},
		{"", 0},
	} {
		f.Add([]byte(seed.doc), seed.k)
	}
	type op struct {
		name string
		args map[string]any
		sec  map[string]string
	}
	kinds := []struct {
		ledger      string
		read, write op
		touched     func(root map[string]any) // removes what the write may change
	}{
		{layout.Grants, op{"list_grants", map[string]any{}, nil},
			op{"grant", map[string]any{"connector": "mcp-github", "agent": "builtin:chat", "scopes": []string{"use"}}, nil},
			func(root map[string]any) {
				if m, ok := root["mcp-github"].(map[string]any); ok {
					delete(m, "builtin:chat")
					if len(m) == 0 {
						delete(root, "mcp-github")
					}
				}
			}},
		{layout.Activations, op{"list_activations", map[string]any{}, nil},
			op{"deactivate", map[string]any{"connector": "mcp-github", "agent": "builtin:chat"}, nil},
			func(root map[string]any) {
				if a, ok := root["activations"].(map[string]any); ok {
					if m, ok := a["mcp-github"].(map[string]any); ok {
						delete(m, "builtin:chat")
						if len(m) == 0 {
							delete(a, "mcp-github")
						}
					}
				}
				delete(root, "version")
			}},
		{layout.MCPServers, op{"visible_servers", map[string]any{"agent": "builtin:chat"}, nil},
			op{"configure_mcp", map[string]any{"connector": "mcp-github", "env_keys": []string{"GITHUB_TOKEN"}}, map[string]string{"env.GITHUB_TOKEN": "ghp_fuzz"}},
			func(root map[string]any) {
				for _, k := range []string{"mcpServers", "servers"} {
					if m, ok := root[k].(map[string]any); ok {
						delete(m, "mcp-github")
					}
				}
			}},
	}
	ctx := context.Background()
	e, err := wasmengine.New(ctx, wasmengine.WithData([]byte(testCatalog)), wasmengine.WithPoolSize(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close(ctx) })
	f.Fuzz(func(t *testing.T, doc []byte, which uint8) {
		k := kinds[int(which)%len(kinds)]
		w := memhost.New(time.Unix(1_790_000_000, 0), 1)
		d := &hostabi.Driver{Engine: e, Host: host.New(w.Capabilities(""))}
		w.SetFile(k.ledger, doc)
		strict := jsonx.Check(doc) == nil
		for i, o := range []op{k.read, k.write} {
			out, err := d.Run(context.Background(), o.name, o.args, o.sec)
			if err != nil {
				t.Fatalf("%s: %v", o.name, err)
			}
			if out.Error != nil && out.Error.Code == "CORRUPT_LEDGER" {
				if !bytes.Equal(w.File(k.ledger), doc) {
					t.Fatalf("%s rewrote a ledger it refused", o.name)
				}
				if !bytes.Contains([]byte(out.Error.Message), []byte(k.ledger)) {
					t.Fatalf("CORRUPT_LEDGER does not name the ledger: %s", out.Error.Message)
				}
				return
			}
			if i == 1 && out.Error == nil && !strict && len(doc) > 0 {
				t.Fatalf("%s wrote over a ledger that is not strict JSON: %q", o.name, doc)
			}
		}
		// Accepted and written: nothing the write did not touch is lost.
		var before, after map[string]any
		if len(doc) == 0 || bytes.Equal(w.File(k.ledger), doc) || json.Unmarshal(doc, &before) != nil || json.Unmarshal(w.File(k.ledger), &after) != nil {
			return
		}
		k.touched(before)
		k.touched(after)
		for key, v := range before {
			a, _ := json.Marshal(after[key])
			b, _ := json.Marshal(v)
			if !bytes.Equal(a, b) {
				t.Fatalf("the write lost or changed %q: %s -> %s", key, b, a)
			}
		}
	})
}
