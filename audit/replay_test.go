package audit_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/internal/testworld/audittest"
)

// The policy change under analysis: a cached token must now stay valid for more than
// five minutes (not one), and a missing connection gets a new error code.
var policyChange = map[string][][2]string{
	"gate/gate.rego": {{"margin_ms := 60000", "margin_ms := 300000"}},
	"errors/errors.rego": {{"not_connected(c, list) := error(\n\t\"NOT_CONNECTED\",", "not_connected(c, list) := error(\n\t\"NOT_LINKED\","},
		{"\"NOT_CONNECTED\": {\"status\": 401, \"exit\": 4},", "\"NOT_CONNECTED\": {\"status\": 401, \"exit\": 4},\n\t\"NOT_LINKED\": {\"status\": 401, \"exit\": 4},"}},
}

var changedOnce once[string]

// changedBundle builds the changed policy into a bundle file.
func changedBundle(t *testing.T) string {
	return changedOnce.get(t, func() (string, error) {
		dir := copyPolicy(t, filepath.Join(shared, "changed"), policyChange)
		b, err := audit.Build(context.Background(), audit.BuildOptions{PolicyDir: dir, Revision: "changed-1"})
		if err != nil {
			return "", err
		}
		path := filepath.Join(shared, "changed.tar.gz")
		return path, os.WriteFile(path, b.Bytes, 0o600)
	})
}

// bundleData is a bundle's data document as an OPA server running it has it: data.catalog
// and data.agents.builtin.
func bundleData(t *testing.T, b *bundle.Bundle) []byte {
	t.Helper()
	cat, err := catalog.Load(b.Catalog)
	require.NoError(t, err)
	cat, err = cat.WithBuiltinAgents(b.Agents)
	require.NoError(t, err)
	return cat.Data()
}

