package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// File is one corpus file: one behaviour family. Base is a world every scenario of the
// file starts from; a scenario's World is applied to it as a JSON merge patch (RFC 7386:
// objects merge key by key, null removes a key, anything else replaces).
type File struct {
	Family      string          `json:"family"`
	Description string          `json:"description"`
	Base        json.RawMessage `json:"base,omitempty"`
	Scenarios   []*Scenario     `json:"scenarios"`

	path string
}

// Scenario is one behaviour, checked end to end: an initial world, steps, and what must
// hold after each step and at the end.
type Scenario struct {
	Name      string          `json:"name"`
	Behaviour string          `json:"behaviour"`
	World     json.RawMessage `json:"world,omitempty"`
	Steps     []Step          `json:"steps"`
	Final     *Final          `json:"final"`

	// Family and the merged world are filled in by Load.
	Family string `json:"-"`
	world  WorldSpec
	merged json.RawMessage
	file   string
}

// MergedWorld is the scenario's world after the file's base was patched with it (JSON).
func (s *Scenario) MergedWorld() json.RawMessage { return s.merged }

// ID is "family/name", the scenario's subtest name and its key in exceptions.yaml.
func (s *Scenario) ID() string { return s.Family + "/" + s.Name }

// WorldSpec is the initial world of a scenario.
type WorldSpec struct {
	// Clock is the simulated time in Unix milliseconds (default DefaultClock).
	Clock int64 `json:"clock,omitempty"`
	// Catalog is a JSON merge patch over the corpus catalog (corpus/catalog.json).
	Catalog json.RawMessage `json:"catalog,omitempty"`
	// Ledgers are documents written through the Ledgers capability (JSON values); RawLedgers
	// are written byte for byte (a corrupt file).
	Ledgers    map[string]json.RawMessage `json:"ledgers,omitempty"`
	RawLedgers map[string]string          `json:"raw_ledgers,omitempty"`
	// Connections, Clients and MCPEnv are keyring entries in the shared layout.
	Connections map[string]*ConnectionSpec   `json:"connections,omitempty"`
	Clients     map[string]*ClientSpec       `json:"clients,omitempty"`
	MCPEnv      map[string]map[string]string `json:"mcp_env,omitempty"`
	// CachedClients is this process's (process "A") cached view of a provider's client,
	// which may be stale: another process rotated the client since it was read.
	CachedClients map[string]*ClientSpec `json:"cached_clients,omitempty"`
	// Locks are held by other processes: lock name → holder.
	Locks map[string]string `json:"locks,omitempty"`
	// Agents are the agent registry's declarations, by id.
	Agents map[string]*AgentSpec `json:"agents,omitempty"`
	// Env is the process environment (client ids may come from it).
	Env map[string]string `json:"env,omitempty"`
	// TokenServer scripts the authorization server.
	TokenServer *TokenServerSpec `json:"token_server,omitempty"`
	// KeyringFailures are injected after the world is staged, before the first step.
	KeyringFailures []KeyringFailure `json:"keyring_failures,omitempty"`
}

// DefaultClock is the simulated time of a world that names none (2026-09-21T...).
const DefaultClock int64 = 1_790_000_000_000

// ConnectionSpec is a stored connection. Either Blob (stored verbatim, e.g. corrupt) or
// the fields. ClientID is hashed into client_id_hash unless ClientIDHash is given.
type ConnectionSpec struct {
	Blob          *string  `json:"blob,omitempty"`
	Account       string   `json:"account,omitempty"`
	Scopes        []string `json:"scopes,omitempty"`
	ClientID      string   `json:"client_id,omitempty"`
	ClientIDHash  string   `json:"client_id_hash,omitempty"`
	RefreshToken  string   `json:"refresh_token,omitempty"`
	ConnectedAtMS int64    `json:"connected_at_ms,omitempty"`
	Tenant        *string  `json:"tenant,omitempty"`
	AccountType   *string  `json:"account_type,omitempty"`
	// Live false: the token server does not know the refresh token (default true).
	Live *bool `json:"live,omitempty"`
}

