package main_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/mcptest"
)

// serverMessages records what a go-sdk client was told by the server.
type serverMessages struct {
	mu                      sync.Mutex
	progress, logs, prompts []string
}

func (m *serverMessages) add(to *[]string, s string) {
	m.mu.Lock()
	*to = append(*to, s)
	m.mu.Unlock()
}
func (m *serverMessages) snapshot() (progress, logs, prompts []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.progress...), append([]string(nil), m.logs...), append([]string(nil), m.prompts...)
}

// clientOptions answer the server's elicitation ("teal") and sampling ("hello") requests
// and record its progress and log notifications.
func (m *serverMessages) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			m.add(&m.progress, r.Params.Message)
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			m.add(&m.logs, fmt.Sprint(r.Params.Data))
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			m.add(&m.prompts, "elicit: "+r.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "teal"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			m.add(&m.prompts, "sample")
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e", Content: &mcp.TextContent{Text: "hello"}}, nil
		},
	}
}

// TestE2ERemoteMCPProxyForwardsServerMessages: every server→client message reaches a
// go-sdk client on the proxy's stdio side, from a go-sdk MCP server over streamable HTTP
// (issue 20 §1.2): on the call's own SSE stream three progress notifications, three log
// messages, an elicitation and a sampling request (answered by the client, the answers
// carried back to the server), and on the standalone SSE stream (the GET the proxy opens
// after initialization; the SDK routes there what the server sends outside any call) three
// more log messages.
func TestE2ERemoteMCPProxyForwardsServerMessages(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, []string{"notes:read"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, stderr, got := w.messagesSession(t, ctx, srv)

	params := &mcp.CallToolParams{Name: "report"}
	params.SetProgressToken("p1")
	res, err := session.CallTool(ctx, params)
	require.NoError(t, err, "stderr: %s", stderr)
	require.False(t, res.IsError, "%+v", res.Content)
	require.Equal(t, "accept: colour teal, word hello", res.Content[0].(*mcp.TextContent).Text,
		"the client's answers reached the server")
	want := []string{"log 1 of 3", "log 2 of 3", "log 3 of 3", "standalone 1 of 3", "standalone 2 of 3", "standalone 3 of 3"}
	require.Eventually(t, func() bool { _, logs, _ := got.snapshot(); return len(logs) == len(want) }, 10*time.Second, 10*time.Millisecond)
	progress, logs, prompts := got.snapshot()
	require.Equal(t, []string{"step 1 of 3", "step 2 of 3", "step 3 of 3"}, progress)
	require.Equal(t, want, logs)
	require.Equal(t, []string{"elicit: Which colour?", "sample"}, prompts)
	require.Empty(t, stderr.String())
	// The proxy still serves after all of it.
	out, err := echo(t, ctx, session, "after the report")
	require.NoError(t, err)
	require.Equal(t, "after the report", out)
}

// TestE2ERemoteMCPProxyResumesTheStandaloneStream: when the server ends the standalone
// stream, the proxy opens it again with Last-Event-ID, and a server that keeps an event
// store (the go-sdk's) replays what it sent meanwhile: the client misses nothing and gets
// nothing twice.
func TestE2ERemoteMCPProxyResumesTheStandaloneStream(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	srv, err := mcptest.Start(mcptest.Options{Issuer: w.srv.URL(), ScopesSupported: []string{"notes:read"}, EventStore: true,
		Verify: func(token string) (mcptest.Token, error) {
			info, err := w.srv.Verify(token)
			return mcptest.Token{Scopes: info.Scopes, Expires: info.Expires, Resource: info.Resource}, err
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, stderr, got := w.messagesSession(t, ctx, srv)
	open := func() bool { return srv.Streams() == 1 }
	announce := func(text string) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "announce", Arguments: map[string]any{"text": text}})
		require.NoError(t, err, "stderr: %s", stderr)
		require.False(t, res.IsError, "%+v", res.Content)
	}
	logs := func() []string { _, l, _ := got.snapshot(); return l }
	announce("before the drop")
	require.Eventually(t, func() bool { return len(logs()) == 1 }, 10*time.Second, 10*time.Millisecond)

	srv.DropStreams()
	require.Eventually(t, func() bool { return srv.Streams() == 0 }, 10*time.Second, 10*time.Millisecond)
	announce("while the stream was down")
	require.Eventually(t, open, 10*time.Second, 10*time.Millisecond, "the proxy reconnects")
	require.Eventually(t, func() bool { return len(logs()) >= 2 }, 10*time.Second, 10*time.Millisecond)
	announce("after the reconnection")
	require.Eventually(t, func() bool { return len(logs()) >= 3 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // a duplicate would arrive now
	require.Equal(t, []string{"before the drop", "while the stream was down", "after the reconnection"}, logs())
	require.Empty(t, stderr.String())
}

// messagesSession serves srv as the remote MCP server notes and opens a proxy session of
// builtin:chat on it that records the server's messages and asks for its info logs; it
// returns once the proxy holds the standalone SSE stream.
func (w *e2e) messagesSession(t *testing.T, ctx context.Context, srv *mcptest.Server) (*mcp.ClientSession, *strings.Builder, *serverMessages) {
	t.Helper()
	w.serveNotes(srv.URL)
	got := &serverMessages{}
	session, stderr := w.proxySessionWith(ctx, "notes", "builtin:chat", got.clientOptions())
	require.NoError(t, session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
	require.Eventually(t, func() bool { return srv.Streams() == 1 }, 10*time.Second, 10*time.Millisecond,
		"the proxy opens the standalone SSE stream (stderr: %s)", stderr)
	return session, stderr, got
}