func TestReplayFindsExactlyTheChangedDecisions(t *testing.T) {
	ctx := context.Background()
	logPath := scenarioLog(t)
	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	b, err := bundle.Open(changedBundle(t))
	require.NoError(t, err)
	require.Equal(t, "changed-1", b.Revision)
	data := bundleData(t, b)
	changed, err := wasmengine.New(ctx, wasmengine.WithModule(b.Wasm), wasmengine.WithData(data), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	defer changed.Close(ctx)

	rep, err := decisionlog.Replay(ctx, bytes.NewReader(raw), changed)
	require.NoError(t, err)
	steps := audittest.Steps()
	require.Equal(t, len(steps), rep.Entries)
	// Every entry replays, the keyring failure too: the policy decided it from a host
	// error fact, and decides the same from the logged one.
	require.Equal(t, len(steps), rep.Replayed)
	require.Equal(t, len(steps)-2, rep.Unchanged)
	require.Equal(t, map[string]int{bundle.EmbeddedRevision(): len(steps)}, rep.Revisions)
	require.Empty(t, rep.Skipped)

	require.Len(t, rep.Changes, 2, "exactly the two affected decisions, none of the others")
	expiry, missing := rep.Changes[0], rep.Changes[1]
	// The token with three minutes left was handed out; under a five-minute margin the
	// core would take the lock and refresh instead.
	require.Equal(t, audittest.ExpiryStep+1, expiry.Entry)
	require.Equal(t, "get_access_token", expiry.Op)
	require.Equal(t, "ok", expiry.Before)
	require.True(t, strings.HasPrefix(expiry.After, "need lock.acquire, keyring.get"), expiry.After)
	require.Equal(t, []string{"effects", "needs", "result", "status"}, expiry.What)
	// The missing connection now has another code.
	require.Equal(t, audittest.NotConnectStep+1, missing.Entry)
	require.Equal(t, "error NOT_CONNECTED", missing.Before)
	require.Equal(t, "error NOT_LINKED", missing.After)
	require.Equal(t, []string{"error"}, missing.What)
	require.NotEqual(t, expiry.DecisionID, missing.DecisionID)

	// Against the policy the log was written with, nothing changes: on the embedded
	// wasm, and on the Rego evaluated live by the rego engine.
	same, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	defer same.Close(ctx)
	def, err := catalog.Load(nil)
	require.NoError(t, err)
	live, err := regoengine.New(ctx, regoengine.WithData(def.Data()))
	require.NoError(t, err)
	r1, err := decisionlog.Replay(ctx, bytes.NewReader(raw), same)
	require.NoError(t, err)
	require.Empty(t, r1.Changes)
	require.Equal(t, len(steps), r1.Unchanged)
	r2, err := decisionlog.Replay(ctx, bytes.NewReader(raw), live)
	require.NoError(t, err)
	require.Empty(t, r2.Changes)
	require.Equal(t, len(steps), r2.Unchanged)
}

// OPA itself agrees with the replay: for the logged inputs of the affected decisions,
// the changed bundle under `opa eval -b` gives what the replay said, both from its Rego
// (OPA's evaluator) and from its policy.wasm alone (OPA's WebAssembly runtime).
func TestOPAAgreesWithReplay(t *testing.T) {
	ctx := context.Background()
	events := readEvents(t, scenarioLog(t))
	changedPath := changedBundle(t)
	b, err := bundle.Open(changedPath)
	require.NoError(t, err)
	eng, err := wasmengine.New(ctx, wasmengine.WithModule(b.Wasm), wasmengine.WithData(bundleData(t, b)), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	defer eng.Close(ctx)
	wasmOnly := wasmOnlyBundle(t, changedPath)

	for _, step := range []int{audittest.ExpiryStep, audittest.NotConnectStep} {
		input, err := decisionlog.Canonical(events[step].Input)
		require.NoError(t, err)
		want, err := eng.DecideJSON(ctx, nil, input)
		require.NoError(t, err)
		for _, bundle := range []string{changedPath, wasmOnly} {
			got := opaEval(t, opaWithWasm(t), bundle, input)
			require.Equal(t, redacted(t, input, want), redacted(t, input, got), "step %d, %s", step, filepath.Base(bundle))
		}
		logged, err := decisionlog.Canonical(events[step].Result)
		require.NoError(t, err)
		require.NotEqual(t, string(logged), redacted(t, input, want))
	}
}

func TestReplayCommand(t *testing.T) {
	logPath := scenarioLog(t)
	// What `grantwire policy replay` runs (its command is tested in cmd/grantwire).
	run := func(bundle, dir string) (string, *decisionlog.Report, error) {
		ctx := context.Background()
		e, against, err := audit.ReplayEngine(ctx, bundle, dir, "")
		if err != nil {
			return "", nil, err
		}
		defer e.Close(ctx)
		f, err := os.Open(logPath)
		require.NoError(t, err)
		defer f.Close()
		rep, err := decisionlog.Replay(ctx, f, e)
		require.NoError(t, err)
		var out bytes.Buffer
		audit.WriteReplay(&out, logPath, against, rep)
		return out.String(), rep, nil
	}
	out, rep, err := run(changedBundle(t), "")
	require.NoError(t, err)
	require.Contains(t, out, "against bundle "+changedBundle(t)+" (revision changed-1)")
	require.Contains(t, out, "2 decisions would change:")
	require.Contains(t, out, "get_access_token: error NOT_CONNECTED -> error NOT_LINKED (error differ)")
	require.NotContains(t, out, "skipped", "every entry replays")
	require.Len(t, rep.Changes, 2)

	out, _, err = run("", "")
	require.NoError(t, err)
	require.Contains(t, out, "no decision would change")

	// The Rego of a directory, evaluated live: the same two changes.
	dir := copyPolicy(t, t.TempDir(), policyChange)
	out, _, err = run("", dir)
	require.NoError(t, err)
	require.Contains(t, out, "2 decisions would change:")

	_, _, err = run(changedBundle(t), dir)
	require.ErrorIs(t, err, audit.ErrCombined)
}
