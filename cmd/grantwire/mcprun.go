package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/mcp"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/surfaces/mcpremote"
)

// forwardedSignals are passed on to the MCP server `mcp run` started; grantwire itself
// outlives them and exits with the server's status.
var forwardedSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// Exit statuses of `mcp run` when the server cannot be started, as POSIX shells and exec
// wrappers (env, timeout, nohup) report them: every other status is the server's.
const (
	exitCannotRun = 126 // found, but cannot be executed (COMMAND_CANNOT_RUN in the policy's table)
	exitNotFound  = 127 // not found (COMMAND_NOT_FOUND)
)

// exitStatus ends the command with its own status: a server's (mcp run passes it on; 128 +
// the signal that killed it), or a failure reported with a message and a code of its own.
type exitStatus struct {
	code           int
	name, msg, fix string // printed when msg is set
}

func (e *exitStatus) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func (a *app) mcpRunCmd() *cobra.Command {
	var agent string
	var extra []string
	return a.command(spec{
		use:   "run <name> --agent <agent> [-- <extra args>…]",
		short: "Start a local MCP server with its API keys in its environment, for an agent granted and active for it",
		long: `Start the local MCP server <name> (an mcp_server connector) for <agent>, with the API keys
configured for it (grantwire configure <name> --from-stdin) put into its environment from the
credential store. An MCP client starts this command instead of the server itself, so its
configuration holds no secret (grantwire mcp config <name> --agent <agent> prints the entry).

The launch gate decides first (docs/behaviour.md#local-mcp-servers): the agent must hold a
grant for the server AND be active for it, and the server must be configured with every
required key; otherwise nothing starts and the error says which command fixes it. The
command and its arguments are those of mcp_servers.json (the catalog's unless you edited
them); arguments after -- are appended.

The server gets grantwire's stdin, stdout and stderr as they are, so an MCP client talks to
it directly, and grantwire prints nothing on stdout. When the agent's activation has a tool
rule (grantwire activations activate <name> <agent> --tools a,b), grantwire relays the
JSON-RPC stream instead: tools/list shows only those tools, and a tools/call of another is
answered with an error naming the command that allows it. SIGINT, SIGTERM, SIGHUP and SIGQUIT are
passed on to the server; grantwire exits with the server's status (128 + the signal's number
when a signal ended it), 127 when the command is not found and 126 when it cannot be run.
The keys are in no argument, file, log or output: only in the server's environment.`,
		example: `  grantwire mcp run mcp-brave-search --agent builtin:chat
  grantwire mcp run mcp-filesystem --agent builtin:code -- ~/projects
  grantwire mcp config mcp-brave-search --agent builtin:chat   # the entry an MCP client needs`,
		args: func(cmd *cobra.Command, args []string) error {
			before := len(args)
			if at := cmd.ArgsLenAtDash(); at >= 0 {
				before = at
			}
			switch {
			case before == 0:
				return usagef("mcp run needs the name of an MCP server (grantwire mcp list)")
			case before > 1:
				return usagef("mcp run starts one server: pass the server's own arguments after -- (grantwire mcp run %s --agent %s -- %s)", args[0], orAgent(agent), strings.Join(args[1:before], " "))
			}
			return nil
		},
		run: operation[struct{}]{
			parse: func(cmd *cobra.Command, args []string) error {
				extra = []string{}
				if at := cmd.ArgsLenAtDash(); at >= 0 {
					extra = args[at:]
				}
				return a.notRemote(args[0], agent)
			},
			// The server's output is the MCP stream itself: no result is printed.
			call: func(ctx context.Context, c *grantwire.Client, args []string) (struct{}, error) {
				return struct{}{}, a.mcpRun(ctx, c, args[0], agent, extra)
			},
			json: noResult[struct{}],
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&agent, "agent", "", "the agent the server is started for (required)")
			_ = cmd.MarkFlagRequired("agent")
		},
	})
}

func orAgent(agent string) string {
	if agent == "" {
		return "<agent>"
	}
	return agent
}

