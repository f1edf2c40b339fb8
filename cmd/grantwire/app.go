package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/grantwire/grantwire/internal/oprun"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/opaserver"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/safetext"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/shells/postgres"
)

// Shell is what the CLI needs of an OS shell (shells/native.Shell satisfies it).
type Shell interface {
	Capabilities() hostabi.Capabilities
	Close() error
}

// env is everything the CLI takes from its process: streams, terminals, environment, the
// OS shell and the browser. main uses osEnv; tests inject an in-memory world here.
type env struct {
	Stdin                          io.Reader
	Stdout, Stderr                 io.Writer
	StdinTTY, StdoutTTY, StderrTTY bool
	Getenv                         func(string) string
	// NewShell opens the OS shell (native.New).
	NewShell func(native.Options) (Shell, error)
	// Browser returns the function that opens a URL, or nil when this session has none.
	Browser func(getenv func(string) string) func(string) error
	// LookPath finds a command on PATH (exec.LookPath).
	LookPath func(string) (string, error)
	// ReadPassword reads one line from the terminal without echo.
	ReadPassword func() (string, error)
	// UserHome is the user's home directory (os.UserHomeDir).
	UserHome func() (string, error)
	// CacheDir is the user's cache directory (os.UserCacheDir), where the compiled policy
	// is kept; nil or an error means none.
	CacheDir func() (string, error)
}

