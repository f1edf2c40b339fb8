// Package native is grantwire's OS shell: the host ABI's capabilities on the operating
// system — the OS credential store through go-keyring, ledger files under
// $GRANTWIRE_HOME, per-provider file locks shared by every process of the user, the PKCE
// loopback listener on 127.0.0.1, and HTTP through golang.org/x/oauth2.
//
// It imports hostabi (and libraries), never the engines: the transport rule reaches it as
// the Options.CheckURL function.
package native

import (
	"context"
	"errors"
	"io"
	"net/url"
	"time"

	"github.com/grantwire/grantwire/hostabi"
)

// Options configures the OS shell. Zero values mean the documented defaults.
type Options struct {
	// Home is grantwire's directory (default $GRANTWIRE_HOME, else ~/.grantwire).
	Home string
	// Service is the keyring service (default hostabi.DefaultService; "gaia.connections"
	// shares a GAIA installation).
	Service string
	// Agents is the agent registry.
	Agents hostabi.Agents
	// Catalog returns a connector's catalog entry.
	Catalog func(id string) (hostabi.Connector, bool)
	// CheckURL applies the core's transport rule to a URL or redirect hop (grantwire.CheckURL).
	CheckURL func(ctx context.Context, u *url.URL, purpose string, hop int, from *url.URL) error
	// Browser opens a URL for the user; nil means headless (print the URL and wait).
	Browser func(url string) error
	// Prompt receives what the user must read while an authorization waits (the URL,
	// progress); nil means os.Stderr.
	Prompt io.Writer
	// Interactive reports whether a person can complete an authorization at all; when false
	// and no browser is available, Authorize reports interactive_required at once.
	Interactive bool
	// AuthTimeout bounds an interactive authorization (default 5 minutes).
	AuthTimeout time.Duration
	// KeyringTimeout bounds every keyring call (default 10 s).
	KeyringTimeout time.Duration
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// Shell is the OS shell.
type Shell struct {
	opts Options
}

// New opens the OS shell.
func New(opts Options) (*Shell, error) {
	return nil, errors.New("native: not built yet")
}

// Capabilities returns the shell's capabilities for hostabi.NewHost / grantwire.WithCapabilities.
func (s *Shell) Capabilities() hostabi.Capabilities { return hostabi.Capabilities{} }

// Close releases the shell's resources (watchers, listeners).
func (s *Shell) Close() error { return nil }
