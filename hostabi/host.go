package hostabi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/grantwire/grantwire/core"
)

// Host answers the core's needs and applies its effects through a shell's
// [Capabilities]. One Host serves every operation of a process: it owns the in-process
// access-token cache and the cache of client configurations. It is safe for concurrent use.
type Host struct {
	caps Capabilities

	mu      sync.Mutex
	tokens  map[string]tokenEntry
	clients map[string]map[string]any

	// Trace, when set, receives one line per host call and its answer (facts and effects
	// carry no secret, so transcripts are safe to print and to commit as golden files).
	Trace func(line string)
	// Yield, when set, is called before every host call; a deterministic scheduler uses it
	// to interleave operations.
	Yield func(ctx context.Context)
}

type tokenEntry struct {
	access       string
	expiresAt    int64
	clientIDHash string
	connectedAt  int64
}

// NewHost wraps capabilities. Service defaults to DefaultService, Getenv to none.
func NewHost(c Capabilities) *Host {
	if c.Service == "" {
		c.Service = DefaultService
	}
	if c.Getenv == nil {
		c.Getenv = func(string) string { return "" }
	}
	if c.Catalog == nil {
		c.Catalog = func(string) (Connector, bool) { return Connector{}, false }
	}
	return &Host{caps: c, tokens: map[string]tokenEntry{}, clients: map[string]map[string]any{}}
}

// Capabilities returns what the host was built with.
func (h *Host) Capabilities() Capabilities { return h.caps }

// Op is the host's state for one operation: the secrets it may reference and the locks it
// holds. End releases the locks.
type Op struct {
	h       *Host
	Name    string
	secrets map[string]string
	locks   map[string]func()
}

// Begin starts an operation. secrets holds the operation's secret arguments, referenced
// by the core as "arg#<name>".
func (h *Host) Begin(name string, secrets map[string]string) *Op {
	o := &Op{h: h, Name: name, secrets: map[string]string{}, locks: map[string]func(){}}
	for k, v := range secrets {
		o.secrets["arg#"+k] = v
	}
	return o
}

// End releases every lock the operation holds.
func (o *Op) End() {
	for _, name := range sortedKeys(o.locks) {
		o.locks[name]()
		o.trace("release %s", name)
	}
	o.locks = map[string]func(){}
}

// Secret resolves a secret reference ("<fact key>#<name>") of this operation.
func (o *Op) Secret(ref string) (string, bool) {
	v, ok := o.secrets[ref]
	return v, ok
}

// Held reports whether the operation holds the named lock.
func (o *Op) Held(name string) bool { _, ok := o.locks[name]; return ok }

func (o *Op) trace(format string, args ...any) {
	if o.h.Trace != nil {
		o.h.Trace(fmt.Sprintf(format, args...))
	}
}

func (o *Op) yield(ctx context.Context) {
	if o.h.Yield != nil {
		o.h.Yield(ctx)
	}
}

