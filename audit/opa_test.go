package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	gwbundle "github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/internal/testworld/audittest"
	"github.com/grantwire/grantwire/internal/testworld/opatest"
)

// logged is the i-th logged event's input and decision, in canonical JSON; every entry has
// a result.
func logged(t *testing.T, i int, e *decisionlog.Event) (input, want []byte) {
	t.Helper()
	require.NotNil(t, e.Result, "entry %d", i+1)
	want, err := decisionlog.Canonical(e.Result)
	require.NoError(t, err)
	input, err = decisionlog.Canonical(e.Input)
	require.NoError(t, err)
	return input, want
}

// The published bundle, run by the opa binary itself on the logged (redacted) inputs,
// gives the logged decisions, as do both of grantwire's engines: the log is replayable
// with OPA's own tools, and five evaluations agree byte for byte (canonical JSON).
func TestLoggedDecisionsUnderOPA(t *testing.T) {
	ctx := context.Background()
	events := readEvents(t, scenarioLog(t))
	full, regoOnly := embeddedBundle(t, false), embeddedBundle(t, true)
	wasmServer, _ := opaServer(t, "-b", wasmOnlyBundle(t, full))
	opaWasm, opa := opaWithWasm(t), opaStock(t)
	cat, err := catalog.Load(nil)
	require.NoError(t, err)
	we, err := wasmengine.New(ctx, wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	defer we.Close(ctx)
	re, err := regoengine.New(ctx, regoengine.WithData(cat.Data()))
	require.NoError(t, err)

	compared := 0
	for i, e := range events {
		// Every entry has a result: a host failure is a fact the policy decides on (the
		// keyring failure of the scenario too).
		input, want := logged(t, i, e)
		name := fmt.Sprintf("entry %d (%s)", i+1, audittest.Steps()[i].Name)
		for _, eng := range []core.Engine{we, re} {
			got, err := eng.DecideJSON(ctx, nil, input)
			require.NoError(t, err)
			require.Equal(t, string(want), redacted(t, input, got), "%s: %s engine", name, eng.Name())
		}
		// OPA's evaluator on the bundle's Rego (an OPA built with WebAssembly support, as
		// release builds are, which a bundle with wasm entrypoints requires) ...
		require.Equal(t, string(want), redacted(t, input, opaEval(t, opaWasm, full, input)), "%s: opa -b bundle", name)
		// ... OPA's WebAssembly runtime on the bundle's policy.wasm (a server, which
		// compiles the module once) ...
		require.Equal(t, string(want), redacted(t, input, postDecide(t, wasmServer, input)), "%s: opa run -b wasm-only bundle", name)
		// ... and the pinned `go tool opa` (no WebAssembly) on the --rego-only bundle.
		require.Equal(t, string(want), redacted(t, input, opaEval(t, opa, regoOnly, input)), "%s: go tool opa -b rego-only bundle", name)
		compared++
	}
	require.Equal(t, len(events), compared)
	require.Equal(t, "INSECURE_STORE", decisionlog.Outcome(events[audittest.HostStep].Result))
}

// An OPA without WebAssembly refuses a bundle with wasm entrypoints; that is why
// `grantwire policy build --rego-only` exists. If this starts passing, the pinned OPA
// gained wasm support and --rego-only can go.
func TestStockOPARefusesWasmBundle(t *testing.T) {
	out, err := exec.Command(opaStock(t), "eval", "-b", embeddedBundle(t, false), "data.grantwire.manifest").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "engine not found")
}

// opaServer runs the pinned OPA built with WebAssembly (opaWithWasm) as `opa run --server`
// on 127.0.0.1 with args, until t ends, once its bundles are active (opatest.StartArgs);
// logs returns what it wrote so far (its console decision log).
func opaServer(t *testing.T, args ...string) (url string, logs func() []byte) {
	t.Helper()
	url, logs, stop, err := opatest.StartArgs(opaWithWasm(t), args...)
	require.NoError(t, err)
	t.Cleanup(stop)
	return url, logs
}

