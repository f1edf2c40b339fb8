package postgres_test

import (
	"context"
	"encoding/json"
	"github.com/grantwire/grantwire/internal/oprun"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/pgtest"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/shells/postgres"
)

// machine is a grantwire client as grantwire.Open wires one, on the PostgreSQL shell laid
// over an OS shell of its own (its own home directory, which stays empty, its own event
// bus): the watcher's changes go to the policy's grant_changes and activation_changes.
type machine struct {
	client *grantwire.Client
	events <-chan hostabi.Event
}

func newMachine(t *testing.T, db, keyFile string) *machine {
	t.Helper()
	ctx := context.Background()
	osShell, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = osShell.Close() })
	var cl atomic.Pointer[grantwire.Client]
	changes := func(f func(c *grantwire.Client, ctx context.Context, before, after json.RawMessage) error) func(before, after json.RawMessage) {
		return func(before, after json.RawMessage) {
			if c := cl.Load(); c != nil {
				_ = f(c, ctx, before, after)
			}
		}
	}
	st := open(t, db, postgres.Options{Home: "team", KeyFile: keyFile,
		ActivationChanges: changes(opChanges("activation_changes")),
		GrantChanges:      changes(opChanges("grant_changes"))})
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(st.Capabilities(osShell.Capabilities())),
		grantwire.WithEngineName(grantwire.EngineNative))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(ctx) })
	cl.Store(c)
	events, stop := osShell.Events().Subscribe(16)
	t.Cleanup(stop)
	return &machine{client: c, events: events}
}

// TestMachinesShareGrants: two machines (clients with their own OS shells and PostgreSQL
// connections) on one store home: a grant made on one is an event on the other's bus (the
// policy's connector.grant.changed, as the OS shell's watcher gives for another process),
// and a revoke on one is seen by the other's very next call.
func TestMachinesShareGrants(t *testing.T) {
	db := pgtest.Database(t, pkg)
	kf := writeKeyFile(t, t.TempDir())
	a, b := newMachine(t, db, kf), newMachine(t, db, kf)
	ctx := context.Background()
	const scope = "https://www.googleapis.com/auth/gmail.readonly"
	start := time.Now()
	_, err := b.client.Grant(ctx, "google", "builtin:email", []string{scope})
	require.NoError(t, err)
	select {
	case ev := <-a.events:
		require.Equal(t, "connector.grant.changed", ev.Type)
		require.JSONEq(t, `{"agent_id":"builtin:email","connector_id":"google","scopes":["`+scope+`"]}`, string(ev.Payload))
		t.Logf("a grant on machine B was an event on machine A after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("machine A saw no event of machine B's grant")
	}
	grants, err := a.client.ListGrants(ctx, "google")
	require.NoError(t, err)
	require.Equal(t, []string{scope}, grants["google"]["builtin:email"])
	select {
	case ev := <-b.events:
		require.Equal(t, "connector.grant.changed", ev.Type, "B's own event comes from its core, once")
	case <-time.After(5 * time.Second):
		t.Fatal("machine B emitted no event of its own grant")
	}

	changed, err := a.client.Revoke(ctx, "google", "builtin:email")
	require.NoError(t, err)
	require.True(t, changed)
	grants, err = b.client.ListGrants(ctx, "google")
	require.NoError(t, err)
	require.Empty(t, grants["google"], "the revoke on A is seen by B's very next call")
}

// opChanges runs the policy's activation_changes or grant_changes on a client.
func opChanges(op string) func(*grantwire.Client, context.Context, json.RawMessage, json.RawMessage) error {
	return func(c *grantwire.Client, ctx context.Context, before, after json.RawMessage) error {
		_, err := oprun.Of(c).Run(ctx, op, map[string]any{"before": before, "after": after}, nil, nil)
		return err
	}
}
