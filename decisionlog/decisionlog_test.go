package decisionlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/decisionlog"
)

func TestRedact(t *testing.T) {
	input := `{"op":"get_access_token","args":{"provider":"google"},"facts":{
		"conn":{"refresh":"sha256:aaaaaaaaaaaaaaaa","version":"1111111111111111","scopes":["x"]},
		"conn@lock":{"refresh":"sha256:aaaaaaaaaaaaaaaa","version":"2222222222222222"},
		"refresh":{"status":200,"rotated":true,"refresh":"sha256:bbbbbbbbbbbbbbbb"},
		"activations":{"found":true,"value":{"version":1}},
		"leak":{"access_token":"at-oops","nested":[{"client_secret":"cs-oops"}]}}}`
	result := `{"status":"done","result":{"access_token":{"$ref":"refresh#access_token"}},
		"effects":[{"kind":"connection.set_refresh","refresh":{"$ref":"refresh#refresh_token"},"expect":{"refresh":"sha256:aaaaaaaaaaaaaaaa"}},
		{"kind":"connection.delete","expect":{"version":"2222222222222222"}}]}`
	r, err := decisionlog.Redact([]byte(input), []byte(result))
	require.NoError(t, err)
	in, out := string(r.Input), string(r.Result)
	for _, secret := range []string{"aaaa", "bbbb", "1111", "2222", "at-oops", "cs-oops", "refresh#", "#access_token"} {
		require.NotContains(t, in+out, secret)
	}
	// Equal values share a pseudonym, in input and result alike; distinct ones do not.
	require.Contains(t, in, `"conn":{"refresh":"[redacted:1]","scopes":["x"],"version":"[redacted:2]"}`)
	require.Contains(t, in, `"conn@lock":{"refresh":"[redacted:1]","version":"[redacted:3]"}`)
	require.Contains(t, in, `"refresh":{"refresh":"[redacted:4]","rotated":true,"status":200}`)
	require.Contains(t, out, `"expect":{"refresh":"[redacted:1]"}`)
	require.Contains(t, out, `"expect":{"version":"[redacted:3]"}`)
	require.Contains(t, out, `"refresh":{"$ref":"[redacted]"}`)
	// Numbers named version (the activations ledger's schema version) are kept.
	require.Contains(t, in, `"value":{"version":1}`)
	require.Equal(t, []string{"/input/facts/leak/access_token", "/input/facts/leak/nested/0/client_secret"}, r.Erased)
	require.Contains(t, r.Masked, "/input/facts/conn@lock/refresh")
	require.Contains(t, r.Masked, "/result/effects/0/refresh/$ref")

	// Idempotent: a redacted event redacts to itself.
	again, err := decisionlog.Redact(r.Input, r.Result)
	require.NoError(t, err)
	require.Equal(t, in, string(again.Input))
	require.Equal(t, out, string(again.Result))

	// A new value next to an already redacted input never reuses a pseudonym.
	mixed, err := decisionlog.Redact(r.Input, []byte(`{"version":"3333333333333333"}`))
	require.NoError(t, err)
	require.Equal(t, `{"version":"[redacted:5]"}`, string(mixed.Result))

	_, err = decisionlog.Redact([]byte(`{`), nil)
	require.Error(t, err)
}

func TestLoggerWritesOPAEvents(t *testing.T) {
	var buf bytes.Buffer
	n := 0
	l := decisionlog.New(&buf, decisionlog.WithLabels(map[string]string{"host": "ci"}),
		decisionlog.WithDecisionIDs(func() string { n++; return "id-" + string(rune('0'+n)) }))
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	require.NoError(t, l.Log(decisionlog.Record{
		Op: "grant", Input: json.RawMessage(`{"op":"grant","args":{"connector":"<c>&"},"facts":{},"attempt":0}`),
		Output:   json.RawMessage(`{"status":"done","result":{"changed":true},"effects":[]}`),
		Revision: "sha256:0123456789abcdef@v1", Bundle: "grantwire", Engine: "wasm", Rounds: 1, At: at, Duration: 1500,
	}))
	require.NoError(t, l.Log(decisionlog.Record{
		Op: "connections", Args: json.RawMessage(`{}`), Host: &core.Error{Code: "INSECURE_STORE", Message: "locked"}, At: at,
	}))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 2)
	require.JSONEq(t, `{"labels":{"app":"grantwire","host":"ci","id":"`+decode(t, lines[0])["labels"].(map[string]any)["id"].(string)+`","version":"(devel)"},
		"decision_id":"id-1","revision":"sha256:0123456789abcdef@v1","bundles":{"grantwire":{"revision":"sha256:0123456789abcdef@v1"}},
		"path":"grantwire/decide","input":{"args":{"connector":"<c>&"},"attempt":0,"facts":{},"op":"grant"},
		"result":{"effects":[],"result":{"changed":true},"status":"done"},"timestamp":"2030-01-02T03:04:05.000000006Z",
		"metrics":{"counter_grantwire_rounds":1,"timer_grantwire_operation_ns":1500},
		"custom":{"engine":"wasm","op":"grant","outcome":"ok"}}`, lines[0])
	require.Contains(t, lines[0], `"connector":"<c>&"`, "canonical JSON: no HTML escaping")
	second := decode(t, lines[1])
	require.Equal(t, map[string]any{"op": "connections", "args": map[string]any{}}, second["input"])
	require.NotContains(t, second, "result")
	require.Equal(t, "INSECURE_STORE", second["custom"].(map[string]any)["outcome"])

	events, err := decisionlog.ReadAll(&buf)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, "id-2", events[1].DecisionID)
}

