package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/grantwire/grantwire/internal/oprun"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/mcp"
)

// route is one route: method and path as ServeMux patterns take them.
type route struct {
	method, path string
	handler      func(*Server) http.HandlerFunc
}

// routeTable is every route of the API, the page and the OpenAPI document. The OpenAPI
// document (openapi.json) lists exactly these (a test checks both ways).
var routeTable = []route{
	{"GET", "/{$}", func(s *Server) http.HandlerFunc { return s.page }},
	{"GET", "/assets/{name}", func(s *Server) http.HandlerFunc { return s.asset }},
	{"GET", "/api/openapi.json", func(s *Server) http.HandlerFunc { return s.openapi }},
	{"GET", "/api/agents", func(s *Server) http.HandlerFunc { return s.listAgents }},
	{"GET", "/api/connectors", func(s *Server) http.HandlerFunc { return s.listConnectors }},
	{"GET", "/api/connectors/events", func(s *Server) http.HandlerFunc { return s.events }},
	{"GET", "/api/connectors/_flows", func(s *Server) http.HandlerFunc { return s.listFlows }},
	{"DELETE", "/api/connectors/_flows/{flow_id}", func(s *Server) http.HandlerFunc { return s.cancelFlow }},
	{"GET", "/api/connectors/{id}", func(s *Server) http.HandlerFunc { return s.getConnector }},
	{"DELETE", "/api/connectors/{id}", func(s *Server) http.HandlerFunc { return s.disconnect }},
	{"POST", "/api/connectors/{id}/configure", func(s *Server) http.HandlerFunc { return s.configure }},
	{"POST", "/api/connectors/{id}/test", func(s *Server) http.HandlerFunc { return s.test }},
	{"POST", "/api/connectors/{id}/authorize", func(s *Server) http.HandlerFunc { return s.authorize }},
	{"POST", "/api/connectors/{id}/authorize-device", func(s *Server) http.HandlerFunc { return s.authorizeDevice }},
	{"GET", "/api/connectors/{id}/grants", func(s *Server) http.HandlerFunc { return s.listGrants }},
	{"GET", "/api/connectors/{id}/grants/{agent}", func(s *Server) http.HandlerFunc { return s.getGrant }},
	{"PUT", "/api/connectors/{id}/grants/{agent}", func(s *Server) http.HandlerFunc { return s.putGrant }},
	{"DELETE", "/api/connectors/{id}/grants/{agent}", func(s *Server) http.HandlerFunc { return s.deleteGrant }},
	{"GET", "/api/connectors/{id}/activations", func(s *Server) http.HandlerFunc { return s.listActivations }},
	{"GET", "/api/connectors/{id}/activations/{agent}", func(s *Server) http.HandlerFunc { return s.getActivation }},
	{"PUT", "/api/connectors/{id}/activations/{agent}", func(s *Server) http.HandlerFunc { return s.putActivation }},
	{"DELETE", "/api/connectors/{id}/activations/{agent}", func(s *Server) http.HandlerFunc { return s.deleteActivation }},
	{"GET", "/v1/connections", func(s *Server) http.HandlerFunc { return s.listConnections }},
	{"GET", "/v1/connections/{provider}", func(s *Server) http.HandlerFunc { return s.getConnection }},
	{"POST", "/v1/connections/{provider}", func(s *Server) http.HandlerFunc { return s.importConnection }},
	{"DELETE", "/v1/connections/{provider}", func(s *Server) http.HandlerFunc { return s.deleteConnection }},
}

// Routes lists every route as "METHOD /path" with OpenAPI's path templates ("/" for the
// page), for the test that checks them against openapi.json.
func Routes() []string {
	out := make([]string, 0, len(routeTable))
	for _, r := range routeTable {
		out = append(out, r.method+" "+strings.TrimSuffix(r.path, "{$}"))
	}
	return out
}

// OpenAPI returns the committed OpenAPI 3.1 document this server serves.
func OpenAPI() []byte {
	b, _ := assets.ReadFile("openapi.json")
	return b
}

func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	for _, r := range routeTable {
		m.HandleFunc(r.method+" "+r.path, r.handler(s))
	}
	return m
}

// --- the page ----------------------------------------------------------------------------

// pageCSP allows the page its own script, style and API, and nothing else.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("web/index.html")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

var assetTypes = map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	typ := ""
	for ext, t := range assetTypes {
		if strings.HasSuffix(name, ext) {
			typ = t
		}
	}
	b, err := fs.ReadFile(assets, "web/"+name)
	if typ == "" || err != nil || strings.Contains(name, "/") {
		s.problem(w, "NOT_FOUND", "no such asset", "")
		return
	}
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Content-Security-Policy", pageCSP)
	_, _ = w.Write(b)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	b, _ := assets.ReadFile("openapi.json")
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// --- connectors --------------------------------------------------------------------------

