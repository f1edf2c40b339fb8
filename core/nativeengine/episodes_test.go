package nativeengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
)

// The benchmarks and the allocation test ask the engine the questions a real driver asks
// (host ABI v2): they are captured from operations run on the in-memory world
// (internal/testworld/memhost) through package host, so their facts have exactly the shapes the host
// gives (secret descriptions, versions, ledger reads), not shapes written by hand.

// episode is one captured question and the decision the engine gave it.
type episode struct {
	Name     string // operation run and round, e.g. "allow/1"
	Query    []byte
	Decision []byte
}

// outcome summarises a decision: "need kind,kind", "done result", "done CODE", with
// "+effect,effect" when it carries effects.
func outcome(t testing.TB, d []byte) string {
	t.Helper()
	dec, err := core.ParseDecision(d)
	if err != nil {
		t.Fatalf("decision %s: %v", d, err)
	}
	var s string
	if dec.Status == "need" {
		var kinds []string
		for _, n := range dec.Needs {
			kinds = append(kinds, n.Kind)
		}
		s = "need " + strings.Join(kinds, ",")
	} else {
		s = "done result"
		if dec.Error != nil {
			s = "done " + dec.Error.Code
		}
		if len(dec.Effects) > 0 {
			var kinds []string
			for _, e := range dec.Effects {
				kinds = append(kinds, e.Kind)
			}
			s += " +" + strings.Join(kinds, ",")
		}
	}
	return s
}

// recorder is an engine that keeps every question it answers.
type recorder struct {
	*nativeengine.Engine
	mu   sync.Mutex
	name string
	eps  []episode
}

func (r *recorder) DecideJSON(ctx context.Context, dst, q []byte) ([]byte, error) {
	out, err := r.Engine.DecideJSON(ctx, dst, q)
	if err == nil {
		r.mu.Lock()
		r.eps = append(r.eps, episode{fmt.Sprintf("%s/%d", r.name, len(r.eps)), append([]byte(nil), q...), append([]byte(nil), out[len(dst):]...)})
		r.mu.Unlock()
	}
	return out, err
}

func (r *recorder) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	return core.DecideTyped(ctx, r, q)
}

// run performs one operation on w and returns its questions and its outcome.
func (r *recorder) run(t testing.TB, w *memhost.World, name, op string, args any) ([]episode, *hostabi.Outcome) {
	t.Helper()
	r.name, r.eps = name, nil
	d := &hostabi.Driver{Engine: r, Host: host.New(w.Capabilities(""))}
	out, err := d.Run(context.Background(), op, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r.eps, out
}

const (
	svc      = hostabi.DefaultService
	startMs  = 1_790_000_000_000
	chat     = "builtin:chat"
	stranger = "builtin:claude-code"
)

// gateWorld is a world with google connected under client-1, builtin:chat granted
// gmail.readonly, and the authorization server knowing the refresh token.
func gateWorld(t testing.TB, cat *catalog.Catalog) *memhost.World {
	t.Helper()
	w := memhost.New(time.UnixMilli(startMs), 1)
	memshell.Serve(w, cat)
	w.SetKeyring(svc, layout.ClientUser("google"), `{"client_id":"client-1","client_secret":"google-secret-1"}`)
	conn, err := json.Marshal(map[string]any{"account_email": "user@example.com", "client_id_hash": layout.ClientIDHash("client-1"),
		"connected_at": startMs/1000 - 86400, "refresh_token": "rt-google-1", "scopes": []string{"gmail.readonly", "openid"}})
	if err != nil {
		t.Fatal(err)
	}
	w.SetKeyring(svc, layout.ConnectionUser("google"), string(conn))
	w.Server.IssueToken("google", "rt-google-1", nil)
	w.SetFile(layout.Grants, []byte(`{"google": {"builtin:chat": ["gmail.readonly"]}}`))
	return w
}

// gateEpisodes are the gate's questions on a warm world, each with the outcome it must
// have: a cached token handed out, an agent refused (not granted), and the refresh plan of
// an expired token (lock, refresh, save).
func gateEpisodes(t testing.TB) (*nativeengine.Engine, map[string][]episode) {
	t.Helper()
	cat, err := catalog.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, cat.Data())
	r := &recorder{Engine: e}
	w := gateWorld(t, cat)
	args := func(agent string) map[string]any {
		return map[string]any{"provider": "google", "scopes": []string{"gmail.readonly"}, "agent": agent}
	}
	// No token cached yet: this run refreshes and caches one.
	if _, out := r.run(t, w, "warmup", "get_access_token", args(chat)); out.Error != nil {
		t.Fatalf("warm-up: %+v", out.Error)
	}
	eps := map[string][]episode{}
	var out *hostabi.Outcome
	eps["allow"], out = r.run(t, w, "allow", "get_access_token", args(chat))
	if out.Error != nil || w.Server.Stats().RefreshRequests != 1 {
		t.Fatalf("allow: %+v after %d requests", out.Error, w.Server.Stats().RefreshRequests)
	}
	eps["not-granted"], out = r.run(t, w, "not-granted", "get_access_token", args(stranger))
	if out.Error == nil || out.Error.Code != "AGENT_NOT_GRANTED" {
		t.Fatalf("not-granted: %s %+v", out.Result, out.Error)
	}
	w.Advance(2 * time.Hour)
	eps["refresh"], out = r.run(t, w, "refresh", "get_access_token", args(chat))
	if out.Error != nil || w.Server.Stats().RefreshRequests != 2 {
		t.Fatalf("refresh: %+v after %d requests", out.Error, w.Server.Stats().RefreshRequests)
	}
	return e, eps
}

