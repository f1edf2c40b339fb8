package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/surfaces/rest"
)

func init() { extraCommands = append(extraCommands, (*app).serveCmd) }

// serveShutdown bounds how long serve waits for requests in progress when it stops.
const serveShutdown = 5 * time.Second

func (a *app) serveCmd() *cobra.Command {
	var addr, tokenFile string
	var allowHosts []string
	var noHealth bool
	var token string
	return a.command(spec{
		use:   "serve",
		short: "Serve the REST API, live events and the Settings → Connectors page",
		long: `Serve grantwire's REST API (docs/behaviour.md#rest), server-sent events of every change
(also those other grantwire processes make) and the Settings → Connectors page, on the same
operations as the CLI. Once listening it prints one JSON line on stdout:
{"url": "http://127.0.0.1:PORT", "home": …, "keyring_service": …, "pid": …}; it logs one line
per request on stderr (never a body or a secret) and stops cleanly on Ctrl-C or SIGTERM.

While it runs it keeps connections healthy (docs/behaviour.md#connections-kept-healthy):
the policy's health pass refreshes access tokens five minutes before they expire, uses a
refresh token again before the provider forgets an unused one (the catalog's
refresh_token_inactivity_days), backs off a failing provider and announces each change as
a connector.health event, which the page shows with the command that fixes it.
--no-health turns this off.

It binds 127.0.0.1 on a free port unless --addr says otherwise. Every POST, PUT and DELETE
needs the header X-Grantwire-UI: 1, the Host header must be the server's address (or
localhost:PORT), and requests from other origins are refused (no CORS).

Binding an address that is not loopback needs a bearer token that every API request then
carries (Authorization: Bearer …; the page asks for it once). Make one and keep it private:

  umask 077; head -c 32 /dev/urandom | base64 > ~/.grantwire/serve.token
  grantwire serve --addr 0.0.0.0:8765 --token-file ~/.grantwire/serve.token --allow-host myhost.lan

The file must not be readable by others; the token is never taken from an argument.`,
		example: `  grantwire serve
  grantwire serve --addr 127.0.0.1:8765
  grantwire --home ~/.gaia --keyring-service gaia.connections serve`,
		args: exactArgs(0),
		run: operation[struct{}]{
			parse: func(*cobra.Command, []string) (err error) {
				if token, err = readTokenFile(tokenFile); err != nil {
					return err
				}
				a.LongRunning = true  // compiled policy, a watcher of other processes' activations
				a.prompt = io.Discard // the page shows the authorization; the URL holds its state
				return nil
			},
			// serve prints its own line once listening, then serves until stopped.
			call: func(ctx context.Context, c *grantwire.Client, _ []string) (struct{}, error) {
				return struct{}{}, a.serve(ctx, c, rest.Config{
					Client: c, Token: token, AllowedHosts: allowHosts,
					LookPath: a.LookPath, FlowTimeout: a.timeout(), Health: !noHealth,
				}, addr)
			},
			json: noResult[struct{}],
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&addr, "addr", "127.0.0.1:0", "the address to listen on (loopback unless --token-file is given)")
			f.StringVar(&tokenFile, "token-file", "", "a file holding the bearer token every API request must carry (mode 0600)")
			f.StringSliceVar(&allowHosts, "allow-host", nil, "another Host header to accept (host or host:port; repeatable)")
			f.DurationVar(&a.authTimeout, "timeout", defaultAuthTimeout, "how long an authorization waits for the browser")
			f.BoolVar(&noHealth, "no-health", false, "do not run the health pass (refreshing tokens before they expire, keeping refresh tokens alive)")
		},
	})
}

// serve listens on addr with cfg, prints the server's line and serves until ctx ends,
// then lets the requests in progress finish (serveShutdown at most).
func (a *app) serve(ctx context.Context, c *grantwire.Client, cfg rest.Config, addr string) error {
	if src, ok := a.shell.Capabilities().Events.(rest.EventSource); ok {
		cfg.Events = src
	}
	logger := slog.New(slog.NewTextHandler(a.Stderr, nil))
	cfg.Log = logger
	srv, err := rest.Listen(addr, cfg)
	if err != nil {
		if strings.Contains(err.Error(), rest.ErrNeedsToken.Error()) {
			return usagef("%v: make one and pass --token-file (see grantwire serve --help)", err)
		}
		return usagef("--addr %s: %v", addr, err)
	}
	line, _ := json.Marshal(map[string]any{"url": srv.URL(), "home": a.home, "keyring_service": a.service, "pid": os.Getpid()})
	fmt.Fprintf(a.Stdout, "%s\n", line)
	if f, ok := a.Stdout.(interface{ Sync() error }); ok {
		_ = f.Sync()
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("stopping")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("requests still running were cut", "error", err.Error())
	}
	<-served
	logger.Info("stopped")
	return nil
}

// readTokenFile reads a bearer token from a file only its owner can read.
func readTokenFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", usagef("--token-file: %v", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", usagef("--token-file %s is readable by others (mode %04o): chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usagef("--token-file: %v", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 || strings.ContainsAny(tok, " \t\r\n") {
		return "", usagef("--token-file %s must hold one token of at least 32 characters (head -c 32 /dev/urandom | base64)", path)
	}
	return tok, nil
}
