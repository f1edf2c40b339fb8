package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

func benchShell(b *testing.B, tweak ...func(*native.Options)) *native.Shell {
	b.Helper()
	o := native.Options{Home: b.TempDir(), Service: testService(b), NoWatch: true}
	for _, f := range tweak {
		f(&o)
	}
	sh, err := native.New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sh.Close() })
	return sh
}

// BenchmarkLedgerWrite is one atomic update: lock file, read, temp file, fsync, rename,
// fsync of the directory.
func BenchmarkLedgerWrite(b *testing.B) {
	ctx := context.Background()
	l := benchShell(b).Capabilities().Files
	doc := []byte(`{"mcp-github": {"builtin:chat": ["use"]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Update(ctx, "connectors/grants.json", func([]byte, string) ([]byte, error) { return doc, nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLedgerRead(b *testing.B) {
	ctx := context.Background()
	l := benchShell(b).Capabilities().Files
	if err := l.Update(ctx, "connectors/grants.json", func([]byte, string) ([]byte, error) {
		return []byte(`{"mcp-github": {"builtin:chat": ["use"]}}`), nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := l.Read(ctx, "connectors/grants.json"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockUncontended takes and releases a provider lock nobody else holds.
func BenchmarkLockUncontended(b *testing.B) {
	ctx := context.Background()
	l := benchShell(b).Capabilities().Locks
	b.ReportAllocs()
	for b.Loop() {
		release, err := l.TryLock(ctx, "local", time.Second)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}

func BenchmarkBusEmit(b *testing.B) {
	bus := native.NewBus()
	for range 4 {
		ch, stop := bus.Subscribe(1024)
		b.Cleanup(stop)
		go func() {
			for range ch {
			}
		}()
	}
	e := hostabi.Event{Type: "connector.grant.changed", Payload: json.RawMessage(`{"connector_id":"x"}`)}
	b.ReportAllocs()
	for b.Loop() {
		bus.Emit(e)
	}
}

// BenchmarkKeyring measures the real Secret Service (GRANTWIRE_REAL_KEYRING=1), with the
// read cache off (BenchmarkCacheCheck measures it on).
func BenchmarkKeyring(b *testing.B) {
	requireKeyring(b)
	ctx := context.Background()
	sh := benchShell(b, func(o *native.Options) { o.NoCache = true })
	kr, svc := sh.Capabilities().Keyring, sh.Capabilities().Service
	for _, size := range []int{100, 3000} {
		value := fmt.Sprintf("%0*d", size, 7)
		if err := kr.Set(ctx, svc, "bench:default", value); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("get/%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := kr.Get(ctx, svc, "bench:default"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("set/%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := kr.Set(ctx, svc, "bench:default", value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