func osEnv() env {
	return env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		StdinTTY: isTerminal(os.Stdin), StdoutTTY: isTerminal(os.Stdout), StderrTTY: isTerminal(os.Stderr),
		Getenv: os.Getenv,
		NewShell: func(o native.Options) (Shell, error) {
			s, err := native.New(o)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Browser:  systemBrowser,
		LookPath: exec.LookPath,
		ReadPassword: func() (string, error) {
			b, err := term.ReadPassword(int(os.Stdin.Fd()))
			return string(b), err
		},
		UserHome: os.UserHomeDir,
		CacheDir: os.UserCacheDir,
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// defaultAuthTimeout bounds an interactive authorization unless connect --timeout says.
const defaultAuthTimeout = 5 * time.Minute

// Environment variables the CLI reads (flags win over them).
const (
	envHome    = "GRANTWIRE_HOME"
	envCatalog = "GRANTWIRE_CATALOG"
	envService = "GRANTWIRE_KEYRING_SERVICE"
	envEngine  = "GRANTWIRE_ENGINE"
	// envBundle names an OPA bundle to run on (--bundle), envDecisionLog a decision log
	// to append to (--decision-log).
	envBundle      = "GRANTWIRE_BUNDLE"
	envDecisionLog = "GRANTWIRE_DECISION_LOG"
)

// app is one invocation of the CLI: its global settings and, built on first use, the
// catalog, the agent registry, the engine, the OS shell and the client.
type app struct {
	env

	// Global flags.
	home, service, engineName, catalogPath string
	bundlePath, decisionLogPath            string
	// storeURL (--store, $GRANTWIRE_STORE) keeps ledgers, secrets and locks in a PostgreSQL
	// store, under the home storeHome (--store-home, $GRANTWIRE_STORE_HOME, else "default").
	storeURL, storeHome  string
	jsonOut, showVersion bool

	// Settings a command makes before the client is built.
	noBrowser   bool
	device      bool // connect --device: the code is shown for the person reading stderr
	authTimeout time.Duration
	waitingFor  string
	// LongRunning sizes the engine for many concurrent decisions and keeps the OS
	// shell's activation watcher; `serve` sets it before asking for the client.
	LongRunning bool
	// prompt, when set by a long-running command, receives what the OS shell tells the
	// user while an authorization waits (serve: nothing, the page shows it).
	prompt io.Writer

	serverURL string // --engine opa-server=URL
	bundle    *bundle.Bundle
	// asm builds the catalog, the engine and the client (the root's one construction
	// path, oprun.Assemble); shellOpts are the OS shell's options it reads when it builds
	// the client.
	asm       oprun.Assembly
	shellOpts native.Options
	engine    core.Engine
	dlog      *decisionlog.Logger
	shell     Shell // the OS shell the client runs on (serve's events)
	client    *grantwire.Client
	progress  *progress
	table     map[string]core.ErrorInfo
	embedded  *core.Manifest // the embedded policy's, asked when no engine is built yet
}

// setup resolves the global settings (flags, then environment, then defaults).
func (a *app) setup() error {
	if a.home == "" {
		a.home = a.Getenv(envHome)
	}
	if a.home == "" {
		h, err := a.UserHome()
		if err != nil {
			return usagef("cannot find your home directory (%v); pass --home or set %s", err, envHome)
		}
		a.home = filepath.Join(h, native.HomeDirName)
	}
	a.home = a.expandHome(a.home)
	if abs, err := filepath.Abs(a.home); err == nil {
		a.home = abs
	}
	if a.service == "" {
		a.service = a.Getenv(envService)
	}
	if a.storeURL == "" {
		a.storeURL = a.Getenv(envStore)
	}
	if a.storeHome == "" {
		a.storeHome = a.Getenv(envStoreHome)
	}
	if a.storeHome == "" {
		a.storeHome = defaultStoreHome
	}
	if a.service == "" && a.storeURL != "" {
		// A store's secrets are shared by machines whose home directories differ: the
		// service does not depend on this machine's path.
		a.service = hostabi.DefaultService
	}
	if a.service == "" {
		// ~/.grantwire: grantwire.connections; any other home its own service, so that two
		// homes never share secrets unless told to (--keyring-service).
		a.service = native.ServiceFor(a.home, a.userHome())
	}
	if a.engineName == "" {
		a.engineName = a.Getenv(envEngine)
	}
	explicitEngine := a.engineName != ""
	if a.engineName == "" {
		a.engineName = defaultEngine
	}
	if strings.HasPrefix(a.engineName, grantwire.EngineOPAServer+"=") {
		u, err := opaserver.Parse(a.engineName)
		if err != nil {
			return usagef("--engine opa-server=URL needs the URL of an OPA server serving grantwire's bundle")
		}
		a.serverURL = u
	} else if err := checkEngine(a.engineName); err != nil {
		return err
	}
	if a.catalogPath == "" {
		a.catalogPath = a.Getenv(envCatalog)
	}
	if a.catalogPath != "" {
		a.catalogPath = a.expandHome(a.catalogPath)
	}
	if a.bundlePath == "" {
		a.bundlePath = a.Getenv(envBundle)
	}
	if a.bundlePath != "" {
		a.bundlePath = a.expandHome(a.bundlePath)
		if a.catalogPath != "" {
			return usagef("--bundle carries its own catalog: drop --catalog (or unset %s)", envCatalog)
		}
		if explicitEngine && a.engineName != grantwire.EngineWasm {
			return usagef("--bundle runs the bundle's policy.wasm on the wasm engine: drop --engine %s (or unset %s)", a.engineName, envEngine)
		}
		a.engineName = grantwire.EngineWasm
	}
	if a.serverURL != "" && a.catalogPath != "" {
		return usagef("--engine opa-server decides with the server's catalog: drop --catalog (or unset %s)", envCatalog)
	}
	if a.decisionLogPath == "" {
		a.decisionLogPath = a.Getenv(envDecisionLog)
	}
	if a.decisionLogPath != "" {
		a.decisionLogPath = a.expandHome(a.decisionLogPath)
	}
	return nil
}

// Bundle returns the OPA bundle of --bundle / $GRANTWIRE_BUNDLE (nil without one), read
// and checked on first use; a bundle grantwire refuses is an error wrapping
// bundle.ErrRefused.
func (a *app) Bundle() (*bundle.Bundle, error) {
	if a.bundlePath == "" || a.bundle != nil {
		return a.bundle, nil
	}
	b, err := bundle.Open(a.bundlePath)
	if err != nil {
		return nil, err
	}
	a.bundle = b
	return b, nil
}

func (a *app) expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := a.UserHome(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// Home is grantwire's directory.
func (a *app) Home() string { return a.home }

// assembly is the client's construction (oprun.Assemble) on the global settings: the
// engine --engine names, the catalog file, the bundle, the store, the decision log and
// the OS shell (env.NewShell).
func (a *app) assembly() (oprun.Assembly, error) {
	if a.asm != nil {
		return a.asm, nil
	}
	b, err := a.Bundle()
	if err != nil {
		return nil, err
	}
	ch := a.engineChoice()
	ch.Bundle, ch.Shell = b, &a.shellOpts
	ch.DecisionLog, ch.NewShell = func(r decisionlog.Record) {
		if a.dlog != nil {
			_ = a.dlog.Log(r)
		}
	}, func(o native.Options) (oprun.Shell, error) {
		sh, err := a.NewShell(o)
		if err != nil {
			return nil, fmt.Errorf("cannot open the OS shell: %w", err)
		}
		a.shell = sh
		return sh, nil
	}
	if a.catalogPath != "" {
		ch.Catalog = catalog.File(a.catalogPath)
	}
	if a.storeURL != "" {
		// The store holds the ledgers, secrets and locks; its watcher (LISTEN/NOTIFY), not
		// the home's file watcher, reports what other machines change.
		// A rotated secret the store could not take is kept sealed in the home until it
		// can (shells/postgres pending.go): the machine's next command writes it.
		ch.StoreURL = a.storeURL
		ch.Store = postgres.Options{Home: a.storeHome, Service: a.service, Getenv: a.Getenv,
			NoWatch: !a.LongRunning, Warn: func(msg string) { a.warnf("%s", msg) }, PendingFile: filepath.Join(a.home, "store-pending.json")}
	}
	a.asm = oprun.Assemble(ch)
	return a.asm, nil
}

// Catalog returns the catalog: the bundle's (--bundle), the OPA server's (--engine
// opa-server=URL), the file given by --catalog / $GRANTWIRE_CATALOG, else the embedded one.
func (a *app) Catalog() (*catalog.Catalog, error) {
	asm, err := a.assembly()
	if err != nil {
		return nil, err
	}
	cat, err := asm.Catalog()
	var ge *grantwire.Error
	switch {
	case err == nil:
		return cat, nil
	case a.serverURL != "" && !errors.As(err, &ge):
		return nil, &grantwire.Error{
			Code: "CONFIGURATION", Fix: "start an OPA server on grantwire's bundle (docs/fleet.md), or drop --engine opa-server (unset " + envEngine + ")",
			Message: "configuration error: " + strings.TrimPrefix(err.Error(), "grantwire: "),
		}
	case a.catalogPath != "" && !errors.As(err, &ge):
		// The policy validates the file when the client is built (validate_catalog).
		return nil, usagef("--catalog: %s (drop --catalog or unset %s to use the embedded catalog)", strings.TrimPrefix(err.Error(), "catalog: "), envCatalog)
	}
	return nil, err
}

// Engine returns the policy engine chosen by --engine, loaded with the catalog (with
// --bundle, the bundle's policy.wasm, as the client runs it).
func (a *app) Engine(ctx context.Context) (core.Engine, error) {
	if a.engine != nil {
		return a.engine, nil
	}
	if _, err := a.Catalog(); err != nil {
		return nil, err
	}
	e, err := a.asm.Engine(ctx)
	if errors.Is(err, bundle.ErrRefused) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("policy engine %s: %w", a.engineName, err)
	}
	a.engine = e
	return e, nil
}

// Client returns the grantwire client on the OS shell, building it on first use:
// catalog → engine → the OS shell (native.Options from the flags) → the client (with the
// bundle and the decision log when given, and the PostgreSQL store of --store laid over
// the OS shell), all by the root's construction path.
func (a *app) Client(ctx context.Context) (*grantwire.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	if _, err := a.Engine(ctx); err != nil {
		return nil, err
	}
	what := a.waitingFor
	if what == "" {
		what = "the authorization"
	}
	a.progress = newProgress(a.Stderr, a.StderrTTY, what, a.timeout())
	switch {
	case a.device:
		a.progress.where = "on another device"
	case a.noBrowser:
		// No spinner: redrawing the last line would erase what the user pastes.
		a.progress.where, a.progress.tty = "(paste the redirect address below)", false
	}
	var paste io.Reader
	if a.noBrowser {
		// --no-browser: the redirect address is pasted back on standard input.
		paste = a.Stdin
	}
	var browser func(string) error
	if !a.noBrowser && a.Browser != nil {
		browser = a.Browser(a.Getenv)
	}
	a.shellOpts = native.Options{
		Home:        a.home,
		Service:     a.service,
		Browser:     browser,
		Prompt:      a.progress,
		Interactive: a.noBrowser || a.device || a.StdinTTY || a.StderrTTY,
		Paste:       paste,
		Getenv:      a.Getenv,
		// One command needs no watcher of other processes' activations (it would also
		// create the home's directory for a read-only command such as status); a
		// long-running one hands what other processes change in activations.json and
		// grants.json to the policy (activation_changes, grant_changes).
		NoWatch: !a.LongRunning,
		Warn:    func(msg string) { a.warnf("%s", msg) },
	}
	if a.jsonOut {
		// --json: what the user must read while an authorization waits is one JSON object
		// per line on stderr, {"prompt": {...}}, as warnings are (docs/behaviour.md).
		a.shellOpts.Prompts = a.promptJSON
	}
	if a.LongRunning && a.prompt != nil {
		a.shellOpts.Prompt = a.prompt
	}
	if a.decisionLogPath != "" && a.dlog == nil {
		l, err := decisionlog.Open(a.decisionLogPath)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, usagef("--decision-log %s: cannot open it: %v", a.decisionLogPath, err)
		}
		a.dlog = l
	}
	c, err := a.asm.Client(ctx)
	if err != nil {
		return nil, err
	}
	a.client = c.(*grantwire.Client)
	return a.client, nil
}

// close releases the client, the OS shell, the engine and the decision log; closing
// twice is fine (mcp run closes them while its server runs).
func (a *app) close(ctx context.Context) {
	if a.progress != nil {
		a.progress.Stop()
	}
	if a.asm != nil {
		_ = a.asm.Close(ctx) // the client, its shell, store and engine
	}
	if a.dlog != nil {
		if err := a.dlog.Close(); err != nil {
			a.warnf("the decision log %s is incomplete: %v", a.decisionLogPath, err)
		}
	}
	a.asm, a.client, a.shell, a.engine, a.dlog = nil, nil, nil, nil, nil
}

// --- output ---------------------------------------------------------------------------

// printJSON writes v as indented JSON on stdout. A listing is an object with a named
// array ({"grants": [...]}), never a bare array or map, so fields can be added later.
// Strings that could act on a terminal are escaped as JSON (the same value for a parser).
func (a *app) printJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := a.Stdout.Write(safetext.JSON(buf.Bytes()))
	return err
}