func decode(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &m))
	return m
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestLoggerKeepsWriteErrors(t *testing.T) {
	l := decisionlog.New(failingWriter{})
	require.Error(t, l.Log(decisionlog.Record{Op: "status", Args: json.RawMessage(`{}`)}))
	require.ErrorContains(t, l.Err(), "disk full")
	require.ErrorContains(t, l.Close(), "disk full")
}

// fixedEngine answers every query with the same decision.
type fixedEngine struct{ out string }

func (f fixedEngine) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	return core.DecideTyped(ctx, f, q)
}
func (f fixedEngine) DecideJSON(_ context.Context, dst, _ []byte) ([]byte, error) {
	return append(dst, f.out...), nil
}
func (fixedEngine) Manifest() *core.Manifest    { return &core.Manifest{} }
func (fixedEngine) Name() string                { return "fixed" }
func (fixedEngine) Close(context.Context) error { return nil }

func TestReplaySkipsAndReadsOPALogs(t *testing.T) {
	ctx := context.Background()
	// An OPA console decision log line (extra fields, nothing redacted), an entry of
	// another path, a host failure, and an input this engine does not mind.
	log := `{"decision_id":"a","level":"info","msg":"Decision Log","path":"grantwire/decide","bundles":{"grantwire":{"revision":"r1"}},
 "input":{"op":"grant","args":{},"facts":{"conn":{"refresh":"sha256:aaaaaaaaaaaaaaaa"}}},"result":{"status":"done","result":{"r":{"$ref":"x#y"},"d":"sha256:aaaaaaaaaaaaaaaa"},"effects":[]},"time":"2030-01-01T00:00:00Z","type":"openpolicyagent.org/decision_logs"}
{"decision_id":"b","path":"other/rule","input":{},"result":true}
{"decision_id":"c","path":"grantwire/decide","input":{"op":"connections","args":{}}}
{"decision_id":"d","path":"/grantwire/decide","input":"nope","result":{"status":"done","result":{"r":{"$ref":"x#y"},"d":"sha256:aaaaaaaaaaaaaaaa"},"effects":[]}}
`
	same := fixedEngine{out: `{"status":"done","result":{"r":{"$ref":"x#y"},"d":"sha256:aaaaaaaaaaaaaaaa"},"effects":[]}`}
	rep, err := decisionlog.Replay(ctx, strings.NewReader(log), same)
	require.NoError(t, err)
	require.Equal(t, 4, rep.Entries)
	require.Equal(t, 2, rep.Replayed)
	require.Empty(t, rep.Changes)
	reasons := map[string]string{}
	for _, s := range rep.Skipped {
		reasons[s.DecisionID] = s.Reason
	}
	require.Contains(t, reasons["b"], `path "other/rule"`)
	require.Contains(t, reasons["c"], "host failure")
	require.Len(t, reasons, 2)

	other := fixedEngine{out: `{"status":"done","error":{"code":"BUSY","message":"m","fix":""},"effects":[{"kind":"token.delete"}]}`}
	rep, err = decisionlog.Replay(ctx, strings.NewReader(log), other)
	require.NoError(t, err)
	require.Len(t, rep.Changes, 2)
	require.Equal(t, "a", rep.Changes[0].DecisionID)
	require.Equal(t, "ok", rep.Changes[0].Before)
	require.Equal(t, "error BUSY [token.delete]", rep.Changes[0].After)
	require.Equal(t, []string{"effects", "error", "result"}, rep.Changes[0].What)
	require.NotContains(t, string(rep.Changes[0].Logged), "x#y", "the report is redacted too")

	_, err = decisionlog.Replay(ctx, strings.NewReader("{not json"), same)
	require.Error(t, err)
}
