// Command grantwire is grantwire's command line: connect accounts, configure MCP servers,
// grant agents, activate MCP tools, import forwarded connections and hand tokens to
// scripts, with every secret in the OS credential store.
//
// The commands live one group per file (catalog.go, status.go, connect.go, ...); app.go
// builds the client (catalog → engine → OS shell → grantwire.Client) and maps errors to
// the exit codes of the policy's error table. extra.go is the seam where other packages
// add command groups (policy …, serve).
//
// It imports the module's packages and shells/native; nothing imports it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], osEnv())
	stop()
	os.Exit(code)
}