// notRemote refuses to run a remote MCP server of the catalog (mcp proxy bridges it).
func (a *app) notRemote(name, agent string) error {
	if cat, err := a.Catalog(); err == nil {
		if e, ok := cat.Entry(name); ok && e.Type == catalog.TypeMCPRemote {
			return usagef("%s is a remote MCP server: grantwire mcp proxy %s --agent %s bridges it to stdio", name, name, agent)
		}
	}
	return nil
}

// mcpRun asks the launch gate, starts the server with its environment and waits for it,
// passing signals on.
func (a *app) mcpRun(ctx context.Context, c *grantwire.Client, name, agent string, extra []string) error {
	l, err := mcp.Of(c).Launch(ctx, name, agent)
	if err != nil {
		return err
	}
	if l.Type == catalog.TypeMCPRemote { // a remote server a person added (mcp add)
		return usagef("%s is a remote MCP server: grantwire mcp proxy %s --agent %s bridges it to stdio", name, name, agent)
	}
	if l.Type != catalog.TypeMCPServer {
		return usagef("%s is not a local MCP server (type %s)", name, l.Type)
	}
	path, err := a.LookPath(l.Command)
	if err != nil {
		name, code := "COMMAND_NOT_FOUND", exitNotFound
		if !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, os.ErrNotExist) {
			name, code = "COMMAND_CANNOT_RUN", exitCannotRun
		}
		return &exitStatus{code: a.exitFor(ctx, name, code), name: name,
			msg: fmt.Sprintf("cannot start %s: the command %q is not on PATH or cannot be run (%v); install it, or set the server's command in %s",
				name, l.Command, unwrapPath(err), filepath.Join(a.home, "mcp_servers.json")),
			fix: "grantwire mcp list"}
	}

	// Signals are caught before the server starts, so none is lost in between.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	if ctx.Err() != nil {
		return ctx.Err()
	}

	// A tool rule for the pair: grantwire relays the JSON-RPC stream and applies it
	// (docs/behaviour.md#tools). Without one the server gets grantwire's stdio as it is.
	rules, err := mcp.Of(c).Tools().Rules(ctx, name)
	if err != nil {
		return err
	}
	_, relayed := rules[name][agent]

	srv := exec.Command(path, append(append([]string{}, l.Args...), extra...)...)
	srv.Env = l.Environ(os.Environ())
	srv.Stdin, srv.Stdout, srv.Stderr = a.Stdin, a.Stdout, a.Stderr
	var toServer, fromServer *os.File
	if relayed {
		var serverIn, serverOut *os.File
		if serverIn, toServer, err = os.Pipe(); err == nil {
			fromServer, serverOut, err = os.Pipe()
		}
		if err != nil {
			return fmt.Errorf("mcp run: a pipe for the relay: %w", err)
		}
		srv.Stdin, srv.Stdout = serverIn, serverOut
		defer serverIn.Close()
		defer serverOut.Close()
	}
	err = srv.Start()
	clear(l.Env)
	srv.Env = nil
	if err != nil {
		return &exitStatus{code: a.exitFor(ctx, "COMMAND_CANNOT_RUN", exitCannotRun), name: "COMMAND_CANNOT_RUN",
			msg: fmt.Sprintf("cannot start %s: %s: %v", name, path, unwrapPath(err)), fix: "grantwire mcp list"}
	}
	relayDone := make(chan error, 1)
	if relayed {
		// The server has its ends of the pipes; grantwire keeps its own.
		srv.Stdin.(*os.File).Close()
		srv.Stdout.(*os.File).Close()
		gate := &mcpremote.ToolGate{Client: c, Server: name, Agent: agent}
		go func() {
			defer fromServer.Close()
			relayDone <- mcpremote.RelayStdio(context.WithoutCancel(ctx), gate, a.Stdin, a.Stdout, toServer, fromServer)
		}()
	} else {
		relayDone <- nil
		// The server runs for as long as the client keeps it: give back the policy engine,
		// the credential store's connection and the values' memory now (a relay keeps the
		// engine: it decides every tool call).
		a.close(context.WithoutCancel(ctx))
	}
	debug.FreeOSMemory()

	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = srv.Process.Signal(s)
		case err := <-done:
			if rerr := <-relayDone; rerr != nil && err == nil {
				fmt.Fprintf(a.Stderr, "grantwire: mcp run: the relay: %v\n", rerr)
			}
			return serverStatus(err)
		}
	}
}

