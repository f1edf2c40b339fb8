// Package grantwire decides which AI agent may use which external connection, with which
// scopes, and keeps every secret in the operating system's credential store.
//
// A [Client] runs each operation through grantwire's side-effect-free core (the Rego
// policy, compiled to Go by default: core/nativeengine) and a shell that supplies the
// keyring, the ledger files, the locks, HTTP and the OAuth loopback as primitive
// capabilities (package hostabi; package host performs the core's needs and effects over
// them). Errors are *[Error] values with the stable codes of docs/behaviour.md#errors; use
// errors.Is with the sentinels (ErrAgentNotGranted, ErrBusy, ...).
//
// The package is the whole API in one sitting: the client, its options and its typed
// results. The MCP surface (local MCP servers' credentials and launch gate, the tool rules,
// remote MCP servers behind OAuth 2.1) is package mcp over this one: mcp.Of(client). Every
// client is built by [New] ([Open] adds the OS shell). Plumbing the module's own packages
// share (running an operation by name, the watchers' activation_changes and grant_changes)
// is internal (internal/oprun).
//
// This package imports the native, Wasm and OPA-server engines, not OPA's Go packages:
// pass a rego engine with [WithEngine] to evaluate the Rego source directly.
package grantwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/opaserver"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/oprun"
	"github.com/grantwire/grantwire/shells/postgres"
)

type config struct {
	engine  core.Engine
	caps    *hostabi.Capabilities
	catalog []byte // an OPA server's data.catalog
	source  catalog.Source
	trace   func(string)
	errs    []error
	// bundle.go and decisionlog.go
	bundle    *bundle.Bundle
	observers []func(Decision)
	// engines.go
	engineName string
	opaURL     string
	opaOpts    []opaserver.Option
	// store.go
	storeURL  string
	storeOpts *postgres.Options
}

// Option configures a [Client]; options never fail, New reports errors.
type Option func(*config)

// WithEngine evaluates decisions with the given engine (for example regoengine). The
// engine must have been given the same catalog as the client (see [catalog.Catalog.Data]).
func WithEngine(e core.Engine) Option { return func(c *config) { c.engine = e } }

// WithCapabilities runs the client on the given shell capabilities (the OS shell of
// shells/native, a shell of your own, or the tests' in-memory world); package host
// performs the core's needs and effects over them.
func WithCapabilities(caps hostabi.Capabilities) Option {
	return func(c *config) { c.caps = &caps }
}

// WithCatalog replaces the embedded catalog with src: catalog JSON (catalog.Bytes,
// {"connectors": {...}}, checked as the policy checks any catalog, without the built-in
// agents), a user's catalog file (catalog.File: validated strictly by the policy, unknown
// fields refused and what a working connector needs required; the built-in agents stay),
// or a catalog already loaded (*catalog.Catalog: catalog.Default, Load or LoadFile; a
// file's catalog is validated strictly, as catalog.File is). The last WithCatalog wins.
func WithCatalog(src catalog.Source) Option { return func(c *config) { c.source = src } }

func (c *config) loadCatalog() (*catalog.Catalog, error) {
	if c.source != nil {
		return c.source.Catalog()
	}
	return catalog.Load(c.catalog)
}

// Decision describes one finished operation for decision logs: the operation, its
// arguments (never a secret), the final facts, and its result or error.
type Decision struct {
	Op     string
	Args   json.RawMessage
	Result json.RawMessage
	Error  *Error
	Rounds int
	At     time.Time

	// Input is the last query the core answered (op, args, the final facts, attempt) and
	// Output its decision, as JSON in the engines' shapes; both are nil when a host failure
	// ended the operation before the core decided. They hold digests and secret references,
	// never a secret; a decision log redacts the digests too.
	Input  json.RawMessage
	Output json.RawMessage
	// HostFailure reports that Error came from the shell (keyring, ledgers), not the policy.
	HostFailure bool
	// Revision is the policy's revision (see [Client.Revision]), Bundle the bundle's name
	// when the policy came from one, Engine the engine's name; Duration the operation's time.
	Revision string
	Bundle   string
	Engine   string
	Duration time.Duration
}

