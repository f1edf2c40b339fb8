package main

import (
	"context"
	"testing"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/wasmengine"
)

// One whole command as a user runs it (engine start, shell, one operation, output), on the
// in-memory world: what a command costs apart from the OS shell's own I/O.
func BenchmarkCommandStatusJSON(b *testing.B) {
	tw := newWorld(&testing.T{})
	b.ReportAllocs()
	for b.Loop() {
		if r := tw.gw("status", "--json"); r.code != 0 {
			b.Fatal(r.stderr)
		}
	}
}

func BenchmarkCommandToken(b *testing.B) {
	tw := newWorld(&testing.T{})
	for _, args := range [][]string{
		{"configure", "google", "--client-id", "cid", "--client-secret-stdin"},
		{"connect", "google", "--grant-agent", "builtin:email"},
	} {
		if r := tw.gwIn("cs\n", args...); r.code != 0 {
			b.Fatal(r.stderr)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := tw.gw("token", "google", "--agent", "builtin:email", "--scopes", gmailModify); r.code != 0 {
			b.Fatal(r.stderr)
		}
	}
}

func BenchmarkCommandCatalog(b *testing.B) {
	tw := newWorld(&testing.T{})
	b.ReportAllocs()
	for b.Loop() {
		if r := tw.gw("catalog"); r.code != 0 {
			b.Fatal(r.stderr)
		}
	}
}

// The engine start a command pays: interpreted (what the CLI uses) and compiled (what a
// long-running serve uses).
func BenchmarkEngineStart(b *testing.B) {
	ctx := context.Background()
	cat, err := catalog.Load(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []wasmengine.Option
	}{
		{"interpreter", []wasmengine.Option{wasmengine.WithInterpreter(), wasmengine.WithPoolSize(1)}},
		{"compiler", []wasmengine.Option{wasmengine.WithPoolSize(1)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e, err := wasmengine.New(ctx, append(tc.opts, wasmengine.WithData(cat.Data()))...)
				if err != nil {
					b.Fatal(err)
				}
				_ = e.Close(ctx)
			}
		})
	}
}