// serverStatus is the exit status that passes the server's on: its own, or 128 + the
// number of the signal that ended it.
func serverStatus(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &exitStatus{code: 128 + int(ws.Signal())}
		}
		return &exitStatus{code: ee.ExitCode()}
	}
	return err // copying a stream that is not a file failed
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// mcpEntry is one server of an MCP client's configuration (Claude Desktop, Cursor, VS Code).
type mcpEntry struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// mcpClientFormat is the shape one MCP client reads a stdio server in, as its documentation
// describes it; cmd/grantwire/testdata/mcpconfig holds a JSON Schema of each, written from
// that page, which the tests check every format's output against.
type mcpClientFormat struct {
	key   string // the member that maps server names to entries
	typed bool   // an entry names its transport ("type": "stdio")
	where string // where the client reads it, for the hint on a terminal
}

// mcpClientFormats are the formats of mcp config --format. Claude Desktop
// (modelcontextprotocol.io's user quickstart) and Cursor (cursor.com/docs/mcp) read
// "mcpServers" entries of command, args and env; VS Code
// (code.visualstudio.com/docs/copilot/reference/mcp-configuration) reads "servers", whose
// stdio entries must say "type": "stdio".
var mcpClientFormats = map[string]mcpClientFormat{
	"claude": {key: "mcpServers", where: "Claude Desktop: claude_desktop_config.json"},
	"cursor": {key: "mcpServers", where: "Cursor: ~/.cursor/mcp.json, or .cursor/mcp.json in a project"},
	"vscode": {key: "servers", typed: true, where: "VS Code: .vscode/mcp.json, or MCP: Open User Configuration"},
}

func mcpFormatNames() string {
	names := make([]string, 0, len(mcpClientFormats))
	for n := range mcpClientFormats {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func (a *app) mcpConfigCmd() *cobra.Command {
	var agent, format, exe string
	return a.command(spec{
		use:   "config <name>… --agent <agent> [--format claude|cursor|vscode] [--json]",
		short: "Print the configuration an MCP client needs to use servers through grantwire (no secret)",
		long: `Print the JSON an MCP client reads, in its own shape (--format): claude (the default) and
cursor print "mcpServers" entries of command and args, as Claude Desktop's
claude_desktop_config.json and Cursor's mcp.json hold them; vscode prints "servers" entries
with "type": "stdio", as VS Code's .vscode/mcp.json holds them. There is one entry per server
named: a local server (mcp_server) runs through grantwire mcp run <name>
--agent <agent>, a remote one (mcp_remote) through grantwire mcp proxy <name> --agent <agent>,
each with the absolute path of this grantwire binary and the --home, --keyring-service,
--catalog, --bundle and --engine this command was given (when not the defaults). The
configuration therefore holds no secret: grantwire reads the keys from the credential store
each time the client starts the server, and the launch gate decides each time.

An agent that may not use a server yet (no grant, not active, not configured) gets its entry
anyway, with a warning on stderr that says what to run first. --json prints the same JSON,
and warnings as JSON lines on stderr.`,
		example: `  grantwire mcp config mcp-brave-search --agent builtin:chat
  grantwire mcp config mcp-brave-search mcp-github --agent builtin:chat > mcp.json
  grantwire mcp config mcp-github --agent builtin:code --format vscode > .vscode/mcp.json
  jq -s '.[0] * .[1]' ~/.cursor/mcp.json <(grantwire mcp config mcp-github --agent builtin:code)`,
		args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("mcp config needs the name of at least one MCP server (grantwire mcp list)")
			}
			if _, ok := mcpClientFormats[format]; !ok {
				return usagef("mcp config --format is one of %s, not %q", mcpFormatNames(), format)
			}
			return nil
		},
		run: operation[mcpClientConfig]{
			parse: func(*cobra.Command, []string) (err error) {
				if exe, err = a.invokedPath(); err != nil {
					return fmt.Errorf("cannot find the path of this grantwire binary: %w", err)
				}
				return nil
			},
			call: func(ctx context.Context, c *grantwire.Client, names []string) (mcpClientConfig, error) {
				return a.mcpConfig(ctx, c, exe, names, agent, mcpClientFormats[format])
			},
			// The configuration is JSON with or without --json: the document an MCP client reads.
			json:   func(cfg mcpClientConfig, _ []string) any { return cfg.doc },
			render: func(cfg mcpClientConfig, _ []string) error { return a.printJSON(cfg.doc) },
			then: func(cfg mcpClientConfig, _ []string) error {
				a.warnAll(cfg.warnings)
				if !a.jsonOut && a.StdoutTTY {
					fmt.Fprintf(a.Stderr, "Merge this into your MCP client's configuration (%s).\n", cfg.format.where)
				}
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&agent, "agent", "", "the agent the servers are started for (required)")
			cmd.Flags().StringVar(&format, "format", "claude", "the MCP client's configuration shape: "+mcpFormatNames())
			_ = cmd.MarkFlagRequired("agent")
		},
	})
}