// WithTrace receives one line per host call and its answer (needs, facts and effects
// carry descriptions, never a secret, so a transcript is safe to print or log).
func WithTrace(fn func(line string)) Option { return func(c *config) { c.trace = fn } }

// WithObserver calls fn after every operation (decision logs, metrics); each WithObserver
// adds one. A decision log is one: WithObserver(func(d Decision) { _ = l.Log(d.Record()) })
// records every decision in OPA's decision-log format (package decisionlog), redacted by
// construction (no secret, no refresh-token digest, no version token, no secret reference).
func WithObserver(fn func(Decision)) Option {
	return func(c *config) {
		if fn != nil {
			c.observers = append(c.observers, fn)
		}
	}
}

// Client runs grantwire's operations. It is safe for concurrent use.
type Client struct {
	driver   *hostabi.Driver
	host     *host.Host
	engine   core.Engine
	owns     bool
	catalog  *catalog.Catalog
	observe  func(Decision)
	revision string
	bundle   string
	closers  []func() error
}

// New builds a client on the capabilities given with WithCapabilities (an in-memory world,
// or a shell built by hand); [Open] builds one on the OS shell.
func New(ctx context.Context, opts ...Option) (*Client, error) {
	return newAssembly(opts).built(ctx)
}

// validate has the policy judge any catalog but the embedded one (tested), as every
// shell judges it: a user's file strictly, catalog JSON and a bundle's data for what they
// hold.
func (c *Client) validate(ctx context.Context, fromBundle bool) error {
	cat := c.catalog
	if !cat.Strict() && bytes.Equal(cat.JSON(), catalog.Defaults()) {
		return nil
	}
	if _, err := c.run(ctx, "validate_catalog", catalogArgs(cat), nil, nil); err != nil {
		if fromBundle {
			return fmt.Errorf("%w: data.catalog: %w", bundle.ErrRefused, err)
		}
		return err
	}
	return nil
}

// validateCatalog has the policy judge a catalog (operation validate_catalog, strict for
// a catalog read from a file), as New does, for callers that only read the catalog
// (oprun.ValidateCatalog). It needs no shell: the decision asks the host nothing.
func validateCatalog(ctx context.Context, engine core.Engine, cat *catalog.Catalog) error {
	return runHostless(ctx, engine, cat, "validate_catalog", catalogArgs(cat), nil)
}

// runHostless runs op on engine alone (oprun.RunHostless): its host answers no need and
// applies no effect, either ends the operation with oprun.ErrNeedsHost.
func runHostless(ctx context.Context, engine core.Engine, cat *catalog.Catalog, op string, args, result any) error {
	cl := &Client{catalog: cat, engine: engine, driver: &hostabi.Driver{Engine: engine, Host: hostless{}}}
	_, err := cl.run(ctx, op, args, nil, result)
	return err
}

// hostless is the host of runHostless, and the performer of its operations: an operation
// on it may only decide.
type hostless struct{}

func (hostless) Begin(string) hostabi.Performer { return hostless{} }

func (hostless) Fetch(context.Context, core.Need) (json.RawMessage, error) {
	return nil, oprun.ErrNeedsHost
}

func (hostless) Apply(_ context.Context, effects []core.Effect) error {
	if len(effects) > 0 {
		return oprun.ErrNeedsHost
	}
	return nil
}

func (hostless) Describe(string, string) json.RawMessage { return json.RawMessage("null") }
func (hostless) Secret(string) (string, bool)            { return "", false }
func (hostless) End()                                    {}

// catalogArgs are validate_catalog's arguments for cat: strict for a file, which the
// policy's messages name.
func catalogArgs(cat *catalog.Catalog) map[string]any {
	args := map[string]any{"strict": cat.Strict()}
	if cat.Source() != "" {
		args["file"] = cat.Source()
	}
	return args
}

// Close releases the engine (when the client created it).
func (c *Client) Close(ctx context.Context) error {
	err := c.closeAll()
	if c.owns {
		return errors.Join(err, c.engine.Close(ctx))
	}
	return err
}

// Engine returns the engine deciding for this client.
func (c *Client) Engine() core.Engine { return c.engine }

