package mcpremote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
)

// fakeRules stands in for the policy: a rule listing names, or (rule nil) no rule.
type fakeRules struct {
	rule  map[string]bool
	asked []string
}

func (f *fakeRules) allow(_ context.Context, tool string) error {
	f.asked = append(f.asked, tool)
	if f.rule == nil || f.rule[tool] {
		return nil
	}
	return &grantwire.Error{Code: "TOOL_NOT_ALLOWED", Message: "agent a may not use tool " + tool + "; fix: grantwire activations activate c a --tools x," + tool,
		Fix: "grantwire activations activate c a --tools x," + tool}
}

func (f *fakeRules) visible(_ context.Context, names []string) (map[string]bool, bool, error) {
	out := map[string]bool{}
	for _, n := range names {
		if f.rule == nil || f.rule[n] {
			out[n] = true
		}
	}
	return out, f.rule != nil, nil
}

const listAnswer = `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"add"},{"name":"bad\"name"},{"nameless":1}],"nextCursor":"c1"}}`

func TestRelayFiltersTheListAndRefusesACall(t *testing.T) {
	ctx := context.Background()
	r := newRelay(&fakeRules{rule: map[string]bool{"echo": true}})

	// a tools/list request is passed on as sent, and its answer filtered
	req := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	fwd, answers := r.fromClient(ctx, req)
	require.Equal(t, req, fwd)
	require.Empty(t, answers)
	var got struct {
		ID     int `json:"id"`
		Result struct {
			Tools      []map[string]any `json:"tools"`
			NextCursor string           `json:"nextCursor"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(r.fromServer(ctx, []byte(listAnswer)), &got))
	require.Equal(t, 2, got.ID)
	require.Len(t, got.Result.Tools, 1)
	require.Equal(t, "echo", got.Result.Tools[0]["name"])
	require.Equal(t, map[string]any{"type": "object"}, got.Result.Tools[0]["inputSchema"], "a tool is kept whole")
	require.Equal(t, "c1", got.Result.NextCursor, "the result's other members are kept")

	// the same answer again is not a list answer any more: passed on as it is
	require.Equal(t, []byte(listAnswer), r.fromServer(ctx, []byte(listAnswer)))

	// a refused call is answered with the fix and not forwarded; an allowed one is
	call := []byte(`{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{"name":"add","arguments":{}}}`)
	fwd, answers = r.fromClient(ctx, call)
	require.Nil(t, fwd)
	require.Len(t, answers, 1)
	var refused struct {
		ID    string `json:"id"`
		Error struct {
			Code    int               `json:"code"`
			Message string            `json:"message"`
			Data    map[string]string `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(answers[0], &refused))
	require.Equal(t, "c-7", refused.ID)
	require.Equal(t, CodeToolRefused, refused.Error.Code)
	require.Contains(t, refused.Error.Message, "TOOL_NOT_ALLOWED")
	require.Contains(t, refused.Error.Message, "grantwire activations activate c a --tools x,add")
	require.Equal(t, "grantwire activations activate c a --tools x,add", refused.Error.Data["fix"])
	ok := []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"}}`)
	fwd, answers = r.fromClient(ctx, ok)
	require.Equal(t, ok, fwd)
	require.Empty(t, answers)
}

func TestRelayWithoutARuleChangesNothing(t *testing.T) {
	ctx := context.Background()
	r := newRelay(&fakeRules{})
	fwd, _ := r.fromClient(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	require.NotNil(t, fwd)
	require.Equal(t, []byte(listAnswer), r.fromServer(ctx, []byte(listAnswer)), "every tool, a nameless one too, byte for byte")
}

func TestRelayJudgesBatchesAndOddNames(t *testing.T) {
	ctx := context.Background()
	f := &fakeRules{rule: map[string]bool{"echo": true}}
	r := newRelay(f)
	batch := []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}},{"jsonrpc":"2.0","method":"notifications/x"}]`)
	fwd, answers := r.fromClient(ctx, batch)
	require.Len(t, answers, 1, "the refused call of a batch is answered")
	var kept []map[string]any
	require.NoError(t, json.Unmarshal(fwd, &kept))
	require.Len(t, kept, 2, "the rest of the batch goes on")

	// a name the policy cannot be asked about is asked about as a placeholder
	_, answers = r.fromClient(ctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a\"b\\c\u0001"}}`))
	require.Len(t, answers, 1)
	require.Equal(t, "a?b?c?", f.asked[len(f.asked)-1])

	// a call without a name is the server's to answer
	noName := []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}`)
	fwd, _ = r.fromClient(ctx, noName)
	require.Equal(t, noName, fwd)
}

func TestRelayPassesMalformedFramesOn(t *testing.T) {
	ctx := context.Background()
	r := newRelay(&fakeRules{rule: map[string]bool{}})
	for _, line := range []string{"not json", "{", "[]", "[1,2]", "42", `"x"`, "\xff\xfe", `{"id":1,"method":"tools/call","params":"x"}`} {
		fwd, answers := r.fromClient(ctx, []byte(line))
		require.Equal(t, []byte(line), fwd, "%q", line)
		require.Empty(t, answers)
		require.Equal(t, []byte(line), r.fromServer(ctx, []byte(line)))
	}
}

// A whole conversation through relayStdio: the server side is a fake MCP server answering
// tools/list and echoing calls.
func TestRelayStdio(t *testing.T) {
	clientIn, clientW := io.Pipe()
	clientR, clientOut := io.Pipe()
	serverIn, serverInW := io.Pipe()
	serverOutR, serverOut := io.Pipe()
	go func() { // the server
		defer serverOut.Close()
		sc := bufio.NewScanner(serverIn)
		for sc.Scan() {
			var m frame
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				_, _ = io.WriteString(serverOut, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`+"\n")
				continue
			}
			switch m.Method {
			case "tools/list":
				_, _ = io.WriteString(serverOut, strings.Replace(listAnswer, `"id":2`, `"id":`+string(m.ID), 1)+"\n")
			case "tools/call":
				_, _ = io.WriteString(serverOut, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[]}}`+"\n")
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		done <- relayStdio(context.Background(), &fakeRules{rule: map[string]bool{"echo": true}}, clientIn, clientOut, serverInW, serverOutR)
	}()
	out := bufio.NewScanner(clientR)
	send := func(s string) string {
		_, err := io.WriteString(clientW, s+"\n")
		require.NoError(t, err)
		require.True(t, out.Scan())
		return out.Text()
	}
	require.NotContains(t, send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), `"add"`)
	require.Contains(t, send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add"}}`), "TOOL_NOT_ALLOWED")
	require.Contains(t, send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}`), `"result"`)
	require.Contains(t, send(`garbage`), "parse error", "the server answers a malformed frame, which reached it")
	require.NoError(t, clientW.Close())
	require.NoError(t, <-done)
	require.NoError(t, clientOut.Close())
}

func TestEachLineHandlesLongAndUnterminatedLines(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	var got []string
	require.NoError(t, eachLine(strings.NewReader(long+"\nshort\nlast"), func(b []byte) error {
		got = append(got, string(b))
		return nil
	}))
	require.Equal(t, []string{long + "\n", "short\n", "last"}, got)
	err := eachLine(strings.NewReader("a\n"), func([]byte) error { return io.ErrUnexpectedEOF })
	require.True(t, errors.Is(err, io.ErrUnexpectedEOF))
}

type bufCloser struct{ bytes.Buffer }

func (b *bufCloser) Close() error { return nil }

// The proxy's reader of the client's stream: a line that is not JSON-RPC is answered with a
// parse error (id null) and the stream goes on; every message is passed on as it came.
func TestFrameFilterAnswersMalformedLinesAndLosesNothing(t *testing.T) {
	good1 := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n"
	good2 := `[{"jsonrpc":"2.0","method":"notifications/initialized"}]` + "\n"
	in := io.NopCloser(strings.NewReader("garbage\n" + good1 + "[]\n{\"jsonrpc\":\"2.0\"}\n" + good2 + "\n"))
	var out bufCloser
	var reports []error
	f := newFrameFilter(in, &out, func(err error) { reports = append(reports, err) })
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, good1+good2+"\n", string(got))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3, "one parse error per malformed line")
	for _, l := range lines {
		var e struct {
			ID    any `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		require.Nil(t, e.ID)
		require.Equal(t, -32700, e.Error.Code)
		require.Contains(t, e.Error.Message, "not a JSON-RPC message was not forwarded")
	}
	require.Len(t, reports, 3)
}

