package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

func TestBusDeliversWithoutBlocking(t *testing.T) {
	b := native.NewBus()
	fast, stopFast := b.Subscribe(16)
	slow, stopSlow := b.Subscribe(1)
	for i := range 10 {
		b.Emit(hostabi.Event{Type: "connector.grant.changed", Payload: json.RawMessage(fmt.Sprint(i))})
	}
	require.Len(t, fast, 10)
	require.Len(t, slow, 1, "a full subscriber loses events instead of blocking the emitter")
	require.Equal(t, int64(9), b.Dropped())
	stopSlow()
	stopSlow()
	_, open := <-slow
	require.True(t, open, "buffered events stay readable")
	_, open = <-slow
	require.False(t, open, "the channel closes when the subscription ends")
	b.Emit(hostabi.Event{Type: "x"})
	require.Len(t, fast, 11)
	stopFast()
}

// opsChild runs a list of grant/activation operations on a home, as another grantwire
// process would.
type childOp struct {
	Op     string   `json:"op"`
	C      string   `json:"c"`
	A      string   `json:"a"`
	Scopes []string `json:"scopes,omitempty"`
}

func runOp(ctx context.Context, c *grantwire.Client, o childOp) (changed bool, err error) {
	switch o.Op {
	case "grant":
		r, err := c.Grant(ctx, o.C, o.A, o.Scopes)
		return r.Changed, err
	case "revoke":
		return c.Revoke(ctx, o.C, o.A)
	case "activate":
		r, err := c.Activate(ctx, o.C, o.A, o.Scopes)
		return r.Changed, err
	case "deactivate":
		return c.Deactivate(ctx, o.C, o.A)
	}
	return false, fmt.Errorf("unknown op %q", o.Op)
}