// printf and warnf print with every string argument escaped (safetext): arguments may
// come from a provider, a ledger or a file; the format is grantwire's own.
func (a *app) printf(format string, args ...any) { safetext.Fprintf(a.Stdout, format, args...) }

// warnf prints a warning on stderr: "grantwire: warning: …", or with --json one object
// {"warning": {"message": …}} on a line, so that stderr holds nothing but JSON.
func (a *app) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if a.jsonOut {
		b, _ := json.Marshal(map[string]any{"warning": map[string]string{"message": msg}})
		fmt.Fprintf(a.Stderr, "%s\n", safetext.JSON(b))
		return
	}
	safetext.Fprintf(a.Stderr, "grantwire: warning: %s\n", msg)
}

// promptJSON writes what the user must read while an authorization waits as one line of
// JSON on stderr: {"prompt": {"kind": "paste", "connector": …, "url": …, "message": …}}.
func (a *app) promptJSON(ev native.PromptEvent) {
	b, _ := json.Marshal(map[string]any{"prompt": ev})
	fmt.Fprintf(a.Stderr, "%s\n", safetext.JSON(b))
}

// --- errors ---------------------------------------------------------------------------

// usageError is a misuse of the command line: exit 2 with a pointer to --help.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// runError marks an error returned by a command's RunE; any other error cobra returns is
// a usage error (unknown command, bad flag, wrong number of arguments).
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// runE wraps a command's body so its errors are told apart from cobra's usage errors.
func (a *app) runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			return &runError{err}
		}
		return nil
	}
}