// Catalog returns the client's catalog.
func (c *Client) Catalog() *catalog.Catalog { return c.catalog }

// do runs any operation by name and returns its raw result (which may hold secret
// references resolved by Outcome.Secret). The typed methods below are built on it; the
// module's own packages reach it through internal/oprun.
func (c *Client) do(ctx context.Context, op string, args any, secrets map[string]string) (*hostabi.Outcome, error) {
	start := time.Now()
	out, err := c.driver.Run(ctx, op, args, secrets)
	if err != nil {
		return nil, fmt.Errorf("grantwire: %s: %w", op, err)
	}
	var gerr *Error
	if out.Error != nil {
		gerr = newError(out.Error, c.engine.Manifest().Errors)
	}
	if c.observe != nil {
		raw, _ := json.Marshal(args)
		c.observe(Decision{Op: op, Args: raw, Result: out.Result, Error: gerr, Rounds: out.Rounds, At: time.Now(),
			Input: engineJSON(out.Query), Output: engineJSON(out.Decision), HostFailure: out.HostFailure,
			Revision: c.revision, Bundle: c.bundle, Engine: c.engine.Name(), Duration: time.Since(start)})
	}
	if gerr != nil {
		return out, gerr
	}
	return out, nil
}

// asError converts an operation's core error to *Error (nil stays nil).
func (c *Client) asError(ce *core.Error) *Error {
	if ce == nil {
		return nil
	}
	return newError(ce, c.engine.Manifest().Errors)
}

func (c *Client) run(ctx context.Context, op string, args any, secrets map[string]string, result any) (*hostabi.Outcome, error) {
	out, err := c.do(ctx, op, args, secrets)
	if err != nil {
		return out, err
	}
	if result != nil {
		if err := json.Unmarshal(out.Result, result); err != nil {
			return out, fmt.Errorf("grantwire: %s: decode result: %w", op, err)
		}
	}
	return out, nil
}

// runner is the client as internal/oprun sees it.
type runner struct{ c *Client }

func init() {
	oprun.Register(func(client any) oprun.Runner { return runner{client.(*Client)} }, validateCatalog)
	oprun.RegisterHostless(runHostless)
}

func (r runner) Do(ctx context.Context, op string, args any, secrets map[string]string) (*hostabi.Outcome, error) {
	return r.c.do(ctx, op, args, secrets)
}

func (r runner) Run(ctx context.Context, op string, args any, secrets map[string]string, result any) (*hostabi.Outcome, error) {
	return r.c.run(ctx, op, args, secrets, result)
}

func (r runner) AsError(ce *core.Error) error {
	if e := r.c.asError(ce); e != nil {
		return e
	}
	return nil
}

func (r runner) Catalog() *catalog.Catalog { return r.c.catalog }

// Token is an access token handed to an agent.
type Token struct {
	Provider    string
	AccessToken string
	ExpiresAt   time.Time
	Scopes      []string
}

// GetAccessToken returns an access token for agent with scopes on provider, after the
// two-layer gate (grant, connection, tripwire, connection scopes), refreshing under the
// provider's lock when the cached token has 60 s or less left.
func (c *Client) GetAccessToken(ctx context.Context, provider string, scopes []string, agent string) (*Token, error) {
	var r struct {
		Provider    string            `json:"provider"`
		AccessToken hostabi.SecretRef `json:"access_token"`
		ExpiresAt   int64             `json:"expires_at"`
		Scopes      []string          `json:"scopes"`
	}
	out, err := c.run(ctx, "get_access_token", map[string]any{"provider": provider, "scopes": jsonx.NonNil(scopes), "agent": agent}, nil, &r)
	if err != nil {
		return nil, err
	}
	tok, ok := out.Secret(r.AccessToken.Ref)
	if !ok {
		return nil, fmt.Errorf("grantwire: access token reference %q unresolved", r.AccessToken.Ref)
	}
	return &Token{Provider: r.Provider, AccessToken: tok, ExpiresAt: time.UnixMilli(r.ExpiresAt), Scopes: r.Scopes}, nil
}