// view is one row of the policy's connector_view.
type view struct {
	ID          string              `json:"id"`
	Type        string              `json:"type"`
	DisplayName string              `json:"display_name"`
	Category    string              `json:"category"`
	Tier        string              `json:"tier"`
	Configured  bool                `json:"configured"`
	Account     string              `json:"account"`
	Scopes      []string            `json:"scopes"`
	ConnectedAt *int64              `json:"connected_at"`
	Tripwire    *string             `json:"tripwire"`
	EnvKeys     []string            `json:"env_keys"`
	MissingKeys []string            `json:"missing_keys"`
	Grants      map[string][]string `json:"grants"`
	Activations []string            `json:"activations"`
	Client      json.RawMessage     `json:"client"`
	Agents      json.RawMessage     `json:"agents"`
	Health      json.RawMessage     `json:"health"`
	// SetupFields are the connector's configure form, as the policy publishes them.
	SetupFields []setupField `json:"setup_fields"`
}

type viewResult struct {
	Connectors    []view          `json:"connectors"`
	AgentsProblem json.RawMessage `json:"agents_problem"`
}

// summary is a connector as the API shows it: the policy's view, with the catalog's
// display data. It never holds a secret: a client is shown as configured/has_secret.
type summary struct {
	ID                 string              `json:"id"`
	DisplayName        string              `json:"display_name"`
	Description        string              `json:"description"`
	Category           string              `json:"category"`
	Tier               string              `json:"tier"`
	Type               string              `json:"type"`
	DocsURL            string              `json:"docs_url"`
	Configured         bool                `json:"configured"`
	AccountID          string              `json:"account_id"`
	Scopes             []string            `json:"scopes"`
	ConnectedAt        *int64              `json:"connected_at"`
	Tripwire           *string             `json:"tripwire"`
	OAuthClient        json.RawMessage     `json:"oauth_client"`
	DefaultScopes      []string            `json:"default_scopes"`
	AvailableScopes    []string            `json:"available_scopes"`
	SupportsDeviceCode bool                `json:"supports_device_code"`
	SetupFields        []setupField        `json:"setup_fields"`
	MCPEnvKeys         []string            `json:"mcp_env_keys"`
	MissingKeys        []string            `json:"missing_keys"`
	Command            string              `json:"command,omitempty"`
	Grants             map[string][]string `json:"grants"`
	Activations        map[string]bool     `json:"activations"`
	// Tools are the tool rules of an MCP server's agents (agent → tool names; a pair
	// without one is absent: every tool).
	Tools  map[string][]string `json:"tools"`
	Agents json.RawMessage     `json:"agents"`
	// Health is what the last health pass recorded of a connection that is not healthy
	// (the payload of its connector.health event), or null.
	Health json.RawMessage `json:"health"`
}

// setupField is one field of the configure form, as the policy's connector_view publishes
// it (setup_fields): for a provider its client id, secret and tenant; for a local MCP
// server each environment key. Secret fields are write-only.
type setupField struct {
	Key         string `json:"key"`
	Label       string `json:"label"`
	Kind        string `json:"kind"` // text or secret
	Required    bool   `json:"required"`
	Configured  bool   `json:"configured"`
	Description string `json:"description,omitempty"`
}

func (s *Server) summaries(r *http.Request, id string) ([]summary, json.RawMessage, error) {
	args := map[string]any{}
	if id != "" {
		args["connector"] = id
	}
	out, err := oprun.Of(s.client).Do(r.Context(), "connector_view", args, nil)
	if err != nil {
		return nil, nil, err
	}
	var v viewResult
	if err := json.Unmarshal(out.Result, &v); err != nil {
		return nil, nil, fmt.Errorf("connector_view: %w", err)
	}
	rules, err := mcp.Of(s.client).Tools().Rules(r.Context(), id)
	if err != nil {
		return nil, nil, err
	}
	cat := s.client.Catalog()
	res := make([]summary, 0, len(v.Connectors))
	for _, c := range v.Connectors {
		e, _ := cat.Entry(c.ID)
		sum := summary{
			ID: c.ID, DisplayName: c.DisplayName, Description: e.Description, Category: c.Category, Tier: c.Tier,
			Type: c.Type, DocsURL: e.DocsURL, Configured: c.Configured, AccountID: c.Account, Scopes: jsonx.NonNil(c.Scopes),
			ConnectedAt: c.ConnectedAt, Tripwire: c.Tripwire, OAuthClient: c.Client,
			DefaultScopes: jsonx.NonNil(e.DefaultScopes), AvailableScopes: jsonx.NonNil(e.AvailableScopes),
			SupportsDeviceCode: e.DeviceAuthorizationURL != "", SetupFields: []setupField{},
			MCPEnvKeys: jsonx.NonNil(c.EnvKeys), MissingKeys: jsonx.NonNil(c.MissingKeys), Command: e.Command,
			Grants: jsonx.OrEmpty(c.Grants), Activations: map[string]bool{}, Agents: c.Agents, Health: c.Health,
			Tools: jsonx.OrEmpty(rules[c.ID]),
		}
		for _, a := range c.Activations {
			sum.Activations[a] = true
		}
		if c.SetupFields != nil {
			sum.SetupFields = c.SetupFields
		}
		res = append(res, sum)
	}
	return res, v.AgentsProblem, nil
}