// ClientSpec is a stored OAuth client; Blob replaces the fields with a verbatim value.
type ClientSpec struct {
	Blob         *string `json:"blob,omitempty"`
	ClientID     string  `json:"client_id,omitempty"`
	ClientSecret string  `json:"client_secret,omitempty"`
	Tenant       *string `json:"tenant,omitempty"`
}

// AgentSpec is an agent's declaration.
type AgentSpec struct {
	Name               string              `json:"name,omitempty"`
	RequiredConnectors map[string][]string `json:"required_connectors,omitempty"`
	ConsumesMCPServers bool                `json:"consumes_mcp_servers,omitempty"`
}

// TokenServerSpec scripts the authorization server. Without scripts it rotates refresh
// tokens on every use (Rotate, default true), rejects a reused or unknown refresh token
// with invalid_grant, issues ExpiresIn-second access tokens (default 3600), and names the
// tokens it issues "access-<provider>-NNNN" and "refresh-<provider>-NNNN" with one counter
// from 0001.
type TokenServerSpec struct {
	// Issued are refresh tokens the server accepts beyond those of staged connections
	// (a forwarded consent, for example).
	Issued    map[string][]string          `json:"issued,omitempty"`
	Rotate    *bool                        `json:"rotate,omitempty"`
	ExpiresIn int64                        `json:"expires_in,omitempty"`
	Refresh   map[string][]TokenResponse   `json:"refresh,omitempty"`
	Authorize map[string][]AuthorizeResult `json:"authorize,omitempty"`
	// Revoke scripts the revocation endpoint's next answers (status and error only; status
	// 0 is no answer): the token is then not revoked.
	Revoke map[string][]TokenResponse `json:"revoke,omitempty"`
	// ClientAuth is how the provider registered its client to authenticate at the token and
	// revocation endpoints, when it differs from what the catalog says
	// (client_secret_basic, client_secret_post or none). Without it the server expects the
	// catalog's token_endpoint_auth_method, else client_secret_basic when the catalog
	// requires a secret, else RFC 8414's default (HTTP Basic for a client with a secret, none
	// without). A request authenticated otherwise is answered 401 invalid_client.
	ClientAuth map[string]string `json:"client_auth,omitempty"`
}

// TokenAnswer is what the token endpoint answers a refresh or a revocation. Status 0 is
// no answer at all (Error "timeout" or "refused"); not_json answers an HTML page; scope,
// when given, is the response's scope member. The test worlds' authorization server plays
// it (authserver.Reply embeds it).
type TokenAnswer struct {
	Status       int     `json:"status"`
	Error        string  `json:"error,omitempty"`
	AccessToken  string  `json:"access_token,omitempty"`
	RefreshToken string  `json:"refresh_token,omitempty"`
	ExpiresIn    int64   `json:"expires_in,omitempty"`
	Scope        *string `json:"scope,omitempty"`
	NotJSON      bool    `json:"not_json,omitempty"`
}

// TokenResponse is a scripted answer of the token endpoint to a refresh (its members are
// TokenAnswer's, flattened in JSON).
type TokenResponse struct {
	TokenAnswer
	// During is what another process does while this request is in flight.
	During *Action `json:"during,omitempty"`
}

