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
	// A refresh as the core sees it: secrets are descriptions ({"$ref", "digest",
	// "crc32"}), stored values have version tokens, and a leak a buggy shell could cause.
	input := `{"op":"get_access_token","args":{"provider":"google"},"facts":{
		"client@lock":{"found":true,"json":{"client_id":{"$ref":"client@lock#client_id","crc32":"520e6e9a","digest":"sha256:6bc15c3f071d0768"},
			"client_secret":{"$ref":"client@lock#client_secret","crc32":"00000000","digest":"sha256:e3b0c44298fc1c14"}},"version":"1111111111111111"},
		"conn@lock":{"found":true,"json":{"client_id_hash":"520e6e9a","refresh_token":{"$ref":"conn@lock#refresh_token","crc32":"b3bd5f81","digest":"sha256:aaaaaaaaaaaaaaaa"},"scopes":["x"]},"version":"2222222222222222"},
		"refresh":{"status":200,"json":{"refresh_token":{"$ref":"refresh#refresh_token","crc32":"de9a5293","digest":"sha256:bbbbbbbbbbbbbbbb"},"expires_in":3600}},
		"activations":{"found":true,"value":{"version":1}},
		"leak":{"access_token":"at-oops","nested":[{"client_secret":"cs-oops"}]}}}`
	result := `{"status":"done","result":{"access_token":{"$ref":"refresh#access_token"}},
		"effects":[{"kind":"keyring.set","user":"google:default","expect":{"version":"2222222222222222"},
			"value":{"client_id_hash":"520e6e9a","refresh_token":{"$ref":"refresh#refresh_token"}}},
		{"kind":"event.emit","type":"connector.client.changed","payload":{"client_id_hash":"520e6e9a"}}]}`
	r, err := decisionlog.Redact([]byte(input), []byte(result))
	require.NoError(t, err)
	in, out := string(r.Input), string(r.Result)
	for _, secret := range []string{"aaaa", "bbbb", "6bc15c3f", "520e6e9a", "b3bd5f81", "de9a5293", "1111", "2222",
		"at-oops", "cs-oops", "refresh#", "#access_token", "#client_id"} {
		require.NotContains(t, in+out, secret)
	}
	// Equal values share a pseudonym, in input and result alike; distinct ones do not: the
	// client's hash still matches the connection's, the rotated refresh token still
	// differs from the stored one, and the precondition is the version read.
	require.Contains(t, in, `"client_id":{"$ref":"[redacted]","crc32":"[redacted:1]","digest":"[redacted:2]"}`)
	require.Contains(t, in, `"conn@lock":{"found":true,"json":{"client_id_hash":"[redacted:1]","refresh_token":{"$ref":"[redacted]","crc32":"[redacted:4]","digest":"[redacted:5]"},"scopes":["x"]},"version":"[redacted:6]"}`)
	require.Contains(t, in, `"refresh_token":{"$ref":"[redacted]","crc32":"[redacted:7]","digest":"[redacted:8]"}`)
	require.Contains(t, out, `"expect":{"version":"[redacted:6]"}`)
	require.Contains(t, out, `"value":{"client_id_hash":"[redacted:1]","refresh_token":{"$ref":"[redacted]"}}`)
	require.Contains(t, out, `"payload":{"client_id_hash":"[redacted:1]"}`)
	// The description of an empty secret says only that it is empty, and the policy tells
	// empty secrets by that digest: it is kept.
	require.Contains(t, in, `"client_secret":{"$ref":"[redacted]","crc32":"00000000","digest":"sha256:e3b0c44298fc1c14"}`)
	// Numbers named version (the activations ledger's schema version) are kept.
	require.Contains(t, in, `"value":{"version":1}`)
	require.Equal(t, []string{"/input/facts/leak/access_token", "/input/facts/leak/nested/0/client_secret"}, r.Erased)
	require.Contains(t, r.Masked, "/input/facts/conn@lock/version")
	require.Contains(t, r.Masked, "/input/facts/refresh/json/refresh_token/digest")
	require.Contains(t, r.Masked, "/input/facts/conn@lock/json/client_id_hash")
	require.Contains(t, r.Masked, "/result/effects/0/value/refresh_token/$ref")
	require.NotContains(t, r.Masked, "/input/facts/client@lock/json/client_secret/digest")

	// Idempotent: a redacted event redacts to itself.
	again, err := decisionlog.Redact(r.Input, r.Result)
	require.NoError(t, err)
	require.Equal(t, in, string(again.Input))
	require.Equal(t, out, string(again.Result))

	// A new value next to an already redacted input never reuses a pseudonym.
	mixed, err := decisionlog.Redact(r.Input, []byte(`{"version":"3333333333333333"}`))
	require.NoError(t, err)
	require.Equal(t, `{"version":"[redacted:9]"}`, string(mixed.Result))

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
 "input":{"op":"grant","args":{},"facts":{"conn":{"json":{"refresh_token":{"$ref":"conn#refresh_token","digest":"sha256:aaaaaaaaaaaaaaaa"}}}}},"result":{"status":"done","result":{"r":{"$ref":"x#y"},"digest":"sha256:aaaaaaaaaaaaaaaa"},"effects":[]},"time":"2030-01-01T00:00:00Z","type":"openpolicyagent.org/decision_logs"}
{"decision_id":"b","path":"other/rule","input":{},"result":true}
{"decision_id":"c","path":"grantwire/decide","input":{"op":"connections","args":{}}}
{"decision_id":"d","path":"/grantwire/decide","input":"nope","result":{"status":"done","result":{"r":{"$ref":"x#y"},"digest":"sha256:aaaaaaaaaaaaaaaa"},"effects":[]}}
`
	same := fixedEngine{out: `{"status":"done","result":{"r":{"$ref":"x#y"},"digest":"sha256:aaaaaaaaaaaaaaaa"},"effects":[]}`}
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

	other := fixedEngine{out: `{"status":"done","error":{"code":"BUSY","message":"m","fix":""},"effects":[{"kind":"keyring.delete","user":"google:access_token"}]}`}
	rep, err = decisionlog.Replay(ctx, strings.NewReader(log), other)
	require.NoError(t, err)
	require.Len(t, rep.Changes, 2)
	require.Equal(t, "a", rep.Changes[0].DecisionID)
	require.Equal(t, "ok", rep.Changes[0].Before)
	require.Equal(t, "error BUSY [keyring.delete]", rep.Changes[0].After)
	require.Equal(t, []string{"effects", "error", "result"}, rep.Changes[0].What)
	require.NotContains(t, string(rep.Changes[0].Logged), "x#y", "the report is redacted too")
	require.NotContains(t, string(rep.Changes[0].Logged), "aaaa", "the report is redacted too")

	_, err = decisionlog.Replay(ctx, strings.NewReader("{not json"), same)
	require.Error(t, err)
}