func postDecide(t *testing.T, url string, input []byte) []byte {
	t.Helper()
	body := append(append([]byte(`{"input":`), input...), '}')
	resp, err := http.Post(url+"/v1/data/grantwire/decide", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var res struct {
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
	require.NotNil(t, res.Result)
	return res.Result
}

// `opa run --server -b` serves the bundle, and OPA's bundle service protocol delivers it:
// an OPA server that downloads the bundle from a service on 127.0.0.1 answers
// POST /v1/data/grantwire/decide with the logged decisions, and its own decision log
// (OPA's console logger) names the bundle's revision and replays with no change.
func TestBundleServedByOPA(t *testing.T) {
	ctx := context.Background()
	events := readEvents(t, scenarioLog(t))
	bundle := embeddedBundle(t, false)
	raw, err := os.ReadFile(bundle)
	require.NoError(t, err)
	rb, err := gwbundle.Read(bytes.NewReader(raw))
	require.NoError(t, err)

	direct, _ := opaServer(t, "-b", bundle)

	var fetched int
	var fmu sync.Mutex
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bundles/grantwire.tar.gz" {
			http.NotFound(w, r)
			return
		}
		fmu.Lock()
		fetched++
		fmu.Unlock()
		w.Header().Set("Content-Type", "application/gzip")
		w.Header().Set("ETag", `"`+rb.Revision+`"`)
		_, _ = w.Write(raw)
	}))
	defer svc.Close()
	config := filepath.Join(t.TempDir(), "opa.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`services:
  grantwire-bundles:
    url: %s
bundles:
  grantwire:
    service: grantwire-bundles
    resource: bundles/grantwire.tar.gz
    polling:
      min_delay_seconds: 300
      max_delay_seconds: 600
decision_logs:
  console: true
`, svc.URL)), 0o600))
	served, opaLog := opaServer(t, "--config-file", config)
	fmu.Lock()
	require.GreaterOrEqual(t, fetched, 1, "OPA fetched the bundle from the service")
	fmu.Unlock()

	n := 0
	for i, e := range events {
		input, want := logged(t, i, e)
		require.Equal(t, string(want), redacted(t, input, postDecide(t, direct, input)), "entry %d: opa run -b", i+1)
		require.Equal(t, string(want), redacted(t, input, postDecide(t, served, input)), "entry %d: bundle service", i+1)
		n++
	}
	require.Equal(t, len(events), n)

	// OPA's own decision log, from the server fed by the bundle service: one entry per
	// query, path grantwire/decide, the bundle's revision; replayed by grantwire against
	// the same bundle, nothing changes.
	var opaEntries bytes.Buffer
	deadline := time.Now().Add(10 * time.Second)
	for {
		opaEntries.Reset()
		for _, line := range bytes.Split(opaLog(), []byte("\n")) {
			if bytes.Contains(line, []byte(`"msg":"Decision Log"`)) {
				opaEntries.Write(line)
				opaEntries.WriteByte('\n')
			}
		}
		if bytes.Count(opaEntries.Bytes(), []byte("\n")) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	logged, err := decisionlog.ReadAll(bytes.NewReader(opaEntries.Bytes()))
	require.NoError(t, err)
	require.Len(t, logged, n)
	for _, e := range logged {
		require.Equal(t, "grantwire/decide", e.Path)
		require.Equal(t, rb.Revision, e.Bundles["grantwire"].Revision)
	}
	cat, err := catalog.Load(rb.Catalog)
	require.NoError(t, err)
	cat, err = cat.WithBuiltinAgents(rb.Agents) // the bundle's data, as the OPA server has it
	require.NoError(t, err)
	eng, err := wasmengine.New(ctx, wasmengine.WithModule(rb.Wasm), wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	defer eng.Close(ctx)
	rep, err := decisionlog.Replay(ctx, bytes.NewReader(opaEntries.Bytes()), eng)
	require.NoError(t, err)
	require.Equal(t, n, rep.Replayed)
	require.Empty(t, rep.Changes)
	require.True(t, strings.HasPrefix(rb.Revision, gwbundle.EmbeddedRevision()))
}