// GrantResult is the outcome of Grant. Warnings name scopes the catalog does not list for
// the connector and agents no registry knows (the grant is made anyway).
type GrantResult struct {
	Connector string   `json:"connector"`
	Agent     string   `json:"agent"`
	Scopes    []string `json:"scopes"`
	Changed   bool     `json:"changed"`
	Warnings  []string `json:"warnings"`
}

// Grant replaces the scopes agent holds on connector (stored sorted, without duplicates).
func (c *Client) Grant(ctx context.Context, connector, agent string, scopes []string) (*GrantResult, error) {
	var r GrantResult
	_, err := c.run(ctx, "grant", map[string]any{"connector": connector, "agent": agent, "scopes": jsonx.NonNil(scopes)}, nil, &r)
	return &r, err
}

// Revoke removes agent's grant on connector and its activation; revoking nothing succeeds.
// RevokeGrant says more.
func (c *Client) Revoke(ctx context.Context, connector, agent string) (changed bool, err error) {
	r, err := c.RevokeGrant(ctx, connector, agent)
	return r.Changed, err
}

// RevokeResult says what RevokeGrant changed.
type RevokeResult struct {
	Connector string `json:"connector"`
	Agent     string `json:"agent"`
	Changed   bool   `json:"changed"`
	// Summary says what was done in one sentence (the policy's words): revoked, nothing
	// to revoke, or that the grants ledger could not be read.
	Summary string `json:"summary"`
	// Warnings name a ledger that could not be read, and so was left as it was, with the
	// command that moves it aside: revoking goes through it (docs/behaviour.md#grants).
	Warnings []string `json:"warnings"`
}

// RevokeGrant removes agent's grant on connector and its activation; revoking nothing
// succeeds. An unreadable ledger never stops it: the other is still cleaned and the
// result's Warnings name it.
func (c *Client) RevokeGrant(ctx context.Context, connector, agent string) (*RevokeResult, error) {
	var r RevokeResult
	_, err := c.run(ctx, "revoke", map[string]any{"connector": connector, "agent": agent}, nil, &r)
	return &r, err
}

// ListGrants returns {connector: {agent: scopes}}, for one connector or (with "") all.
func (c *Client) ListGrants(ctx context.Context, connector string) (map[string]map[string][]string, error) {
	return oprun.Listing[[]string](ctx, runner{c}, "list_grants", "grants", connector)
}

// Activation is the outcome of Activate.
type Activation struct {
	Connector   string   `json:"connector"`
	Agent       string   `json:"agent"`
	AutoGranted bool     `json:"auto_granted"`
	GrantSource string   `json:"grant_source"` // existing, explicit, declared or consumes_mcp_servers
	Scopes      []string `json:"scopes"`
	Changed     bool     `json:"changed"`
	// MissingKeys are required keys of a local MCP server not configured yet (the
	// activation is recorded; Warnings says how to configure them).
	MissingKeys []string `json:"missing_keys"`
	Warnings    []string `json:"warnings"`
	// Tools is the pair's tool rule after Tools().Allow (nil after AllowAll or Activate:
	// every tool, or the rule is unchanged).
	Tools []string `json:"tools"`
}

// Activate makes an MCP connector's tools visible to agent. With no grant for the pair it
// grants scopes (nil: the agent's declared scopes, else ["use"] for an agent that consumes
// MCP servers); an existing grant is never overwritten.
func (c *Client) Activate(ctx context.Context, connector, agent string, scopes []string) (*Activation, error) {
	return c.activate(ctx, connector, agent, scopes, nil)
}

// activate is Activate with extra arguments (a tool rule: Tools).
func (c *Client) activate(ctx context.Context, connector, agent string, scopes []string, extra map[string]any) (*Activation, error) {
	args := map[string]any{"connector": connector, "agent": agent}
	if scopes != nil {
		args["scopes"] = scopes
	}
	for k, v := range extra {
		args[k] = v
	}
	var r Activation
	_, err := c.run(ctx, "activate", args, nil, &r)
	return &r, err
}