// errorTable is the policy's error table (code → REST status and CLI exit). Without an
// engine yet (a usage error, a broken catalog file), the embedded policy is asked (the
// native engine, which starts at once): the table does not depend on the catalog.
func (a *app) errorTable(ctx context.Context) map[string]core.ErrorInfo {
	if a.table != nil {
		return a.table
	}
	a.table = a.manifest(ctx, a.engine).Errors
	return a.table
}

// manifest is what the policy publishes (the error table, the loopback rule): eng's, else
// the embedded policy's (the native engine, which starts at once), else an empty one when
// even that cannot start.
func (a *app) manifest(ctx context.Context, eng core.Engine) *core.Manifest {
	if eng != nil {
		return eng.Manifest()
	}
	if a.embedded != nil {
		return a.embedded
	}
	e, err := nativeengine.New(context.WithoutCancel(ctx))
	if err != nil {
		return &core.Manifest{}
	}
	defer e.Close(context.WithoutCancel(ctx))
	a.embedded = e.Manifest()
	return a.embedded
}

// exitFor is the exit code the policy's table publishes for code (fallback when the
// table cannot be had: the embedded policy does not start).
func (a *app) exitFor(ctx context.Context, code string, fallback int) int {
	if info, ok := a.errorTable(ctx)[code]; ok {
		return info.Exit
	}
	return fallback
}