func (s *Server) listConnectors(w http.ResponseWriter, r *http.Request) {
	list, problem, err := s.summaries(r, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connectors": list, "tiers": catalog.Tiers, "agents_problem": problem})
}

func (s *Server) getConnector(w http.ResponseWriter, r *http.Request) {
	list, _, err := s.summaries(r, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(list) != 1 {
		s.fail(w, r, fmt.Errorf("connector_view returned %d connectors for one id", len(list)))
		return
	}
	writeJSON(w, http.StatusOK, list[0])
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	agents, problems, err := s.client.Agents(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": agents, "problems": jsonx.NonNil(problems)})
}

// configureBody is POST /api/connectors/{id}/configure: {"config": {...}}. A provider
// takes client_id, client_secret and tenant; a local MCP server its environment keys.
type configureBody struct {
	Config map[string]string `json:"config"`
}

func (s *Server) configure(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body configureBody
	if !s.decode(w, r, &body, false) {
		return
	}
	if body.Config == nil {
		s.problem(w, "USAGE", `usage: the body is {"config": {...}}`, "")
		return
	}
	// One operation for every connector type: the policy dispatches by the catalog (an
	// OAuth provider takes client_id, client_secret and tenant, any other connector its
	// environment keys) and refuses the values of the other kind.
	in := grantwire.ConfigureInput{}
	for k, v := range body.Config {
		switch k {
		case "client_id":
			in.ClientID = v
		case "client_secret":
			in.ClientSecret = v
		case "tenant":
			in.Tenant = v
		default:
			if in.Env == nil {
				in.Env = map[string]string{}
			}
			in.Env[k] = v
		}
	}
	res, err := s.client.Configure(r.Context(), id, in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if res.ClientIDHash != "" { // an OAuth client was stored
		writeJSON(w, http.StatusOK, map[string]any{"status": "saved", "connector_id": id, "has_secret": res.HasSecret, "tenant": res.Tenant})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"configured": true, "connector_id": id, "env_keys": jsonx.NonNil(res.EnvKeys)})
}

// test answers {connector_id, ok, detail} and, when the connector is not usable, the
// error that says why with its fix (200: the test ran). A local MCP server's command must
// also be found, as grantwire test checks.
func (s *Server) test(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	res, err := s.client.Test(r.Context(), id)
	if err != nil {
		var ge *grantwire.Error
		if !asError(err, &ge) || errors.Is(err, grantwire.ErrUnknownConnector) || errors.Is(err, grantwire.ErrUsage) {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"connector_id": id, "ok": false, "detail": ge.Summary, "error": errorBody(ge)})
		return
	}
	detail := res.Detail
	if res.Type == catalog.TypeMCPServer && s.cfg.LookPath != nil {
		path, err := s.cfg.LookPath(res.Command)
		if err != nil {
			msg := fmt.Sprintf("the command %q is not on PATH; install it to run %s", res.Command, id)
			writeJSON(w, http.StatusOK, map[string]any{"connector_id": id, "ok": false, "detail": msg,
				"error": map[string]any{"code": "COMMAND_NOT_FOUND", "message": msg, "summary": msg, "fix": ""}})
			return
		}
		detail += fmt.Sprintf("; %s is %s", res.Command, path)
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector_id": id, "ok": true, "detail": detail})
}

// disconnect answers 200 with what was removed (GAIA answers 204; the result says when an
// unreadable ledger could not be cleaned, which must not go unseen).
func (s *Server) disconnect(w http.ResponseWriter, r *http.Request) {
	res, err := s.client.Disconnect(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, disconnectBody(res))
}

func disconnectBody(res *grantwire.DisconnectResult) map[string]any {
	return map[string]any{
		"connector_id": res.Connector, "removed": res.Removed, "revoked_grants": jsonx.NonNil(res.RevokedGrants),
		"deactivated": jsonx.NonNil(res.Deactivated), "revoked_at_provider": res.RevokedAtProvider, "warnings": jsonx.NonNil(res.Warnings),
	}
}

// --- authorizations ------------------------------------------------------------------------

// start decodes an authorization's body and starts its flow of kind for the connector in
// the path; nil once it answered a failure.
func (s *Server) start(w http.ResponseWriter, r *http.Request, kind string) *flow {
	var body authorizeBody
	if !s.decode(w, r, &body, true) {
		return nil
	}
	f, err := s.startFlow(r.Context(), r.PathValue("id"), kind, body)
	if err != nil {
		s.fail(w, r, err)
		return nil
	}
	return f
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	f := s.start(w, r, kindPKCE)
	if f == nil {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"flow_id": f.ID, "authorization_url": f.AuthorizationURL, "connector_id": f.Connector, "kind": f.Kind})
}

// authorizeDevice starts a device authorization (RFC 8628) and answers what the user
// needs once the provider issued the code: {flow_id, connector_id, kind, verification_uri,
// verification_uri_complete?, user_code, expires_in, interval} (seconds). It never answers
// the device code: that secret stays in the operation's host, which polls with it.
func (s *Server) authorizeDevice(w http.ResponseWriter, r *http.Request) {
	f := s.start(w, r, kindDevice)
	if f == nil {
		return
	}
	s.flows.mu.Lock()
	out := map[string]any{
		"flow_id": f.ID, "connector_id": f.Connector, "kind": f.Kind,
		"verification_uri": f.VerificationURI, "user_code": f.UserCode,
		"expires_in": int64(f.expiresIn / time.Second), "interval": int64(f.interval / time.Second),
	}
	if f.VerificationURIComplete != "" {
		out["verification_uri_complete"] = f.VerificationURIComplete
	}
	s.flows.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listFlows(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"flows": s.flows.list()})
}

// cancelFlow cancels a flow and waits (up to 5 s) until its operation has ended, having
// stored nothing.
func (s *Server) cancelFlow(w http.ResponseWriter, r *http.Request) {
	f, ok := s.flows.get(r.PathValue("flow_id"))
	if !ok {
		s.problem(w, "NOT_FOUND", "no authorization is waiting under this flow id (it may have ended)", "")
		return
	}
	f.cancel()
	select {
	case <-f.done:
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusNoContent)
}

// --- grants and activations -------------------------------------------------------------

func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	g, err := s.client.ListGrants(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"grants": jsonx.OrEmpty(g[id])})
}