// Deactivate hides an MCP connector's tools from agent; the grant is kept.
func (c *Client) Deactivate(ctx context.Context, connector, agent string) (changed bool, err error) {
	var r struct {
		Changed bool `json:"changed"`
	}
	_, err = c.run(ctx, "deactivate", map[string]any{"connector": connector, "agent": agent}, nil, &r)
	return r.Changed, err
}

// ListActivations returns {connector: {agent: true}}, for one connector or (with "") all.
func (c *Client) ListActivations(ctx context.Context, connector string) (map[string]map[string]bool, error) {
	return oprun.Listing[bool](ctx, runner{c}, "list_activations", "activations", connector)
}

// DisconnectResult says what Disconnect removed.
type DisconnectResult struct {
	Connector     string   `json:"connector"`
	Removed       bool     `json:"removed"`
	RevokedGrants []string `json:"revoked_grants"`
	Deactivated   []string `json:"deactivated"`
	// RevokedAtProvider: the refresh token was also sent to the provider's revocation
	// endpoint (best effort, RFC 7009).
	RevokedAtProvider bool `json:"revoked_at_provider"`
	// Warnings name ledgers that could not be cleaned (unreadable), and how to move them
	// aside; everything else was removed.
	Warnings []string `json:"warnings"`
}

// Disconnect deletes a connector's secrets and metadata and wipes its grants and
// activations; connecting again inherits nothing. Idempotent.
func (c *Client) Disconnect(ctx context.Context, connector string) (*DisconnectResult, error) {
	var r DisconnectResult
	_, err := c.run(ctx, "disconnect", map[string]any{"connector": connector}, nil, &r)
	return &r, err
}

// ConfigureInput is what Configure stores: an OAuth provider's client (ClientID,
// ClientSecret, Tenant) or a local MCP server's environment (Env, and Given: the values of
// Env the user gave as arguments, the CLI's --set). Which applies is the policy's to
// say from the catalog; the values of the other kind are refused.
type ConfigureInput struct {
	ClientID, ClientSecret, Tenant string
	Env, Given                     map[string]string
}

// ConfigureResult is the outcome of Configure (never a secret): the client's hash, whether
// it has a secret and its tenant for an OAuth provider; the keys stored for an MCP server.
type ConfigureResult struct {
	Connector    string   `json:"connector"`
	ClientIDHash string   `json:"client_id_hash,omitempty"`
	HasSecret    bool     `json:"has_secret,omitempty"`
	Tenant       string   `json:"tenant,omitempty"`
	EnvKeys      []string `json:"env_keys,omitempty"`
}

// Configure configures any connector (op configure, which the policy dispatches by the
// catalog: an OAuth provider's client (configure_client), else an MCP server's environment
// (configure_mcp). Surfaces call it without choosing by the connector's type.
func (c *Client) Configure(ctx context.Context, connector string, in ConfigureInput) (*ConfigureResult, error) {
	keys := make([]string, 0, len(in.Env))
	secrets := map[string]string{}
	for k, v := range in.Env {
		keys = append(keys, k)
		secrets["env."+k] = v
	}
	sort.Strings(keys)
	args := map[string]any{"connector": connector, "env_keys": keys}
	if len(in.Given) > 0 {
		args["set"] = in.Given
	}
	if in.Tenant != "" {
		args["tenant"] = in.Tenant
	}
	if in.ClientID != "" || in.ClientSecret != "" {
		secrets["client_id"], secrets["client_secret"] = in.ClientID, in.ClientSecret
	}
	var r struct {
		ConfigureResult
		Tenant *string `json:"tenant"`
	}
	_, err := c.run(ctx, "configure", args, secrets, &r)
	if r.Tenant != nil {
		r.ConfigureResult.Tenant = *r.Tenant
	}
	return &r.ConfigureResult, err
}

// ConnectResult is the outcome of Connect.
type ConnectResult struct {
	Connector string              `json:"connector"`
	Account   string              `json:"account"`
	Scopes    []string            `json:"scopes"`
	Granted   map[string][]string `json:"granted"`
	// NotGranted are scopes asked for that the provider did not grant (the connection
	// holds only what it granted).
	NotGranted []string `json:"not_granted"`
	Warnings   []string `json:"warnings"`
}

