package grantwire_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/grantwire/grantwire/catalog"
	"testing"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
)

// BenchmarkMaintain is the cost of one health pass (the maintain operation serve runs on
// the policy's schedule) over n connections, on the in-memory host so that the figure is
// the core's and the driver's, not a credential store's: every connection listed in
// state.json with a cached access token an hour from expiry, so the pass reads state.json,
// the clock and n token slots, finds nothing due and answers when the next pass is due.
// That is the pass serve runs most (at most every 15 minutes, and after every change).
//
//	go test -run '^$' -bench Maintain -benchmem .
func BenchmarkMaintain(b *testing.B) {
	for _, engine := range []string{grantwire.EngineNative, grantwire.EngineWasm} {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("engine=%s/connections=%d", engine, n), func(b *testing.B) {
				ctx := context.Background()
				c := healthWorld(b, engine, n)
				b.ReportAllocs()
				for b.Loop() {
					p, err := c.Maintain(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if len(p.Connections) != n || p.Connections[0].Action != "none" {
						b.Fatalf("the pass did %+v", p.Connections[0])
					}
				}
			})
		}
	}
}

// healthWorld is a client on a memory world with n OAuth providers, each connected (its
// state.json entry) with an access token cached until an hour from the world's clock.
func healthWorld(b *testing.B, engine string, n int) *grantwire.Client {
	b.Helper()
	ctx := context.Background()
	start := time.Unix(1_790_000_000, 0)
	w := memhost.New(start, 1)
	connectors := map[string]any{}
	state := map[string]any{}
	for i := range n {
		p := fmt.Sprintf("p%03d", i)
		connectors[p] = map[string]any{
			"type": "oauth_pkce", "display_name": p, "tier": "bench",
			"authorization_url": "https://" + p + ".example.com/authorize",
			"token_url":         "https://" + p + ".example.com/token",
			"client_id_env":     "GRANTWIRE_" + fmt.Sprintf("P%03d", i) + "_CLIENT_ID",
			"default_scopes":    []string{"read"}, "available_scopes": []string{"read"},
		}
		state[p] = map[string]any{"configured": true, "account": "user@example.com", "scopes": []string{"read"},
			"connected_at": start.UnixMilli() - 86_400_000, "client_id_hash": "0badc0de", "tenant": nil}
		token, _ := json.Marshal(map[string]any{"access_token": "access-" + p, "expires_at": start.UnixMilli() + 3_600_000,
			"client_id_hash": "0badc0de", "connected_at": start.UnixMilli() - 86_400_000})
		w.SetKeyring("bench", p+":access_token", string(token))
	}
	cat, err := json.Marshal(map[string]any{"connectors": connectors})
	if err != nil {
		b.Fatal(err)
	}
	doc, err := json.Marshal(state)
	if err != nil {
		b.Fatal(err)
	}
	w.SetFile("connectors/state.json", doc)
	c, err := grantwire.New(ctx, grantwire.WithEngineName(engine), grantwire.WithCatalog(catalog.Bytes(cat)),
		grantwire.WithCapabilities(w.Capabilities("bench")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(ctx) })
	return c
}
