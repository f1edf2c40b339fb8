// Command grantwire is grantwire's command line: connect accounts, configure MCP servers,
// grant agents, activate MCP tools, import forwarded connections and hand tokens to
// scripts, with every secret in the OS credential store.
//
// The commands are rows of one table (command.go: a spec of help, arguments and flags, its
// body an operation: parse → call the client → render text or --json), one theme per file
// (catalog.go: catalog and status; connect.go: connect and disconnect; pairs.go: grants
// and activations; mcpremote.go and mcprun.go: the mcp commands; ...); app.go
// builds the client (catalog → engine → OS shell → grantwire.Client) and maps errors to
// the exit codes of the policy's error table; engine.go is the table of engines. extra.go
// is the seam where command groups are added (policy …, serve).
//
// Two builds: the default one links no OPA package (TestBinaryLinksNoOPA); the OPA build,
// go build -tags opa, adds the policy commands (policy.go, on package audit) and the rego
// engine (engine_rego.go). opabuild.go names what only the OPA build has.
//
// It imports the module's packages and shells/native; nothing imports it.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	// A command lives for a few decisions and allocates a few MB while it starts the
	// policy: collecting garbage less often saves about a sixth of its CPU time
	// (BENCHMARKS.md). GOGC in the environment still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], osEnv())
	stop()
	os.Exit(code)
}