// Flows of Connect: how the user authorizes a connection (ConnectOptions.Flow).
const (
	// FlowLoopback (the default): the browser opens the authorization URL and comes back
	// to a one-shot listener on 127.0.0.1.
	FlowLoopback = "loopback"
	// FlowPaste: the user opens the URL on any machine and pastes back the address the
	// browser was redirected to (the shell's paste input, the CLI's standard input); it is
	// checked as a callback is.
	FlowPaste = "paste"
	// FlowDevice: the device authorization grant (RFC 8628). The user enters a code shown
	// here on another device while the token endpoint is polled; for providers whose
	// catalog entry has a device_authorization_url (and, when it lists device_scopes, for
	// those scopes only).
	FlowDevice = "device"
)

// ConnectOptions tune Connect.
type ConnectOptions struct {
	// Timeout bounds the wait for the user (default 5 minutes; 1 s to 30 minutes). A
	// device code that expires sooner ends the wait sooner.
	Timeout time.Duration
	// Flow is how the user authorizes (default FlowLoopback).
	Flow string
	// OnDeviceCode, with FlowDevice, receives the code to show the user instead of the
	// shell's prompt (a web server hands it to the page that asked, then lets Connect poll
	// on). It is called once, before the polling starts, and must not block. The device
	// code itself (a secret) never leaves the host.
	// The prompt is what a user needs to authorize on another device (RFC 8628 §3.3):
	// where to go, the code to enter there, how long it lasts and how often it is polled;
	// it holds no secret.
	OnDeviceCode func(hostabi.DevicePrompt)
	// Browser, when set, is given the authorization URL instead of the shell's browser (a
	// server hands it to the page that asked; see hostabi.WithBrowser). It returns an
	// error when it cannot show the URL.
	Browser func(url string) error
}

// Connect authorizes a provider and stores the connection; grantAgents are granted their
// declared scopes (or scopes, when given). The user authorizes in a browser that comes
// back to a loopback listener, by pasting the redirect back, or on another device with a
// code (ConnectOptions.Flow); what follows the authorization is the same.
func (c *Client) Connect(ctx context.Context, provider string, scopes, grantAgents []string, opts ...ConnectOptions) (*ConnectResult, error) {
	args := map[string]any{"connector": provider, "scopes": jsonx.NonNil(scopes), "grant_agents": jsonx.NonNil(grantAgents)}
	if c.catalog.Strict() && c.catalog.Source() != "" {
		// The user's catalog file: an issuer mismatch's fix writes to it (oauth.issuer_fix).
		file, err := filepath.Abs(c.catalog.Source())
		if err != nil {
			file = c.catalog.Source()
		}
		args["catalog_file"] = file
	}
	for _, o := range opts {
		if o.Timeout > 0 {
			args["timeout_ms"] = o.Timeout.Milliseconds()
		}
		if o.Flow != "" {
			args["flow"] = o.Flow
		}
		if f := o.OnDeviceCode; f != nil {
			ctx = hostabi.WithPrompter(ctx, hostabi.PrompterFunc(func(_ context.Context, p hostabi.DevicePrompt) error {
				f(p)
				return nil
			}))
		}
		if o.Browser != nil {
			ctx = hostabi.WithBrowser(ctx, o.Browser)
		}
	}
	var r ConnectResult
	_, err := c.run(ctx, "connect", args, nil, &r)
	return &r, err
}