func childOps() error {
	ctx := context.Background()
	c, _, err := childClient(ctx, childOptions(), nil)
	if err != nil {
		return err
	}
	var ops []childOp
	if err := json.Unmarshal([]byte(os.Getenv("GW_OPS")), &ops); err != nil {
		return err
	}
	for _, o := range ops {
		if _, err := runOp(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

func runOps(t *testing.T, home string, ops ...childOp) {
	t.Helper()
	b, _ := json.Marshal(ops)
	out, err := child(t, "ops", "GW_HOME="+home, "GW_OPS="+string(b)).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

type activationEvent struct {
	ConnectorID string `json:"connector_id"`
	AgentID     string `json:"agent_id"`
	Active      bool   `json:"active"`
}

// lastEvent is when collectEvents last received an event.
var lastEvent time.Time

// collectEvents gathers the events of type typ until none arrived for quiet, sorted by
// connector and agent.
func collectEvents[E interface{ pair() string }](t *testing.T, ch <-chan hostabi.Event, typ string, quiet time.Duration) []E {
	t.Helper()
	var out []E
	for {
		select {
		case e := <-ch:
			if e.Type != typ {
				continue
			}
			lastEvent = time.Now()
			var x E
			require.NoError(t, json.Unmarshal(e.Payload, &x))
			out = append(out, x)
		case <-time.After(quiet):
			sort.Slice(out, func(i, j int) bool { return out[i].pair() < out[j].pair() })
			return out
		}
	}
}

func (a activationEvent) pair() string { return a.ConnectorID + a.AgentID }

// collect gathers activation events until none arrived for quiet.
func collect(t *testing.T, ch <-chan hostabi.Event, quiet time.Duration) []activationEvent {
	t.Helper()
	return collectEvents[activationEvent](t, ch, "connector.activation.changed", quiet)
}

// Another process's activation changes reach this process's subscribers within about a
// second; this process's own changes are reported once (by the core), not again by the
// watcher.
func TestWatcherReportsOtherProcessesChanges(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, worldOpts{})
	events, stop := w.shell.Events().Subscribe(0)
	defer stop()

	runOps(t, w.home,
		childOp{Op: "activate", C: "mcp-memory", A: "builtin:a", Scopes: []string{"use"}},
		childOp{Op: "activate", C: "mcp-github", A: "builtin:b", Scopes: []string{"use"}},
	)
	exited := time.Now()
	got := collect(t, events, 500*time.Millisecond)
	require.Equal(t, []activationEvent{
		{"mcp-github", "builtin:b", true},
		{"mcp-memory", "builtin:a", true},
	}, got)
	require.Less(t, lastEvent.Sub(exited), time.Second, "noticed within about a second of the other process's write")

	// Own change: exactly one event.
	_, err := w.client.Deactivate(ctx, "mcp-memory", "builtin:a")
	require.NoError(t, err)
	require.Equal(t, []activationEvent{{"mcp-memory", "builtin:a", false}}, collect(t, events, 500*time.Millisecond))

	// Another program (GAIA, a text editor) rewrites the file, and this process writes
	// right after: each change is reported exactly once.
	acts := filepath.Join(w.home, "connectors", "activations.json")
	doc, err := os.ReadFile(acts)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(doc, &m))
	m["activations"].(map[string]any)["mcp-memory"] = map[string]any{"builtin:c": true}
	b, _ := json.Marshal(m)
	require.NoError(t, os.WriteFile(acts, b, 0o600))
	_, err = w.client.Activate(ctx, "mcp-memory", "builtin:d", []string{"use"})
	require.NoError(t, err)
	require.Equal(t, []activationEvent{
		{"mcp-memory", "builtin:c", true},
		{"mcp-memory", "builtin:d", true},
	}, collect(t, events, 500*time.Millisecond))

	// A deactivation elsewhere, then a corrupt write: the corrupt state reports nothing.
	runOps(t, w.home, childOp{Op: "deactivate", C: "mcp-github", A: "builtin:b"})
	require.Equal(t, []activationEvent{{"mcp-github", "builtin:b", false}}, collect(t, events, 500*time.Millisecond))
	require.NoError(t, os.WriteFile(acts, []byte("{oops"), 0o600))
	require.Empty(t, collect(t, events, 500*time.Millisecond))
}

type grantEvent struct {
	ConnectorID string   `json:"connector_id"`
	AgentID     string   `json:"agent_id"`
	Scopes      []string `json:"scopes"`
}

func (g grantEvent) pair() string { return g.ConnectorID + g.AgentID }

// collectGrants gathers grant events until none arrived for quiet.
func collectGrants(t *testing.T, ch <-chan hostabi.Event, quiet time.Duration) []grantEvent {
	t.Helper()
	return collectEvents[grantEvent](t, ch, "connector.grant.changed", quiet)
}

// Another process's grants reach this process's subscribers within about a second, as
// its activations do; this process's own grants are reported once (by the core).
func TestWatcherReportsOtherProcessesGrants(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, worldOpts{})
	events, stop := w.shell.Events().Subscribe(0)
	defer stop()

	runOps(t, w.home,
		childOp{Op: "grant", C: "local", A: "builtin:a", Scopes: []string{"openid", "email"}},
		childOp{Op: "grant", C: "mcp-github", A: "builtin:b", Scopes: []string{"use"}},
	)
	exited := time.Now()
	require.Equal(t, []grantEvent{
		{"local", "builtin:a", []string{"email", "openid"}},
		{"mcp-github", "builtin:b", []string{"use"}},
	}, collectGrants(t, events, 500*time.Millisecond))
	require.Less(t, lastEvent.Sub(exited), time.Second, "noticed within about a second of the other process's write")

	// Own change: exactly one event.
	_, err := w.client.Grant(ctx, "local", "builtin:a", []string{"openid"})
	require.NoError(t, err)
	require.Equal(t, []grantEvent{{"local", "builtin:a", []string{"openid"}}}, collectGrants(t, events, 500*time.Millisecond))

	// A change of scopes and a revocation elsewhere: the scopes held now, [] when revoked.
	runOps(t, w.home,
		childOp{Op: "grant", C: "local", A: "builtin:a", Scopes: []string{"openid", "mail.read"}},
		childOp{Op: "revoke", C: "mcp-github", A: "builtin:b"},
	)
	require.Equal(t, []grantEvent{
		{"local", "builtin:a", []string{"mail.read", "openid"}},
		{"mcp-github", "builtin:b", []string{}},
	}, collectGrants(t, events, 500*time.Millisecond))

	// Another program rewrites the file, and this process writes right after: each change
	// is reported exactly once. A corrupt write reports nothing.
	grants := filepath.Join(w.home, "connectors", "grants.json")
	require.NoError(t, os.WriteFile(grants, []byte(`{"local": {"builtin:a": ["mail.read", "openid"], "builtin:c": ["email"]}}`), 0o600))
	_, err = w.client.Grant(ctx, "local", "builtin:d", []string{"email"})
	require.NoError(t, err)
	require.Equal(t, []grantEvent{
		{"local", "builtin:c", []string{"email"}},
		{"local", "builtin:d", []string{"email"}},
	}, collectGrants(t, events, 500*time.Millisecond))
	require.NoError(t, os.WriteFile(grants, []byte("{oops"), 0o600))
	require.Empty(t, collectGrants(t, events, 500*time.Millisecond))
}