func (s *Server) getGrant(w http.ResponseWriter, r *http.Request) {
	id, agent := r.PathValue("id"), r.PathValue("agent")
	g, err := s.client.ListGrants(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	scopes, granted := g[id][agent]
	writeJSON(w, http.StatusOK, map[string]any{"connector_id": id, "agent_id": agent, "granted": granted, "scopes": jsonx.NonNil(scopes)})
}

type grantBody struct {
	Scopes *[]string `json:"scopes"`
}

func (s *Server) putGrant(w http.ResponseWriter, r *http.Request) {
	id, agent := r.PathValue("id"), r.PathValue("agent")
	var body grantBody
	if !s.decode(w, r, &body, false) {
		return
	}
	if body.Scopes == nil {
		s.problem(w, "USAGE", `usage: the body is {"scopes": [...]}`, "")
		return
	}
	res, err := s.client.Grant(r.Context(), id, agent, *body.Scopes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector_id": res.Connector, "agent_id": res.Agent, "scopes": jsonx.NonNil(res.Scopes), "changed": res.Changed, "warnings": jsonx.NonNil(res.Warnings)})
}

// deleteGrant answers 200 with what was revoked: the warnings name a ledger that could not
// be cleaned, with the command that moves it aside (as the CLI prints them).
func (s *Server) deleteGrant(w http.ResponseWriter, r *http.Request) {
	res, err := s.client.RevokeGrant(r.Context(), r.PathValue("id"), r.PathValue("agent"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector_id": res.Connector, "agent_id": res.Agent, "changed": res.Changed, "warnings": jsonx.NonNil(res.Warnings)})
}

// activationsOf reads connector id's activations and tool rules (agent → tool names); on
// an error it answers the problem and returns false.
func (s *Server) activationsOf(w http.ResponseWriter, r *http.Request, id string) (map[string]bool, map[string][]string, bool) {
	a, err := s.client.ListActivations(r.Context(), id)
	if err == nil {
		var rules map[string]map[string][]string
		if rules, err = mcp.Of(s.client).Tools().Rules(r.Context(), id); err == nil {
			return a[id], rules[id], true
		}
	}
	s.fail(w, r, err)
	return nil, nil, false
}

func (s *Server) listActivations(w http.ResponseWriter, r *http.Request) {
	active, rules, ok := s.activationsOf(w, r, r.PathValue("id"))
	if ok {
		writeJSON(w, http.StatusOK, map[string]any{"activations": jsonx.OrEmpty(active), "tools": jsonx.OrEmpty(rules)})
	}
}

func (s *Server) getActivation(w http.ResponseWriter, r *http.Request) {
	id, agent := r.PathValue("id"), r.PathValue("agent")
	active, rules, ok := s.activationsOf(w, r, id)
	if !ok {
		return
	}
	var tools any // null: no rule, every tool
	if t, ok := rules[agent]; ok {
		tools = jsonx.NonNil(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector_id": id, "agent_id": agent, "active": active[agent], "tools": tools})
}

type activationBody struct {
	Scopes   []string  `json:"scopes"`
	Tools    *[]string `json:"tools"`     // the pair's tool rule
	AllTools bool      `json:"all_tools"` // remove the rule
}

func (s *Server) putActivation(w http.ResponseWriter, r *http.Request) {
	id, agent := r.PathValue("id"), r.PathValue("agent")
	var body activationBody
	if !s.decode(w, r, &body, true) {
		return
	}
	var res *grantwire.Activation
	var err error
	switch {
	case body.Tools != nil && body.AllTools:
		// both at once: the policy refuses them (USAGE) in its own words, writing nothing
		_, err = oprun.Of(s.client).Do(r.Context(), "activate", map[string]any{"connector": id, "agent": agent, "tools": *body.Tools, "all_tools": true}, nil)
		if err == nil {
			err = fmt.Errorf("activate accepted tools and all_tools together")
		}
	case body.Tools != nil:
		res, err = mcp.Of(s.client).Tools().Allow(r.Context(), id, agent, *body.Tools, body.Scopes)
	case body.AllTools:
		res, err = mcp.Of(s.client).Tools().AllowAll(r.Context(), id, agent, body.Scopes)
	default:
		res, err = s.client.Activate(r.Context(), id, agent, body.Scopes)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := map[string]any{
		"connector_id": res.Connector, "agent_id": res.Agent, "active": true, "auto_granted": res.AutoGranted,
		"grant_source": res.GrantSource, "scopes": jsonx.NonNil(res.Scopes), "changed": res.Changed,
		"missing_keys": jsonx.NonNil(res.MissingKeys), "warnings": jsonx.NonNil(res.Warnings),
	}
	if body.Tools != nil || body.AllTools {
		out["tools"] = res.Tools
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteActivation(w http.ResponseWriter, r *http.Request) {
	if _, err := s.client.Deactivate(r.Context(), r.PathValue("id"), r.PathValue("agent")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// --- forwarded connections (/v1/connections) ---------------------------------------------

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	conns, cleared, err := s.client.Connections(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connections": jsonx.NonNil(conns), "cleared": jsonx.NonNil(cleared)})
}

func (s *Server) getConnection(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("provider")
	if _, err := s.client.Status(r.Context(), p); err != nil {
		s.fail(w, r, err) // the policy's error for an id it does not know
		return
	}
	conns, _, err := s.client.Connections(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, c := range conns {
		if c.Provider == p {
			writeJSON(w, http.StatusOK, c)
			return
		}
	}
	s.problem(w, "NOT_FOUND", p+" has no connection", "")
}

// importConnection is POST /v1/connections/{provider}: a connection a host application
// obtained (grantwire.Forwarded).
func (s *Server) importConnection(w http.ResponseWriter, r *http.Request) {
	var b grantwire.Forwarded
	if !s.decode(w, r, &b, false) {
		return
	}
	b.Provider = r.PathValue("provider")
	res, err := s.client.ImportForwarded(r.Context(), b)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res.Scopes, res.GrantAgents, res.Warnings = jsonx.NonNil(res.Scopes), jsonx.NonNil(res.GrantAgents), jsonx.NonNil(res.Warnings)
	writeJSON(w, http.StatusCreated, res)
}

// deleteConnection disconnects the provider (the OAuth client is kept, as every
// disconnect keeps it) and answers 204.
func (s *Server) deleteConnection(w http.ResponseWriter, r *http.Request) {
	if _, err := s.client.Disconnect(r.Context(), r.PathValue("provider")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