// The captured questions are the gate's: the hot path asks once or twice and hands out
// the cached token, the refusal ends with AGENT_NOT_GRANTED, the refresh plan takes the
// lock, asks for the refresh request and saves what it got.
func TestGateEpisodes(t *testing.T) {
	_, eps := gateEpisodes(t)
	last := func(name string) string {
		l := eps[name]
		return outcome(t, l[len(l)-1].Decision)
	}
	if got := last("allow"); got != "done result" {
		t.Errorf("allow ends %q", got)
	}
	if got := last("not-granted"); got != "done AGENT_NOT_GRANTED" {
		t.Errorf("not-granted ends %q", got)
	}
	var kinds []string
	for _, ep := range eps["refresh"] {
		kinds = append(kinds, outcome(t, ep.Decision))
	}
	all := strings.Join(kinds, " | ")
	for _, want := range []string{"lock.acquire", "http.request", "keyring.set"} {
		if !strings.Contains(all, want) {
			t.Errorf("the refresh plan never asks %s: %s", want, all)
		}
	}
	for name, l := range eps {
		for _, ep := range l {
			t.Logf("%s %s: %s", name, ep.Name, outcome(t, ep.Decision))
		}
	}
}

// scaledCatalog is a catalog of n connectors c000, c001, ...: every fifth a local MCP
// server with one required key, every seventh a remote MCP server, the rest OAuth
// providers, with the built-in agents.
func scaledCatalog(t testing.TB, n int) *catalog.Catalog {
	t.Helper()
	conns := map[string]any{}
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		switch {
		case i%5 == 4:
			conns[id] = map[string]any{"type": "mcp_server", "display_name": id, "command": "npx", "args": []string{"-y", id},
				"env": []any{map[string]any{"key": "TOKEN", "required": true, "secret": true}}}
		case i%7 == 6:
			conns[id] = map[string]any{"type": "mcp_remote", "display_name": id}
		default:
			conns[id] = map[string]any{"type": "oauth_pkce", "display_name": id, "default_scopes": []string{"openid"},
				"authorization_url": "https://" + id + ".example.com/authorize", "token_url": "https://" + id + ".example.com/token",
				"available_scopes": nodiff.BenchScopes}
		}
	}
	raw, err := json.Marshal(map[string]any{"connectors": conns})
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = c.WithBuiltinAgents(catalog.Default().BuiltinAgents()); err != nil {
		t.Fatal(err)
	}
	return c
}

