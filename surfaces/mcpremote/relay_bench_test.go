package mcpremote_test

import (
	"bufio"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grantwire/grantwire"
	gwmcp "github.com/grantwire/grantwire/mcp"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/surfaces/mcpremote"
)

type echoArgs struct {
	Text string `json:"text"`
}

// benchServer is a go-sdk MCP server with an echo tool, served on the given pipe ends.
func benchServer(b *testing.B, in *os.File, out *os.File) {
	b.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hidden"}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: in, Writer: out}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ss.Close() })
}

func pipe(b *testing.B) (*os.File, *os.File) {
	b.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

// benchSession connects a go-sdk client to the server over OS pipes (as stdio is), either
// directly or through the relay of `grantwire mcp run` with a tool rule (every tools/call a
// decision of the native engine over the OS shell's ledger files).
func benchSession(b *testing.B, relayed bool) *mcp.ClientSession {
	b.Helper()
	ctx := context.Background()
	toServerR, toServerW := pipe(b)
	fromServerR, fromServerW := pipe(b)
	benchServer(b, toServerR, fromServerW)
	clientIn, clientOut := fromServerR, toServerW
	if relayed {
		clientIn, clientOut = benchRelay(ctx, b, toServerW, fromServerR)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	if want := map[bool]int{false: 2, true: 1}[relayed]; len(tools.Tools) != want {
		b.Fatalf("relayed %v: %d tools listed, want %d", relayed, len(tools.Tools), want)
	}
	return cs
}

var call = &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}

// BenchmarkRelay: one tools/call round trip (a request and its answer: two messages)
// between a go-sdk client and a go-sdk server over OS pipes, directly and through the relay
// (issue 21 §2: added latency per message at p50 ≤ 0.2 ms). p50-µs is the median round
// trip; msgs/s counts both messages of each call.
func BenchmarkRelay(b *testing.B) {
	for _, via := range []string{"direct", "relay"} {
		b.Run("via="+via, func(b *testing.B) {
			cs := benchSession(b, via == "relay")
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				t0 := time.Now()
				if _, err := cs.CallTool(ctx, call); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			b.ReportMetric(2*float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkRelayLines: the relay's own capacity, without an SDK's cost on either side: a
// client writes b.N tools/call lines as fast as the pipe takes them and reads the answers
// of a server that answers each line at once, directly and through the relay (every call a
// decision). msgs/s counts the requests and the answers.
func BenchmarkRelayLines(b *testing.B) {
	req := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n")
	resp := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}` + "\n")
	for _, via := range []string{"direct", "relay"} {
		b.Run("via="+via, func(b *testing.B) {
			ctx := context.Background()
			toServerR, toServerW := pipe(b)
			fromServerR, fromServerW := pipe(b)
			go func() { // the server: one answer per line
				br := bufio.NewReader(toServerR)
				bw := bufio.NewWriter(fromServerW)
				for {
					if _, err := br.ReadSlice('\n'); err != nil {
						return
					}
					_, _ = bw.Write(resp)
					if br.Buffered() == 0 {
						_ = bw.Flush()
					}
				}
			}()
			clientIn, clientOut := fromServerR, toServerW
			if via == "relay" {
				clientIn, clientOut = benchRelay(ctx, b, toServerW, fromServerR)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			go func() {
				bw := bufio.NewWriter(clientOut)
				for range b.N {
					_, _ = bw.Write(req)
				}
				_ = bw.Flush()
			}()
			br := bufio.NewReader(clientIn)
			for range b.N {
				if _, err := br.ReadSlice('\n'); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// benchRelay puts the tool relay (mcp run's and mcp proxy's) between a client and the
// server at toServer/fromServer, on a fresh home whose rule lets builtin:chat call echo
// only; it returns the client's ends: client <-> (relay) <-> server.
func benchRelay(ctx context.Context, b *testing.B, toServer, fromServer *os.File) (*os.File, *os.File) {
	c, err := grantwire.Open(ctx, native.Options{Home: b.TempDir(), Service: "grantwire.bench." + time.Now().Format("150405.000000"), NoWatch: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(ctx) })
	if _, err := gwmcp.Of(c).Tools().Allow(ctx, "mcp-memory", "builtin:chat", []string{"echo"}, []string{"use"}); err != nil {
		b.Fatal(err)
	}
	cIn, relayOut := pipe(b)
	relayIn, cOut := pipe(b)
	gate := &mcpremote.ToolGate{Client: c, Server: "mcp-memory", Agent: "builtin:chat"}
	go func() { _ = mcpremote.RelayStdio(ctx, gate, relayIn, relayOut, toServer, fromServer) }()
	return cIn, cOut
}