// FuzzRelayFrame feeds arbitrary lines to the relay's frame parser in both directions:
// it never panics, without a rule it passes every line on byte for byte, and under a rule
// whatever it forwards or answers is the line itself or valid JSON.
func FuzzRelayFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, listAnswer,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"add"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"}},{"jsonrpc":"2.0","method":"n"}]`,
		`[]`, `{`, `null`, "\xff", `{"id":null,"result":{"tools":"x"}}`, `{"id":1,"result":{"tools":[1,{"name":2}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ctx := context.Background()
		open := newRelay(&fakeRules{})
		fwd, answers := open.fromClient(ctx, line)
		if !bytes.Equal(fwd, line) || len(answers) != 0 {
			t.Fatalf("without a rule %q became %q %q", line, fwd, answers)
		}
		open.lists[`1`] = true
		if got := open.fromServer(ctx, line); !bytes.Equal(got, line) {
			t.Fatalf("without a rule the answer %q became %q", line, got)
		}
		ruled := newRelay(&fakeRules{rule: map[string]bool{"echo": true}})
		fwd, answers = ruled.fromClient(ctx, line)
		if fwd != nil && !bytes.Equal(fwd, line) && !json.Valid(fwd) {
			t.Fatalf("forwarded invalid JSON %q for %q", fwd, line)
		}
		for _, a := range answers {
			if !json.Valid(a) {
				t.Fatalf("answered invalid JSON %q for %q", a, line)
			}
		}
		ruled.lists[`1`] = true
		if got := ruled.fromServer(ctx, line); !bytes.Equal(got, line) && !json.Valid(got) {
			t.Fatalf("gave the client invalid JSON %q for %q", got, line)
		}
		// The proxy's reader passes the line on or answers it, never both, never neither.
		if bytes.ContainsRune(line, '\n') {
			return
		}
		var out bufCloser
		got, err := io.ReadAll(newFrameFilter(io.NopCloser(bytes.NewReader(append(append([]byte{}, line...), '\n'))), &out, nil))
		if err != nil {
			t.Fatal(err)
		}
		passed, answered := len(got) > 0, out.Len() > 0
		if passed == answered || (passed && !bytes.Equal(got, append(append([]byte{}, line...), '\n'))) {
			t.Fatalf("%q: passed %q, answered %q", line, got, out.String())
		}
	})
}