// listingEpisodes are the last questions of status and list_grants (the ones that carry
// every fact) on a world of connectors × agents: every OAuth provider connected, every
// local MCP server configured, agents granted on every connector (six in seven) and every
// fifth agent active on the MCP servers.
func listingEpisodes(t testing.TB, connectors, agents int) (*nativeengine.Engine, map[string]episode) {
	t.Helper()
	cat := scaledCatalog(t, connectors)
	e := newEngine(t, cat.Data())
	r := &recorder{Engine: e}
	w := memhost.New(time.UnixMilli(startMs), 1)
	grants, actives := map[string]any{}, map[string]any{}
	for c := range connectors {
		id := fmt.Sprintf("c%03d", c)
		g := map[string]any{}
		for a := range agents {
			if sc := nodiff.GrantedScopes(a + c); sc != nil {
				g[fmt.Sprintf("installed:agent-%04d", a)] = sc
			}
		}
		grants[id] = g
		entry, _ := cat.Entry(id)
		switch entry.Type {
		case catalog.TypeOAuth:
			w.SetKeyring(svc, layout.ClientUser(id), `{"client_id":"client-`+id+`"}`)
			w.SetKeyring(svc, layout.ConnectionUser(id), layout.Connection{AccountEmail: "user@example.com",
				ClientIDHash: layout.ClientIDHash("client-" + id), ConnectedAt: startMs/1000 - 86400,
				RefreshToken: "rt-" + id, Scopes: nodiff.BenchScopes[:5]}.Encode())
		case catalog.TypeMCPServer:
			r.name = "configure"
			d := &hostabi.Driver{Engine: r, Host: host.New(w.Capabilities(""))}
			out, err := d.Run(context.Background(), "configure_mcp", map[string]any{"connector": id, "env_keys": []string{"TOKEN"}},
				map[string]string{"env.TOKEN": "token-" + id})
			if err != nil || out.Error != nil {
				t.Fatalf("configure %s: %v %+v", id, err, out.Error)
			}
			m := map[string]any{}
			for a := 0; a < agents; a += 5 {
				m[fmt.Sprintf("installed:agent-%04d", a)] = true
			}
			actives[id] = m
		}
	}
	doc := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	w.SetFile(layout.Grants, doc(grants))
	w.SetFile(layout.Activations, doc(map[string]any{"version": 1, "activations": actives}))
	eps := map[string]episode{}
	for _, op := range []string{"status", "list_grants"} {
		l, out := r.run(t, w, op, op, map[string]any{})
		if out.Error != nil {
			t.Fatalf("%s: %+v", op, out.Error)
		}
		eps[op] = l[len(l)-1]
	}
	return e, eps
}

// The listings answer with every connector and every grant of the world.
func TestListingEpisodes(t *testing.T) {
	const connectors, agents = 10, 20
	_, eps := listingEpisodes(t, connectors, agents)
	for op, ep := range eps {
		if got := outcome(t, ep.Decision); got != "done result" {
			t.Fatalf("%s ends %q", op, got)
		}
	}
	var status struct {
		Result struct {
			Connectors []struct {
				ID          string              `json:"id"`
				Configured  bool                `json:"configured"`
				Grants      map[string][]string `json:"grants"`
				Activations []any               `json:"activations"`
			} `json:"connectors"`
		} `json:"result"`
	}
	var grants struct {
		Result struct {
			Grants map[string]map[string][]string `json:"grants"`
		} `json:"result"`
	}
	if err := json.Unmarshal(eps["status"].Decision, &status); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(eps["list_grants"].Decision, &grants); err != nil {
		t.Fatal(err)
	}
	if len(status.Result.Connectors) != connectors || len(grants.Result.Grants) != connectors {
		t.Fatalf("%d connectors in status, %d in list_grants", len(status.Result.Connectors), len(grants.Result.Grants))
	}
	for c, st := range status.Result.Connectors {
		want := 0
		for a := range agents {
			if nodiff.GrantedScopes(a+c) != nil {
				want++
			}
		}
		if len(st.Grants) != want || len(grants.Result.Grants[st.ID]) != want {
			t.Errorf("%s: %d grants in status, %d in list_grants, want %d", st.ID, len(st.Grants), len(grants.Result.Grants[st.ID]), want)
		}
		if c%7 != 6 && !st.Configured {
			t.Errorf("%s is not configured", st.ID)
		}
		if mcp := c%5 == 4; mcp && len(st.Activations) != agents/5 {
			t.Errorf("%s: activations %v", st.ID, st.Activations)
		}
	}
}