// AuthorizeResult is a scripted outcome of an interactive authorization.
type AuthorizeResult struct {
	Status       string   `json:"status"` // ok, denied, interactive_required, timeout, error
	Error        string   `json:"error,omitempty"`
	HTTPStatus   int      `json:"http_status,omitempty"`
	AccessToken  string   `json:"access_token,omitempty"`
	RefreshToken string   `json:"refresh_token,omitempty"`
	ExpiresIn    int64    `json:"expires_in,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Account      string   `json:"account,omitempty"`
	// Iss is sent as the callback's iss parameter (RFC 9207), instead of the catalog's
	// issuer; NoIss sends none at all.
	Iss   *string `json:"iss,omitempty"`
	NoIss bool    `json:"no_iss,omitempty"`
	// NoRefresh: the code exchange issues no refresh token.
	NoRefresh bool `json:"no_refresh,omitempty"`
	// NotJSON: the code exchange answers 200 with a page that is not JSON.
	NotJSON bool `json:"not_json,omitempty"`
	// Polls (device flow) are the token endpoint's answers to the device code's first
	// polls, before the outcome: authorization_pending, slow_down, or timeout (no answer).
	// The outcome: ok (tokens), denied (access_denied, or Error), timeout (pending until
	// the code expires), error (Error with HTTPStatus), interactive_required (nobody can
	// be shown the code).
	Polls []string `json:"polls,omitempty"`
	// Device shapes the device authorization answer.
	Device *DeviceSpec `json:"device,omitempty"`
}

// DeviceSpec shapes a device authorization answer: the code's lifetime and polling
// interval in seconds (900 and 5 by default), or a refusal (Error, HTTPStatus default 400).
type DeviceSpec struct {
	ExpiresIn  int64  `json:"expires_in,omitempty"`
	Interval   int64  `json:"interval,omitempty"`
	Error      string `json:"error,omitempty"`
	HTTPStatus int    `json:"http_status,omitempty"`
}

// KeyringFailure makes the next Count (default 1) keyring operations Op ("get", "set",
// "delete") on User fail.
type KeyringFailure struct {
	Op    string `json:"op"`
	User  string `json:"user"`
	Count int    `json:"count,omitempty"`
	// Insecure: fail as a missing or insecure credential store (INSECURE_STORE).
	Insecure bool `json:"insecure,omitempty"`
}

// Step is an operation, or a world action (what another process does between steps).
type Step struct {
	Op      string            `json:"op,omitempty"`
	Args    json.RawMessage   `json:"args,omitempty"`
	Secrets map[string]string `json:"secrets,omitempty"`
	// Process runs the operation in another process of the same world ("A" by default):
	// its own token cache and client cache.
	Process string  `json:"process,omitempty"`
	Expect  *Expect `json:"expect,omitempty"`

	World *Action `json:"world,omitempty"`
}

// Action changes the world between steps, as another process or the user would.
type Action struct {
	AdvanceMS       int64                        `json:"advance_ms,omitempty"`
	SetConnections  map[string]*ConnectionSpec   `json:"set_connections,omitempty"` // null deletes
	SetClients      map[string]*ClientSpec       `json:"set_clients,omitempty"`     // null deletes
	SetLedgers      map[string]json.RawMessage   `json:"set_ledgers,omitempty"`
	SetRawLedgers   map[string]string            `json:"set_raw_ledgers,omitempty"`
	Hold            map[string]string            `json:"hold,omitempty"`
	Release         []string                     `json:"release,omitempty"`
	KeyringFailures []KeyringFailure             `json:"keyring_failures,omitempty"`
	SetAgents       map[string]*AgentSpec        `json:"set_agents,omitempty"`
	ScriptRefresh   map[string][]TokenResponse   `json:"script_refresh,omitempty"`
	ScriptAuthorize map[string][]AuthorizeResult `json:"script_authorize,omitempty"`
}

// Expect is what a step must produce. Exactly one of Result and Error (Error may be
// "ok: true" style omitted: a step with neither must succeed).
type Expect struct {
	// Error is matched as a subset of the error object {code, message, fix, ...fields};
	// with ErrorExact the whole object must be equal.
	Error      json.RawMessage `json:"error,omitempty"`
	ErrorExact bool            `json:"error_exact,omitempty"`
	// Result is matched as a subset of the result (see Subset: arrays keep length and order).
	Result json.RawMessage `json:"result,omitempty"`
	// Resolved maps a dotted path of the result to the secret its {"$ref"} resolves to.
	Resolved map[string]string `json:"resolved,omitempty"`
	// MessageContains / Excludes: substrings of the whole error object (or result) JSON.
	Contains []string `json:"contains,omitempty"`
	Excludes []string `json:"excludes,omitempty"`
	// Rounds is the number of questions after the prefetch (0: the hot path).
	Rounds *int `json:"rounds,omitempty"`
	// Status and Exit are the REST status and CLI exit code the policy's error table gives
	// the error's code.
	Status int `json:"status,omitempty"`
	Exit   int `json:"exit,omitempty"`
	// HostError: the operation ended with a host failure (not a decision) whose text holds
	// this substring, e.g. an injected keyring failure.
	HostError string `json:"host_error,omitempty"`
}

// Final is the world after the last step.
type Final struct {
	// Ledgers: the parsed document must equal the value; null means the file is absent.
	Ledgers map[string]json.RawMessage `json:"ledgers,omitempty"`
	// RawLedgers: the file's bytes must equal the string exactly.
	RawLedgers map[string]string `json:"raw_ledgers,omitempty"`
	// Connections / Clients: a subset of the decoded keyring blob (with client_id_hash
	// derivable from client_id); null means absent.
	Connections map[string]json.RawMessage `json:"connections,omitempty"`
	Clients     map[string]json.RawMessage `json:"clients,omitempty"`
	// Keyring lists exactly which entries exist (users, among those the runner knows).
	Keyring []string `json:"keyring,omitempty"`
	// KeyringValues: the raw values of some entries (MCP environment values).
	KeyringValues map[string]string `json:"keyring_values,omitempty"`
	// TokenServer: what the authorization server received.
	TokenServer *FinalTokenServer `json:"token_server,omitempty"`
	// Events is every event emitted during the steps, in order (required; [] for none).
	Events *[]Event `json:"events"`
}

// FinalTokenServer is what the authorization server received during the steps.
type FinalTokenServer struct {
	// Requests is the number of refresh requests; Exchanges of authorization-code
	// requests (a code exchanged, or refused).
	Requests  *int `json:"requests,omitempty"`
	Exchanges *int `json:"exchanges,omitempty"`
	// Revocations is the number of requests at the revocation endpoint (RFC 7009); Revoked
	// the number of refresh tokens it revoked (a request authenticated as the server
	// expects and not scripted to fail).
	Revocations *int `json:"revocations,omitempty"`
	Revoked     *int `json:"revoked,omitempty"`
	// ClientAuth is how every token-endpoint request authenticated the client, in order:
	// client_secret_basic (HTTP Basic), client_secret_post (the secret in the form), none,
	// or mixed (both).
	ClientAuth []string `json:"client_auth,omitempty"`
}

// Event is an emitted event.
type Event struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// Exceptions are known differences: scenario id → shell/engine pair → reason. The runner
// requires such a scenario to fail on that pair (so a fixed difference is noticed).
type Exceptions map[string]map[string]string

// Corpus is a loaded corpus.
type Corpus struct {
	Files      []*File
	Exceptions Exceptions
}

// Find returns the scenario with the given id, or nil.
func (c *Corpus) Find(id string) *Scenario {
	for _, s := range c.Scenarios() {
		if s.ID() == id {
			return s
		}
	}
	return nil
}

// Scenarios returns every scenario, sorted by id.
func (c *Corpus) Scenarios() []*Scenario {
	var out []*Scenario
	for _, f := range c.Files {
		out = append(out, f.Scenarios...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// decodeYAML reads YAML into JSON-tagged structs: YAML → generic value → JSON → struct, so
// the one schema (json tags, schema/scenario.schema.json) serves Go and foreign hosts.
func decodeYAML(data []byte, v any) error {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ToJSON converts a YAML corpus file to JSON (for schema validation and foreign hosts).
func ToJSON(data []byte) ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// Load reads every *.yaml file of fsys's root (exceptions.yaml is the exceptions table).
func Load(fsys fs.FS) (*Corpus, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	c := &Corpus{Exceptions: Exceptions{}}
	seen := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || path.Ext(name) != ".yaml" {
			continue
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if name == "exceptions.yaml" {
			if err := decodeYAML(data, &c.Exceptions); err != nil {
				return nil, fmt.Errorf("conformance: %s: %w", name, err)
			}
			continue
		}
		var f File
		if err := decodeYAML(data, &f); err != nil {
			return nil, fmt.Errorf("conformance: %s: %w", name, err)
		}
		f.path = name
		if f.Family == "" || strings.TrimSuffix(name, ".yaml") != f.Family {
			return nil, fmt.Errorf("conformance: %s: family must be %q", name, strings.TrimSuffix(name, ".yaml"))
		}
		for i, s := range f.Scenarios {
			s.Family, s.file = f.Family, name
			if s.Name == "" || strings.ContainsAny(s.Name, "/ ") {
				return nil, fmt.Errorf("conformance: %s: scenario %d: name must be non-empty, without spaces or slashes", name, i)
			}
			if prev, dup := seen[s.ID()]; dup {
				return nil, fmt.Errorf("conformance: %s: scenario %s already in %s", name, s.ID(), prev)
			}
			seen[s.ID()] = name
			if err := s.check(); err != nil {
				return nil, fmt.Errorf("conformance: %s: %w", s.ID(), err)
			}
			merged, err := MergePatch(f.Base, s.World)
			if err != nil {
				return nil, fmt.Errorf("conformance: %s: world: %w", s.ID(), err)
			}
			s.merged = merged
			dec := json.NewDecoder(bytes.NewReader(merged))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s.world); err != nil {
				return nil, fmt.Errorf("conformance: %s: world: %w", s.ID(), err)
			}
		}
		c.Files = append(c.Files, &f)
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Family < c.Files[j].Family })
	for id := range c.Exceptions {
		if _, ok := seen[id]; !ok {
			return nil, fmt.Errorf("conformance: exceptions.yaml names unknown scenario %s", id)
		}
	}
	return c, nil
}

// check rejects a scenario that asserts nothing.
func (s *Scenario) check() error {
	if s.Behaviour == "" {
		return fmt.Errorf("no behaviour: say which rule of docs/behaviour.md it checks")
	}
	if len(s.Steps) == 0 {
		return fmt.Errorf("no steps")
	}
	if s.Final == nil || s.Final.Events == nil {
		return fmt.Errorf("no final.events: every scenario states the events it emits ([] for none)")
	}
	for i, st := range s.Steps {
		switch {
		case st.Op != "" && st.World != nil:
			return fmt.Errorf("step %d: an operation or a world action, not both", i)
		case st.Op == "" && st.World == nil:
			return fmt.Errorf("step %d: neither an operation nor a world action", i)
		case st.Op != "" && st.Expect == nil:
			return fmt.Errorf("step %d (%s): no expect", i, st.Op)
		case st.Expect != nil && st.Expect.HostError != "" && (st.Expect.Error != nil || st.Expect.Result != nil):
			return fmt.Errorf("step %d (%s): a host error has no result or error object", i, st.Op)
		case st.Expect != nil && st.Expect.Error != nil && st.Expect.Result != nil:
			return fmt.Errorf("step %d (%s): expects both a result and an error", i, st.Op)
		}
	}
	return nil
}

// MergePatch applies a JSON merge patch (RFC 7386) to a document; either may be empty.
func MergePatch(doc, patch json.RawMessage) (json.RawMessage, error) {
	if len(patch) == 0 {
		if len(doc) == 0 {
			return json.RawMessage(`{}`), nil
		}
		return doc, nil
	}
	var d, p any
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, &d); err != nil {
			return nil, err
		}
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(d, p))
}

func mergeValue(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	out := make(map[string]any, len(dm))
	for k, v := range dm {
		out[k] = v
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergeValue(out[k], v)
	}
	return out
}