// Forwarded is a connection forwarded by a host application that holds the user's consent.
// As JSON it is the body of REST's POST /v1/connections/{provider} and what `grantwire
// import` reads: the provider is not in it (the path names it, or the argument).
type Forwarded struct {
	Provider     string   `json:"-"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	RefreshToken string   `json:"refresh_token"`
	Scopes       []string `json:"scopes"`
	AccountEmail string   `json:"account_email"`
	AccountType  string   `json:"account_type"`
	GrantAgents  []string `json:"grant_agents"`
}

// ForwardedSummary is the metadata ImportForwarded returns (never a secret).
type ForwardedSummary struct {
	Provider     string   `json:"provider"`
	AccountEmail string   `json:"account_email"`
	Scopes       []string `json:"scopes"`
	ConnectedAt  int64    `json:"connected_at"`
	GrantAgents  []string `json:"grant_agents"`
	Forwarded    bool     `json:"forwarded"`
	Warnings     []string `json:"warnings"`
}

// ImportForwarded stores a forwarded connection: the scopes must cover what every listed
// agent declares, client and connection are written in one hold of the provider's lock
// (restored together on failure), and the agents are granted.
func (c *Client) ImportForwarded(ctx context.Context, f Forwarded) (*ForwardedSummary, error) {
	args := map[string]any{
		"provider": f.Provider, "scopes": jsonx.NonNil(f.Scopes),
		"account_email": f.AccountEmail, "grant_agents": jsonx.NonNil(f.GrantAgents),
	}
	if f.AccountType != "" {
		args["account_type"] = f.AccountType
	}
	secrets := map[string]string{"client_id": f.ClientID, "refresh_token": f.RefreshToken, "client_secret": f.ClientSecret}
	var r ForwardedSummary
	_, err := c.run(ctx, "import_forwarded", args, secrets, &r)
	return &r, err
}

// ConnectorStatus is one row of Status.
type ConnectorStatus struct {
	ID               string              `json:"id"`
	Type             string              `json:"type"`
	DisplayName      string              `json:"display_name"`
	Category         string              `json:"category"`
	Tier             string              `json:"tier"`
	Configured       bool                `json:"configured"`
	ClientConfigured bool                `json:"client_configured,omitempty"`
	Account          string              `json:"account,omitempty"`
	Scopes           []string            `json:"scopes,omitempty"`
	ConnectedAt      int64               `json:"connected_at,omitempty"`
	Tripwire         string              `json:"tripwire,omitempty"`
	EnvKeys          []string            `json:"env_keys,omitempty"`
	MissingKeys      []string            `json:"missing_keys,omitempty"`
	Grants           map[string][]string `json:"grants"`
	Activations      []string            `json:"activations"`
	// URL and Issuer of a remote MCP server (mcp_remote): its endpoint and, once
	// authorized (Configured), the authorization server that issued its tokens.
	URL    string `json:"url,omitempty"`
	Issuer string `json:"issuer,omitempty"`
}

// Status lists every catalog connector (or, with ids, those) with its state, read-only: a
// client-hash mismatch is reported in Tripwire and nothing is cleared.
func (c *Client) Status(ctx context.Context, ids ...string) ([]ConnectorStatus, error) {
	var r struct {
		Connectors []ConnectorStatus `json:"connectors"`
	}
	if len(ids) == 1 {
		_, err := c.run(ctx, "status", map[string]any{"connector": ids[0]}, nil, &r)
		return r.Connectors, err
	}
	_, err := c.run(ctx, "status", map[string]any{}, nil, &r)
	if err != nil || len(ids) == 0 {
		return r.Connectors, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := r.Connectors[:0]
	for _, s := range r.Connectors {
		if want[s.ID] {
			out = append(out, s)
		}
	}
	return out, nil
}

// Connection is one row of Connections.
type Connection struct {
	Provider     string   `json:"provider"`
	AccountEmail string   `json:"account_email,omitempty"`
	Scopes       []string `json:"scopes"`
	ConnectedAt  int64    `json:"connected_at,omitempty"`
	Error        string   `json:"error,omitempty"` // "busy" or "configuration"
}

// Cleared names a connection the tripwire cleared during Connections.
type Cleared struct {
	Provider string `json:"provider"`
	Reason   string `json:"reason"`
}

// Connections lists the OAuth connections with the tripwire enforced: stale ones are
// cleared under their provider's lock, and a row whose lock is held elsewhere reads
// Error "busy" with no scopes.
func (c *Client) Connections(ctx context.Context) ([]Connection, []Cleared, error) {
	var r struct {
		Connections []Connection `json:"connections"`
		Cleared     []Cleared    `json:"cleared"`
	}
	_, err := c.run(ctx, "connections", map[string]any{}, nil, &r)
	return r.Connections, r.Cleared, err
}

// HealthPass is the outcome of one health pass (see Maintain).
type HealthPass struct {
	// Connections are each connection's state after the pass.
	Connections []struct {
		Connector string `json:"connector"`
		// State is healthy, expiring (its refresh token nears the provider's inactivity limit
		// and could not be used), failing (its last refreshes failed) or revoked (the provider
		// answered invalid_grant; the connection was cleared).
		State string `json:"state"`
		// Action is what this pass did: none, refreshed, backoff (waiting after failures),
		// cleared (revoked) or skipped (another process held the provider's lock).
		Action string `json:"action"`
		// Reason says why: expiry or keepalive for a refresh, the provider's error for a failure.
		Reason   string `json:"reason,omitempty"`
		Failures int    `json:"failures,omitempty"`
		// NextAt is when this connection next needs the pass (Unix ms; 0: nothing is due).
		NextAt int64 `json:"next_at,omitempty"`
		// Fix is the command that fixes a connection that is not healthy.
		Fix string `json:"fix,omitempty"`
	} `json:"connections"`
	// NextRunAt is when the next pass is due (Unix ms), the policy's schedule.
	NextRunAt int64 `json:"next_run_at"`
}

// Maintain runs one health pass over the connections connectors/state.json lists (the
// maintain operation, docs/behaviour.md#connections-kept-healthy): it refreshes access
// tokens about to expire, keeps refresh tokens alive before the provider's inactivity
// limit, backs off failing providers and clears revoked connections, emitting
// connector.health for each change. Run it again at NextRunAt; grantwire serve does.
func (c *Client) Maintain(ctx context.Context) (*HealthPass, error) {
	var r HealthPass
	_, err := c.run(ctx, "maintain", map[string]any{}, nil, &r)
	return &r, err
}

// TestResult says whether a connector is usable (see Test).
type TestResult struct {
	Connector string   `json:"connector"`
	OK        bool     `json:"ok"`
	Type      string   `json:"type"`
	Detail    string   `json:"detail"`
	Account   string   `json:"account,omitempty"`
	Scopes    []string `json:"scopes,omitempty"`
	EnvKeys   []string `json:"env_keys,omitempty"`
	Command   string   `json:"command,omitempty"`
}

// Test says whether a connector is usable, read-only: an OAuth connection exists and
// matches the configured client; a local MCP server holds every required key. A connector
// that is not usable is an *Error saying why, with the command that fixes it.
func (c *Client) Test(ctx context.Context, connector string) (*TestResult, error) {
	var r TestResult
	_, err := c.run(ctx, "test_connector", map[string]any{"connector": connector}, nil, &r)
	return &r, err
}

// Agent is one agent of the registry.
type Agent struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// RequiredConnectors are the connectors the agent declares: the scopes it asks for,
	// and why.
	RequiredConnectors []struct {
		Connector string   `json:"connector"`
		Scopes    []string `json:"scopes"`
		Reason    string   `json:"reason,omitempty"`
	} `json:"required_connectors"`
	ConsumesMCPServers bool   `json:"consumes_mcp_servers"`
	Origin             string `json:"origin"` // builtin or file
}

// AgentProblem is an agent of agents.json that is not registered, and why.
type AgentProblem struct {
	Agent   string `json:"agent"`
	Message string `json:"message"`
}

// Agents lists the agent registry (built-in agents and the home's agents.json), and the
// custom agents of agents.json whose source no longer matches or cannot be read.
func (c *Client) Agents(ctx context.Context) ([]Agent, []AgentProblem, error) {
	var r struct {
		Agents   []Agent        `json:"agents"`
		Problems []AgentProblem `json:"problems"`
	}
	_, err := c.run(ctx, "list_agents", map[string]any{}, nil, &r)
	return r.Agents, r.Problems, err
}

// AgentID names the custom agent whose source is the file at path:
// custom:<first 16 hex of sha256(source)>:<name> (name "" is the file's base name).
func (c *Client) AgentID(ctx context.Context, path, name string) (string, error) {
	args := map[string]any{"source": path}
	if name != "" {
		args["name"] = name
	}
	var r struct {
		ID string `json:"id"`
	}
	_, err := c.run(ctx, "agent_id", args, nil, &r)
	return r.ID, err
}
