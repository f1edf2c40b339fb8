// Command mcp-keyprobe is a small stdio MCP server (MCP Go SDK) for grantwire's tests of
// `grantwire mcp run`: one tool, key_status, says whether the environment variable named by
// --key-env holds the key whose SHA-256 is --want-sha256, without ever echoing the key; it
// also gives the process id, so a test can read /proc/<pid>/cmdline. On SIGTERM it exits
// with --term-exit (default 0); SIGINT keeps Go's default and kills it, so a test sees both
// a status and a signal passed through grantwire.
//
//	mcp-keyprobe --key-env PROBE_API_KEY --want-sha256 <64 hex> [--term-exit 42] [args…]
//
// Extra arguments are reported back (to check `mcp run … -- extra`). It is test support:
// nothing but tests builds it.
package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// status is key_status's output.
type status struct {
	// Present: the variable is set and not empty. Matches: its SHA-256 is the one wanted.
	Present bool     `json:"present"`
	Matches bool     `json:"matches"`
	PID     int      `json:"pid"`
	Args    []string `json:"args"`
}

func main() {
	keyEnv := flag.String("key-env", "", "the environment variable holding the key")
	want := flag.String("want-sha256", "", "the SHA-256 (hex) of the key it should hold")
	termExit := flag.Int("term-exit", 0, "the exit status on SIGTERM")
	flag.Parse()
	if *keyEnv == "" || len(*want) != 64 {
		fmt.Fprintln(os.Stderr, "usage: mcp-keyprobe --key-env NAME --want-sha256 HEX [--term-exit N] [args…]")
		os.Exit(2)
	}
	wantSum, err := hex.DecodeString(*want)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-keyprobe: --want-sha256 is not hex")
		os.Exit(2)
	}

	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		<-terms
		os.Exit(*termExit)
	}()

	server := mcp.NewServer(&mcp.Implementation{Name: "mcp-keyprobe", Version: "v1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "key_status",
		Description: "Whether this server received its key (compared by SHA-256, never shown), its pid and arguments.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, status, error) {
		key := os.Getenv(*keyEnv)
		sum := sha256.Sum256([]byte(key))
		args := flag.Args()
		if args == nil {
			args = []string{}
		}
		return nil, status{
			Present: key != "",
			Matches: key != "" && subtle.ConstantTimeCompare(sum[:], wantSum) == 1,
			PID:     os.Getpid(),
			Args:    args,
		}, nil
	})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-keyprobe:", err)
		os.Exit(1)
	}
}