func (o *Op) ref(raw json.RawMessage) (string, error) {
	var r struct {
		Ref string `json:"$ref"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Ref == "" {
		return "", fmt.Errorf("hostabi: expected a secret reference, got %s", raw)
	}
	v, ok := o.secrets[r.Ref]
	if !ok {
		return "", fmt.Errorf("hostabi: unknown secret reference %q", r.Ref)
	}
	return v, nil
}

func (o *Op) register(key, name, value string) {
	if value != "" {
		o.secrets[key+"#"+name] = value
	}
}

// Fetch answers one need with the fact to store under need.Key.
//
// # Errors
//
// A failed precondition (oauth.refresh of a token the store no longer holds) wraps
// ErrConflict; the driver then restarts the operation. Other errors end it.
func (o *Op) Fetch(ctx context.Context, n core.Need) (json.RawMessage, error) {
	o.yield(ctx)
	v, err := o.fetch(ctx, n)
	if err != nil {
		o.trace("==> %s %s\n<== error %v", n.Kind, params(n.Params), err)
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	o.trace("==> %s %s\n<== %s", n.Kind, params(n.Params), raw)
	return raw, nil
}

func params(p map[string]json.RawMessage) string {
	b, _ := json.Marshal(p)
	return string(b)
}

func (o *Op) fetch(ctx context.Context, n core.Need) (any, error) {
	c := o.h.caps
	switch n.Kind {
	case "clock.now":
		return c.Clock.Now().UnixMilli(), nil
	case "ledger.get":
		var path []string
		if err := n.Decode("path", &path); err != nil {
			return nil, fmt.Errorf("hostabi: ledger.get path: %w", err)
		}
		d, err := readLedger(ctx, c.Ledgers, n.Str("ledger"))
		if err != nil {
			return nil, err
		}
		v, ok := d.get(path)
		if !ok {
			return map[string]any{"found": false}, nil
		}
		return map[string]any{"found": true, "value": v}, nil
	case "connection.get":
		return o.connection(ctx, n.Str("provider"))
	case "client.get":
		var fresh bool
		_ = n.Decode("fresh", &fresh)
		return o.client(ctx, n.Str("provider"), fresh)
	case "token.get":
		o.h.mu.Lock()
		t, ok := o.h.tokens[n.Str("provider")]
		o.h.mu.Unlock()
		if !ok {
			return map[string]any{"found": false}, nil
		}
		o.register(n.Key, "access_token", t.access)
		return map[string]any{
			"found": true, "expires_at": t.expiresAt,
			"client_id_hash": t.clientIDHash, "connected_at": t.connectedAt,
		}, nil
	case "lock.acquire":
		name := n.Str("name")
		if o.Held(name) {
			return "held", nil
		}
		var wait int64
		_ = n.Decode("wait_ms", &wait)
		release, err := c.Locks.TryLock(ctx, name, time.Duration(wait)*time.Millisecond)
		if errors.Is(err, ErrBusy) {
			return "busy", nil
		}
		if err != nil {
			return nil, err
		}
		o.locks[name] = release
		return "held", nil
	case "oauth.refresh":
		return o.refresh(ctx, n)
	case "oauth.authorize":
		return o.authorize(ctx, n)
	case "agent.get":
		if c.Agents == nil {
			return map[string]any{"found": false}, nil
		}
		a, ok, err := c.Agents.Agent(ctx, n.Str("agent"))
		if err != nil {
			return nil, err
		}
		if !ok {
			return map[string]any{"found": false}, nil
		}
		conns := map[string][]string{}
		for k, v := range a.RequiredConnectors {
			conns[k] = nonNil(v)
		}
		return map[string]any{"found": true, "connectors": conns, "consumes_mcp_servers": a.ConsumesMCPServers}, nil
	case "mcp.get":
		e, ok, err := o.mcpEntry(ctx, n.Str("connector"))
		if err != nil || !ok {
			return map[string]any{"found": false}, err
		}
		return map[string]any{"found": true, "keys": e.keys, "command": e.command, "args": e.args}, nil
	case "mcp.secrets":
		id := n.Str("connector")
		e, ok, err := o.mcpEntry(ctx, id)
		if err != nil || !ok {
			return map[string]any{"found": false}, err
		}
		for _, k := range e.keys {
			v, err := c.Keyring.Get(ctx, c.Service, MCPUser(id, k))
			if errors.Is(err, ErrNotFound) {
				return map[string]any{"found": false}, nil // fail closed: a missing value is no credential
			}
			if err != nil {
				return nil, err
			}
			o.register(n.Key, k, v)
		}
		return map[string]any{"found": true, "keys": e.keys}, nil
	}
	return nil, fmt.Errorf("hostabi: unknown fact kind %q", n.Kind)
}

// readBlob reads a keyring value; found is false when nothing is stored.
func (o *Op) readBlob(ctx context.Context, user string) (string, bool, error) {
	c := o.h.caps
	v, err := c.Keyring.Get(ctx, c.Service, user)
	if errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	return v, err == nil, err
}

func (o *Op) connection(ctx context.Context, p string) (any, error) {
	blob, found, err := o.readBlob(ctx, ConnectionUser(p))
	if err != nil || !found {
		return map[string]any{"found": false}, err
	}
	cb, ok := parseConnection(blob)
	if !ok {
		return map[string]any{"found": true, "valid": false, "version": Version(blob)}, nil
	}
	return cb.fact(blob), nil
}

// resolveClient reads a provider's client from the keyring, else from the environment.
func (o *Op) resolveClient(ctx context.Context, p string) (Client, map[string]any, error) {
	c := o.h.caps
	spec, _ := c.Catalog(p)
	blob, found, err := o.readBlob(ctx, ClientUser(p))
	if err != nil {
		return Client{}, nil, err
	}
	if found {
		var cb clientBlob
		if json.Unmarshal([]byte(blob), &cb) == nil && cb.ClientID != "" {
			cl := Client{ID: cb.ClientID, Secret: cb.ClientSecret, Tenant: spec.Tenant}
			if cb.Tenant != nil {
				cl.Tenant = *cb.Tenant
			}
			return cl, clientFact(cl, "keyring", Version(blob)), nil
		}
	}
	idEnv, secretEnv := spec.ClientIDEnv, spec.ClientSecretEnv
	if idEnv == "" {
		idEnv = envName(p, "CLIENT_ID")
	}
	if secretEnv == "" {
		secretEnv = envName(p, "CLIENT_SECRET")
	}
	if id := c.Getenv(idEnv); id != "" {
		cl := Client{ID: id, Secret: c.Getenv(secretEnv), Tenant: spec.Tenant}
		return cl, clientFact(cl, "env", "env:"+ClientIDHash(id)), nil
	}
	return Client{}, map[string]any{"found": false}, nil
}

func clientFact(cl Client, source, version string) map[string]any {
	var tenant any
	if cl.Tenant != "" {
		tenant = cl.Tenant
	}
	return map[string]any{
		"found": true, "client_id_hash": ClientIDHash(cl.ID), "tenant": tenant,
		"has_secret": cl.Secret != "", "source": source, "version": version,
	}
}

func (o *Op) client(ctx context.Context, p string, fresh bool) (any, error) {
	if !fresh {
		o.h.mu.Lock()
		f, ok := o.h.clients[p]
		o.h.mu.Unlock()
		if ok {
			return f, nil
		}
	}
	_, f, err := o.resolveClient(ctx, p)
	if err != nil {
		return nil, err
	}
	o.h.mu.Lock()
	o.h.clients[p] = f
	o.h.mu.Unlock()
	return f, nil
}

// SetCachedClient replaces the host's cached client configuration of a provider (the
// conformance corpus uses it to stage another process's stale view).
func (h *Host) SetCachedClient(p string, fact map[string]any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[p] = fact
}

func (o *Op) refresh(ctx context.Context, n core.Need) (any, error) {
	p := n.Str("provider")
	blob, found, err := o.readBlob(ctx, ConnectionUser(p))
	if err != nil {
		return nil, err
	}
	cb, ok := parseConnection(blob)
	if !found || !ok || Digest(cb.RefreshToken) != n.Str("refresh") {
		return nil, fmt.Errorf("%w: the stored refresh token changed", ErrConflict)
	}
	cl, _, err := o.resolveClient(ctx, p)
	if err != nil {
		return nil, err
	}
	spec, _ := o.h.caps.Catalog(p)
	r := o.h.caps.OAuth.Refresh(ctx, spec, cl, cb.RefreshToken)
	f := map[string]any{"status": r.Status, "error": r.Error, "expires_in": r.ExpiresIn, "rotated": false, "refresh": nil}
	if r.Status == 200 {
		if r.AccessToken == "" {
			return map[string]any{"status": 0, "error": "the token response has no access_token"}, nil
		}
		o.register(n.Key, "access_token", r.AccessToken)
		if r.RefreshToken != "" && r.RefreshToken != cb.RefreshToken {
			o.register(n.Key, "refresh_token", r.RefreshToken)
			f["rotated"], f["refresh"] = true, Digest(r.RefreshToken)
		}
	}
	return f, nil
}

func (o *Op) authorize(ctx context.Context, n core.Need) (any, error) {
	p := n.Str("provider")
	var scopes []string
	if err := n.Decode("scopes", &scopes); err != nil {
		return nil, err
	}
	cl, cf, err := o.resolveClient(ctx, p)
	if err != nil {
		return nil, err
	}
	if cf["found"] != true {
		return map[string]any{"status": AuthError, "error": "no OAuth client configured", "http_status": 0}, nil
	}
	spec, _ := o.h.caps.Catalog(p)
	r := o.h.caps.OAuth.Authorize(ctx, spec, cl, scopes)
	f := map[string]any{"status": r.Status, "error": r.Token.Error, "http_status": r.Token.Status}
	if r.Status != AuthOK {
		return f, nil
	}
	if r.Token.AccessToken == "" || r.Token.RefreshToken == "" {
		return map[string]any{"status": AuthError, "error": "the provider issued no refresh token", "http_status": r.Token.Status}, nil
	}
	o.register(n.Key, "access_token", r.Token.AccessToken)
	o.register(n.Key, "refresh_token", r.Token.RefreshToken)
	f["account"], f["scopes"], f["expires_in"] = r.Token.Account, nonNil(r.Token.Scopes), r.Token.ExpiresIn
	return f, nil
}

type mcpEntry struct {
	keys    []string
	command string
	args    []any
}

func (o *Op) mcpEntry(ctx context.Context, id string) (mcpEntry, bool, error) {
	d, err := readLedger(ctx, o.h.caps.Ledgers, LedgerMCPServers)
	if err != nil {
		return mcpEntry{}, false, err
	}
	v, ok := d.get([]string{id})
	if !ok {
		return mcpEntry{}, false, nil
	}
	m := v.(map[string]any) // index checked the shape
	e := mcpEntry{keys: []string{}, args: []any{}}
	e.command, _ = m["command"].(string)
	if a, ok := m["args"].([]any); ok {
		e.args = a
	}
	if env, ok := m["env"].(map[string]any); ok {
		e.keys = sortedKeys(env)
	}
	sort.Strings(e.keys)
	return e, true, nil
}