// unknownConnector returns the policy's error for a connector the catalog does not have
// (the status operation's, so that its message and fix are the policy's).
func (a *app) unknownConnector(ctx context.Context, id string) error {
	c, err := a.Client(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Status(ctx, id); err != nil {
		return err
	}
	return fmt.Errorf("the catalog has no connector %q, yet the policy knows it", id)
}

// timeout is how long connect waits for the browser.
func (a *app) timeout() time.Duration {
	if a.authTimeout > 0 {
		return a.authTimeout
	}
	return defaultAuthTimeout
}

// exitCoder is an error that carries its exit code (a failed check of `policy`: 1).
type exitCoder interface {
	error
	ExitCode() int
}

// Exit codes outside the policy's table.
const (
	exitCancelled  = 130 // Ctrl-C (128 + SIGINT), as shells report it
	exitTestFailed = 1   // `test` found a problem that is not an error of the table (GAIA: 1)
)

// exit prints err and returns the process exit code: the policy's table for *Error
// values (0, 1, 2, 3, 4, 5, 75), 2 for usage errors, 130 for a cancellation.
func (a *app) exit(ctx context.Context, cmd *cobra.Command, err error) int {
	if err == nil {
		return 0
	}
	// A status of the command's own (mcp run: its server's) needs no error table.
	var status *exitStatus
	if errors.As(err, &status) {
		if status.msg != "" {
			a.report(status.name, status.msg, status.fix, nil, status.code)
		}
		return status.code
	}
	table := a.errorTable(ctx)
	exitOf := func(code string, fallback int) int { return a.exitFor(ctx, code, fallback) }
	var re *runError
	inner := err
	if errors.As(err, &re) {
		inner = re.err
	}
	var opa *needsOPABuild
	if errors.As(inner, &opa) {
		a.report("USAGE", "usage: "+opa.Error(), opaBuildFix, nil, exitOf("USAGE", 2))
		return exitOf("USAGE", 2)
	}
	var ue *usageError
	if re == nil || errors.As(inner, &ue) {
		hint := "grantwire --help"
		if cmd != nil {
			hint = cmd.CommandPath() + " --help"
		}
		msg := inner.Error()
		if ue != nil {
			msg = ue.msg
		}
		a.report("USAGE", "usage: "+msg, hint, nil, exitOf("USAGE", 2))
		return exitOf("USAGE", 2)
	}
	var coded exitCoder
	if errors.As(inner, &coded) {
		code := coded.ExitCode()
		if code == exitOf("USAGE", 2) {
			hint := "grantwire --help"
			if cmd != nil {
				hint = cmd.CommandPath() + " --help"
			}
			a.report("USAGE", "usage: "+coded.Error(), hint, nil, code)
		} else {
			code = exitOf("CHECK_FAILED", code)
			a.report("CHECK_FAILED", coded.Error(), "", nil, code)
		}
		return code
	}
	if errors.Is(inner, bundle.ErrRefused) {
		exit := exitOf("BUNDLE_REFUSED", 5)
		a.report("BUNDLE_REFUSED", strings.TrimPrefix(inner.Error(), "grantwire: "),
			"build the bundle with grantwire policy build -o FILE, or run without --bundle", nil, exit)
		return exit
	}
	var quiet silent
	if errors.As(inner, &quiet) {
		var ge *grantwire.Error
		if errors.As(quiet.err, &ge) {
			return exitOf(ge.Code, ge.Exit)
		}
		return exitTestFailed
	}
	if errors.Is(inner, context.Canceled) || ctx.Err() != nil {
		exit := exitOf("CANCELLED", exitCancelled)
		a.report("CANCELLED", "cancelled", "", nil, exit)
		return exit
	}
	var ge *grantwire.Error
	if errors.As(inner, &ge) {
		exit := ge.Exit
		if info, ok := table[ge.Code]; ok {
			exit = info.Exit
		}
		fix := ge.Fix
		if fix == "" && ge.Code == "USAGE" && cmd != nil {
			fix = cmd.CommandPath() + " --help" // as for the command's own usage errors
		}
		a.report(ge.Code, ge.Summary, fix, ge.Fields, exit)
		return exit
	}
	var he *hostabi.HostError
	if errors.As(inner, &he) {
		// A shell that cannot start reports its own failure: the policy's table
		// gives the exit code for INSECURE_STORE and IO_ERROR like for any error.
		code := he.Code
		if code == hostabi.HostErrIO {
			code = "IO_ERROR"
		}
		exit := exitOf(code, exitOf("INTERNAL", 5))
		a.report(code, inner.Error(), he.Fix, nil, exit)
		return exit
	}
	exit := exitOf("INTERNAL", 5)
	a.report("INTERNAL", inner.Error(), "", nil, exit)
	return exit
}

// report prints an error on stderr: "grantwire: message" and "fix: command", or with
// --json one JSON object {"error": {...}}.
func (a *app) report(code, msg, fix string, fields map[string]json.RawMessage, exit int) {
	if a.jsonOut {
		out := map[string]any{}
		for k, v := range fields {
			out[k] = v
		}
		out["code"], out["message"], out["exit"] = code, msg, exit
		if fix != "" {
			out["fix"] = fix
		}
		b, _ := json.MarshalIndent(map[string]any{"error": out}, "", "  ")
		fmt.Fprintf(a.Stderr, "%s\n", safetext.JSON(b))
		return
	}
	// Messages quote ids, accounts and paths from outside: each prints as one line.
	safetext.Fprintf(a.Stderr, "grantwire: %s\n", msg)
	if fix != "" {
		if code == "USAGE" && strings.HasSuffix(fix, " --help") {
			safetext.Fprintf(a.Stderr, "see: %s\n", fix)
		} else {
			safetext.Fprintf(a.Stderr, "fix: %s\n", fix)
		}
	}
}

// jsonRequested reports whether the command line asks for --json, for errors met before
// (or instead of) parsing it: an unknown command or flag, a wrong argument count.
func jsonRequested(args []string) bool {
	want := false
	for _, arg := range args {
		if arg == "--" {
			break
		}
		if arg == "--json" {
			want = true
		} else if v, ok := strings.CutPrefix(arg, "--json="); ok {
			b, err := strconv.ParseBool(v)
			want = err == nil && b
		}
	}
	return want
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, e env) int {
	a := &app{env: e}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(e.Stdin)
	root.SetOut(e.Stdout)
	root.SetErr(e.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !a.jsonOut && jsonRequested(args) {
		a.jsonOut = true
	}
	code := a.exit(ctx, cmd, err)
	a.close(context.WithoutCancel(ctx))
	return code
}

// userHome is the user's home directory, "" when unknown.
func (a *app) userHome() string {
	h, _ := a.UserHome()
	return h
}