// invokedPath is the path the user runs this binary by (issue 20 §1.15): the command as
// found on PATH (or the path given, made absolute) when it is this binary, so that an
// entry does not pin a versioned install path a symlink points at; else the executable.
func (a *app) invokedPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	self, err := os.Stat(exe)
	if err != nil {
		return exe, nil
	}
	name := os.Args[0]
	var candidate string
	if strings.ContainsRune(name, filepath.Separator) {
		candidate, _ = filepath.Abs(name)
	} else if a.LookPath != nil {
		candidate, _ = a.LookPath(name)
		if candidate != "" {
			candidate, _ = filepath.Abs(candidate)
		}
	}
	if candidate != "" {
		if st, err := os.Stat(candidate); err == nil && os.SameFile(st, self) {
			return candidate, nil
		}
	}
	return exe, nil
}

// mcpClientConfig is what mcp config prints: the document in the client's format, and
// the warnings of servers that would refuse to start.
type mcpClientConfig struct {
	doc      map[string]any
	warnings []string
	format   mcpClientFormat
}

func (a *app) mcpConfig(ctx context.Context, c *grantwire.Client, exe string, names []string, agent string, format mcpClientFormat) (mcpClientConfig, error) {
	servers := map[string]mcpEntry{}
	var warnings []string
	for _, name := range names {
		r, err := mcp.Of(c).CheckLaunch(ctx, name, agent)
		if err != nil {
			return mcpClientConfig{}, err
		}
		bridge := "run"
		if r.Type == catalog.TypeMCPRemote {
			bridge = "proxy"
		}
		entry := mcpEntry{Command: exe, Args: append(a.globalArgs(), "mcp", bridge, name, "--agent", agent)}
		if format.typed {
			entry.Type = "stdio"
		}
		servers[name] = entry
		if !r.Ready && r.Refusal != nil {
			warnings = append(warnings, readinessWarning(name, agent, r.Refusal))
		}
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		warnings = append(warnings, fmt.Sprintf("%s is a temporary build of go run and will be gone; install grantwire (go build -o ~/bin/grantwire ./cmd/grantwire) and run mcp config with it", exe))
	}
	sort.Strings(warnings)
	return mcpClientConfig{doc: map[string]any{format.key: servers}, warnings: warnings, format: format}, nil
}

func readinessWarning(name, agent string, e *grantwire.Error) string {
	msg := fmt.Sprintf("%s will refuse to start for %s until you run: %s (%s)", name, agent, e.Fix, e.Summary)
	if e.Fix == "" {
		msg = fmt.Sprintf("%s will refuse to start for %s: %s", name, agent, e.Summary)
	}
	return msg
}

// globalArgs are the global flags that make a later grantwire find this one's home,
// credential-store service, catalog, bundle and engine, when they are not the defaults.
func (a *app) globalArgs() []string {
	var out []string
	home := a.userHome()
	if home == "" || a.home != filepath.Join(home, native.HomeDirName) {
		out = append(out, "--home", a.home)
	}
	if a.service != native.ServiceFor(a.home, home) {
		out = append(out, "--keyring-service", a.service)
	}
	if a.catalogPath != "" {
		out = append(out, "--catalog", absPath(a.catalogPath))
	}
	if a.bundlePath != "" {
		out = append(out, "--bundle", absPath(a.bundlePath))
	}
	if a.engineName != defaultEngine {
		out = append(out, "--engine", a.engineName)
	}
	return out
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
