// Package nodiff proves grantwire's two engines identical: a generator of random queries
// driven by the policy's own structure (every operation, valid and invalid arguments, every
// fact absent, not found, found or malformed, locks held and busy, refresh and
// authorization outcomes, restart attempts), the catalogs they run against, and fixed
// scenarios for the benchmarks. Its tests feed the same queries to core/wasmengine and
// core/regoengine and demand byte-identical decisions and identical errors.
//
// It is internal test support: only tests import it, and it imports the standard library
// and core only (the engines are imported by its tests).
package nodiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/core"
)

// Ops lists every operation of the policy's manifest, in the manifest's order.
var Ops = []string{
	"get_access_token", "grant", "revoke", "list_grants", "activate", "deactivate",
	"list_activations", "visible_servers", "disconnect", "connect", "configure_client",
	"status", "connections", "import_forwarded", "configure_mcp", "credential", "check_url",
}

// Gen generates queries for one catalog. It is deterministic for a given seed.
type Gen struct {
	r   *rand.Rand
	cat *Catalog
	w   world
}

// NewGen returns a generator seeded with (seed, stream).
func NewGen(cat *Catalog, seed, stream uint64) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, stream)), cat: cat}
}

// Rand exposes the generator's source (for callers that make their own choices).
func (g *Gen) Rand() *rand.Rand { return g.r }

// world holds the per-episode choices that keep facts consistent with each other, so that
// random episodes reach the deep branches (a valid cached token, a rotated client, ...).
type world struct {
	hash, connHash  any // client id hashes of the client configuration and the connection
	tenant, cTenant any // tenant of the connection and of the client
	connectedAt     any
	now             any
	connScopes      []any
	req             []any // the scopes the operation asks for, when it asks for some
	conn            any   // the connector or provider the operation is about
	corrupt         bool  // the stored connection blob is not valid JSON
}

var (
	hashes      = []any{"1a2b3c4d", "9f8e7d6c"}
	tenants     = []any{nil, "consumers", "organizations"}
	connectedAt = []any{json.Number("1789990000000"), json.Number("1789000000000")}
	nows        = []any{json.Number("1790000000000"), json.Number("1790000000001")}
	agentsPool  = []any{
		"builtin:chat", "installed:notes", "native:mail", "custom:0123456789abcdef:tool",
		"it's", "two words", "ü-agent", "a", "semi;colon", "$HOME", "tab\tagent",
	}
	scopePool = []any{
		"openid", "email", "profile", "https://www.googleapis.com/auth/gmail.readonly",
		"https://graph.microsoft.com/User.Read", "use", "a", "b", "x,y", "sp ace", "q'uote",
		"$(rm)", "é", "", "dq\"", "back\\slash", "<html>", "offline_access",
	}
	envKeysPool = []any{"GITHUB_TOKEN", "A", "B", "C", "UNKNOWN", ""}
	ips         = []any{
		"", "", "127.0.0.1", "127.0.0.1", "127.9.9.9", "::1", "::1", "169.254.169.254", "fe80::1",
		"FE80::1", "10.0.0.1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:7f00:1",
		"::127.0.0.1", "fe80::1%eth0", "127.0.0.01", "127.1", "not-an-ip", "1:2:3:4:5:6:7:8",
		"2001:db8::1", "0:0:0:0:0:0:0:1", "169.254.0.0/16",
	}
)

func (g *Gen) pick(xs []any) any { return xs[g.r.IntN(len(xs))] }

func (g *Gen) chance(p float64) bool { return g.r.Float64() < p }

// junk returns a value of a random JSON type (for malformed fields).
func (g *Gen) junk() any {
	switch g.r.IntN(9) {
	case 0:
		return nil
	case 1:
		return true
	case 2:
		return json.Number("0")
	case 3:
		if g.chance(0.1) {
			return json.Number("-1.5")
		}
		return json.Number("-1")
	case 4:
		return ""
	case 5:
		return "junk"
	case 6:
		return []any{}
	case 7:
		return map[string]any{}
	default:
		return []any{"a", json.Number("1")}
	}
}

func (g *Gen) connector() any {
	switch {
	case g.chance(0.04):
		return g.junk()
	case g.chance(0.05):
		return g.pick([]any{"nope", "GOOGLE", "google ", "catalog"})
	}
	return g.pick(g.cat.anyIDs)
}

func (g *Gen) connectorOf(kind string) any {
	if g.chance(0.15) {
		return g.connector()
	}
	ids := g.cat.byType[kind]
	if len(ids) == 0 {
		return g.connector()
	}
	return g.pick(ids)
}

func (g *Gen) agent() any {
	switch {
	case g.chance(0.03):
		return g.junk()
	case g.chance(0.03):
		return ""
	case g.chance(0.01):
		return strings.Repeat("x", 257)
	}
	return g.pick(agentsPool[:6+g.r.IntN(len(agentsPool)-6+1)])
}

// scopes returns an array of scopes, mostly from a small pool so sets overlap.
func (g *Gen) scopes(max int) []any {
	n := g.r.IntN(max + 1)
	out := make([]any, 0, n)
	pool := scopePool[:6]
	if g.chance(0.3) {
		pool = scopePool
	}
	for range n {
		if g.chance(0.02) {
			out = append(out, g.junk())
			continue
		}
		out = append(out, g.pick(pool))
	}
	return out
}

func (g *Gen) scopesArg(max int) any {
	if g.chance(0.05) {
		return g.junk()
	}
	return g.scopes(max)
}

func (g *Gen) agentsArg() any {
	if g.chance(0.05) {
		return g.junk()
	}
	n := g.r.IntN(4)
	out := make([]any, 0, n)
	for range n {
		if g.chance(0.03) {
			out = append(out, g.junk())
			continue
		}
		out = append(out, g.pick(agentsPool[:6]))
	}
	return out
}

func (g *Gen) hashArg() any {
	switch {
	case g.chance(0.05):
		return g.junk()
	case g.chance(0.05):
		return "short"
	}
	return g.pick(hashes)
}

// Args returns random arguments for op: mostly well-formed, sometimes with a field
// missing, of the wrong type, or not an object at all.
func (g *Gen) Args(op string) any {
	a := map[string]any{}
	switch op {
	case "get_access_token":
		a["provider"] = g.connectorOf("oauth_pkce")
		a["agent"] = g.agent()
		a["scopes"] = g.scopesArg(3)
	case "grant":
		a["connector"] = g.connector()
		a["agent"] = g.agent()
		a["scopes"] = g.scopesArg(3)
	case "revoke", "credential":
		if op == "credential" {
			a["connector"] = g.connectorOf("mcp_server")
		} else {
			a["connector"] = g.connector()
		}
		a["agent"] = g.agent()
	case "activate", "deactivate":
		a["connector"] = g.connectorOf("mcp_server")
		a["agent"] = g.agent()
		switch g.r.IntN(4) {
		case 0:
			a["scopes"] = g.scopesArg(3)
		case 1:
			a["scopes"] = nil
		}
	case "list_grants", "list_activations", "status":
		if g.chance(0.6) {
			a["connector"] = g.connector()
		}
	case "visible_servers":
		a["agent"] = g.agent()
	case "disconnect":
		a["connector"] = g.connector()
	case "connect":
		a["connector"] = g.connectorOf("oauth_pkce")
		a["scopes"] = g.scopesArg(3)
		if g.chance(0.5) {
			a["scopes"] = []any{}
		}
		a["grant_agents"] = g.agentsArg()
	case "configure_client":
		a["connector"] = g.connectorOf("oauth_pkce")
		a["client_id_hash"] = g.hashArg()
		a["has_secret"] = g.pick([]any{true, false, true, false, "yes"})
		switch g.r.IntN(3) {
		case 0:
			a["tenant"] = g.pick([]any{"organizations", "common", json.Number("1")})
		case 1:
			a["tenant"] = nil
		}
	case "connections":
	case "import_forwarded":
		a["provider"] = g.connectorOf("oauth_pkce")
		a["client_id_hash"] = g.hashArg()
		a["has_client_secret"] = g.pick([]any{true, false, nil})
		a["scopes"] = g.scopesArg(4)
		a["account_email"] = g.pick([]any{"user@example.com", "", "ü@example.com"})
		a["grant_agents"] = g.agentsArg()
		if g.chance(0.3) {
			a["account_type"] = g.pick([]any{"personal", "work", nil})
		}
	case "configure_mcp":
		a["connector"] = g.connectorOf("mcp_server")
		n := g.r.IntN(4)
		keys := make([]any, 0, n)
		for range n {
			keys = append(keys, g.pick(envKeysPool))
		}
		a["env_keys"] = any(keys)
		if g.chance(0.04) {
			a["env_keys"] = g.junk()
		}
	case "check_url":
		a["url"] = g.url()
		a["hop"] = g.pick([]any{json.Number("0"), json.Number("0"), json.Number("1"), json.Number("1"), json.Number("5"), json.Number("6"), json.Number("-1"), "1"})
		a["purpose"] = g.pick([]any{"token", "registration", "revocation", "discovery", "authorization", "userinfo"})
		switch {
		case g.chance(0.4):
			a["from"] = nil
		case g.chance(0.5):
			a["from"] = map[string]any{"scheme": "https", "host": "example.com", "ip": g.pick([]any{"", "", "10.0.0.1", "127.0.0.1"})}
		default:
			a["from"] = g.url()
		}
	default:
		a["connector"] = g.connector()
	}
	return g.mutateArgs(a)
}

func (g *Gen) url() any {
	if g.chance(0.03) {
		return g.junk()
	}
	u := map[string]any{
		"scheme":   g.pick([]any{"https", "https", "http", "http", "http", "ftp", "HTTPS", ""}),
		"host":     g.pick([]any{"example.com", "example.com", "127.0.0.1", "localhost", "[::1]", "", "169.254.169.254", "fe80::1"}),
		"ip":       g.pick(ips),
		"userinfo": g.pick([]any{false, false, false, true, "no"}),
	}
	if u["scheme"] == "http" && g.chance(0.5) {
		u["ip"] = g.pick([]any{"127.0.0.1", "::1", "127.9.9.9"}) // plain HTTP to loopback, mostly
	}
	if g.chance(0.05) {
		delete(u, []string{"scheme", "host", "ip", "userinfo"}[g.r.IntN(4)])
	}
	return u
}

func (g *Gen) mutateArgs(a map[string]any) any {
	switch {
	case g.chance(0.02):
		return g.junk()
	case g.chance(0.08) && len(a) > 0:
		keys := sortedKeys(a)
		k := keys[g.r.IntN(len(keys))]
		if g.chance(0.5) {
			delete(a, k)
		} else {
			a[k] = g.junk()
		}
	case g.chance(0.03):
		a["unexpected"] = g.junk()
	}
	return a
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// resetWorld draws the consistent per-episode choices.
func (g *Gen) resetWorld() {
	w := &g.w
	w.hash = g.pick(hashes)
	w.connHash = w.hash
	if g.chance(0.3) {
		w.connHash = g.pick(hashes)
	}
	w.cTenant = g.pick(tenants)
	w.tenant = w.cTenant
	if g.chance(0.35) {
		w.tenant = g.pick(tenants[1:])
	}
	w.connectedAt = g.pick(connectedAt)
	w.now = g.pick(nows)
	w.connScopes = g.scopes(4)
	w.req, w.conn = nil, nil
	w.corrupt = g.chance(0.08)
}

// covering returns the requested scopes plus a few more, or (less often) random scopes:
// facts that usually satisfy the request, so episodes get past the scope checks.
func (g *Gen) covering() []any {
	if g.w.req == nil || g.chance(0.35) {
		return g.scopes(4)
	}
	out := append([]any{}, g.w.req...)
	return append(out, g.scopes(2)...)
}

// number returns n, rarely in a form the engines refuse (a fraction, an exponent) or
// replaced by a large integer.
func (g *Gen) number(n any) any {
	if !g.chance(0.006) {
		return n
	}
	s, ok := n.(json.Number)
	if !ok {
		return n
	}
	switch g.r.IntN(4) {
	case 0:
		return json.Number(string(s) + ".0")
	case 1:
		return json.Number("1.79e12")
	case 2:
		return json.Number("9007199254740991")
	default:
		return json.Number("-2147483649")
	}
}

func (g *Gen) nowFact() any {
	if g.chance(0.03) {
		return g.junk()
	}
	return g.number(g.w.now)
}

func (g *Gen) notFoundOr(p float64, found func() map[string]any) any {
	switch {
	case g.chance(0.03):
		return g.junk()
	case g.chance(p):
		return map[string]any{"found": false}
	}
	m := found()
	g.corrupt(m)
	return m
}

// corrupt sometimes drops a field of a found fact or gives it the wrong type.
func (g *Gen) corrupt(m map[string]any) {
	if len(m) == 0 || !g.chance(0.07) {
		return
	}
	keys := sortedKeys(m)
	k := keys[g.r.IntN(len(keys))]
	if g.chance(0.5) {
		delete(m, k)
	} else {
		m[k] = g.junk()
	}
}

func (g *Gen) connection(fresh bool) any {
	return g.notFoundOr(0.15, func() map[string]any {
		corrupt := g.w.corrupt
		if fresh && g.chance(0.3) {
			corrupt = g.chance(0.1)
		}
		if corrupt {
			return map[string]any{"found": true, "valid": false, "version": "v:corrupt"}
		}
		w := g.w
		hash, tenant, scopes := w.connHash, w.tenant, w.connScopes
		if fresh && g.chance(0.3) {
			hash, tenant, scopes = g.pick(hashes), g.pick(tenants), g.covering()
		}
		var sc any = scopes
		if g.chance(0.04) {
			sc = g.junk()
		}
		return map[string]any{
			"found": true, "valid": true, "account": "user@example.com", "scopes": sc,
			"connected_at": g.number(w.connectedAt), "client_id_hash": hash, "tenant": tenant,
			"account_type": g.pick([]any{nil, "personal"}),
			"refresh":      g.pick([]any{"sha256:aa", "sha256:bb"}),
			"version":      g.pick([]any{"v1", "v2"}),
		}
	})
}

func (g *Gen) client(fresh bool) any {
	return g.notFoundOr(0.12, func() map[string]any {
		w := g.w
		hash, tenant := w.hash, w.cTenant
		if fresh && g.chance(0.35) {
			hash, tenant = w.connHash, w.tenant
		}
		return map[string]any{
			"found": true, "client_id_hash": hash, "tenant": tenant,
			"has_secret": g.pick([]any{true, false}), "source": g.pick([]any{"keyring", "env"}),
			"version": g.pick([]any{"v1", "v2", "env:1a2b3c4d"}),
		}
	})
}

func (g *Gen) token() any {
	return g.notFoundOr(0.3, func() map[string]any {
		w := g.w
		deltas := []int64{-1000, 0, 59999, 60000, 60001, 3600000}
		now := int64(1790000000000)
		if s, ok := w.now.(json.Number); ok {
			if v, err := s.Int64(); err == nil {
				now = v
			}
		}
		at := w.connectedAt
		if g.chance(0.15) {
			at = g.pick(connectedAt)
		}
		hash := w.connHash
		if g.chance(0.15) {
			hash = g.pick(hashes)
		}
		return map[string]any{
			"found":          true,
			"expires_at":     g.number(json.Number(fmt.Sprint(now + deltas[g.r.IntN(len(deltas))]))),
			"client_id_hash": hash, "connected_at": at,
		}
	})
}

func (g *Gen) lock() any {
	switch {
	case g.chance(0.03):
		return g.junk()
	case g.chance(0.2):
		return "busy"
	}
	return "held"
}

func (g *Gen) refresh() any {
	if g.chance(0.03) {
		return g.junk()
	}
	var status, code any
	switch x := g.r.Float64(); {
	case x < 0.4:
		status, code = json.Number("200"), nil
	case x < 0.55:
		status, code = json.Number("400"), "invalid_grant"
	case x < 0.65:
		status, code = json.Number("401"), "invalid_client"
	case x < 0.8:
		status, code = g.pick([]any{json.Number("400"), json.Number("500"), json.Number("0"), json.Number("4294967296")}), g.pick([]any{"server_error", "", "invalid_grant"})
	default:
		status, code = g.pick([]any{"200", nil, json.Number("200"), json.Number("-1")}), g.pick([]any{nil, json.Number("1"), "x"})
	}
	m := map[string]any{
		"status":     status,
		"error":      code,
		"expires_in": g.pick([]any{json.Number("3600"), json.Number("0"), json.Number("-5"), g.number(json.Number("3600")), json.Number("9007199254740"), "3600", nil}),
		"rotated":    g.pick([]any{true, false}),
		"refresh":    g.pick([]any{nil, "sha256:bb"}),
	}
	g.corrupt(m)
	return m
}

func (g *Gen) authorize(req []any) any {
	if g.chance(0.03) {
		return g.junk()
	}
	m := map[string]any{
		"status":      g.pick([]any{"ok", "ok", "ok", "denied", "interactive_required", "error", json.Number("1")}),
		"error":       g.pick([]any{nil, "access_denied", "server_error"}),
		"http_status": g.pick([]any{json.Number("0"), json.Number("400"), json.Number("500")}),
	}
	if m["status"] == "ok" {
		var granted []any
		switch g.r.IntN(4) {
		case 0:
			granted = []any{}
		case 1:
			granted = req
		default:
			granted = g.scopes(4)
		}
		m["scopes"] = granted
		m["account"] = g.pick([]any{"user@example.com", nil, json.Number("3")})
		m["expires_in"] = g.pick([]any{json.Number("3600"), json.Number("0"), g.number(json.Number("7200")), nil})
	}
	g.corrupt(m)
	return m
}

func (g *Gen) agentFact(agent any) any {
	return g.notFoundOr(0.15, func() map[string]any {
		conns := map[string]any{}
		if c, ok := g.w.conn.(string); ok && g.chance(0.5) {
			conns[c] = g.covering()
		}
		for range g.r.IntN(3) {
			id, ok := g.pick(g.cat.anyIDs).(string)
			if !ok {
				continue
			}
			if g.chance(0.1) {
				conns[id] = g.junk()
			} else {
				conns[id] = g.scopes(3)
			}
		}
		return map[string]any{"found": true, "connectors": conns, "consumes_mcp_servers": g.pick([]any{true, false, nil})}
	})
}

func (g *Gen) mcpFact() any {
	return g.notFoundOr(0.2, func() map[string]any {
		keys := []any{}
		for range g.r.IntN(3) {
			keys = append(keys, g.pick(envKeysPool[:4]))
		}
		return map[string]any{"found": true, "keys": keys, "command": g.pick([]any{"npx", ""}), "args": []any{"-y", "server"}}
	})
}

func (g *Gen) secretsFact() any {
	return g.notFoundOr(0.15, func() map[string]any {
		keys := []any{}
		for range g.r.IntN(3) {
			keys = append(keys, g.pick(envKeysPool[:4]))
		}
		return map[string]any{"found": true, "keys": keys}
	})
}

// ledgerValue returns a plausible value of a ledger at a path: [c, a] holds a grant's
// scopes (or an activation's true), [c] a map agent → value, ["*", a] a map connector →
// value, [] a map connector → agent → value.
func (g *Gen) ledgerValue(ledger string, path []any) any {
	leaf := func() any {
		if ledger == "activations" {
			if g.chance(0.85) {
				return true
			}
			return g.pick([]any{false, "true", nil})
		}
		return g.scopes(3)
	}
	agentsMap := func() any {
		m := map[string]any{}
		for range g.r.IntN(4) {
			if a, ok := g.pick(agentsPool).(string); ok {
				m[a] = leaf()
			}
		}
		return m
	}
	connMap := func(val func() any) any {
		m := map[string]any{}
		for range g.r.IntN(4) {
			if c, ok := g.pick(g.cat.anyIDs).(string); ok {
				m[c] = val()
			}
		}
		return m
	}
	switch {
	case g.chance(0.04):
		return g.junk()
	case len(path) == 2 && path[0] == "*":
		return connMap(leaf)
	case len(path) == 2 && ledger == "grants":
		return g.covering()
	case len(path) == 2:
		return leaf()
	case len(path) == 1:
		return agentsMap()
	default:
		return connMap(agentsMap)
	}
}

func (g *Gen) ledger(ledger string, path []any) any {
	return g.notFoundOr(0.3, func() map[string]any {
		return map[string]any{"found": true, "value": g.ledgerValue(ledger, path)}
	})
}

// Fact answers a need the way a shell would, sometimes with a malformed answer.
func (g *Gen) Fact(n core.Need, args any) any {
	str := func(k string) string { return n.Str(k) }
	switch n.Kind {
	case "clock.now":
		return g.nowFact()
	case "ledger.get":
		var path []any
		_ = n.Decode("path", &path)
		return g.ledger(str("ledger"), path)
	case "connection.get":
		return g.connection(strings.Contains(n.Key, "@"))
	case "client.get":
		return g.client(strings.Contains(n.Key, "@"))
	case "token.get":
		return g.token()
	case "lock.acquire":
		return g.lock()
	case "oauth.refresh":
		return g.refresh()
	case "oauth.authorize":
		var req []any
		_ = n.Decode("scopes", &req)
		return g.authorize(req)
	case "agent.get":
		return g.agentFact(str("agent"))
	case "mcp.get":
		return g.mcpFact()
	case "mcp.secrets":
		return g.secretsFact()
	}
	return g.junk()
}

// keyFact answers a fact key nobody asked for yet (a shell that prefetches, or a stale
// fact from an earlier round), inferring its kind from the key.
func (g *Gen) keyFact(key string) any {
	base, _, _ := strings.Cut(key, "|")
	base, _, _ = strings.Cut(base, "@")
	switch base {
	case "now":
		return g.nowFact()
	case "lock":
		return g.lock()
	case "conn", "stored":
		if base == "stored" && g.chance(0.5) {
			return g.mcpFact()
		}
		return g.connection(strings.Contains(key, "@"))
	case "client":
		return g.client(strings.Contains(key, "@"))
	case "token":
		return g.token()
	case "refresh":
		return g.refresh()
	case "authorize":
		return g.authorize(g.scopes(3))
	case "agent":
		return g.agentFact(nil)
	case "mcp":
		return g.mcpFact()
	case "secrets":
		return g.secretsFact()
	case "grant":
		return g.ledger("grants", []any{"c", "a"})
	case "active":
		return g.ledger("activations", []any{"c", "a"})
	case "grants":
		return g.ledger("grants", g.pick([]any{[]any{}, []any{"c"}}).([]any))
	case "actives":
		return g.ledger("activations", g.pick([]any{[]any{}, []any{"c"}}).([]any))
	case "agent_grants":
		return g.ledger("grants", []any{"*", "a"})
	case "agent_actives":
		return g.ledger("activations", []any{"*", "a"})
	}
	return g.junk()
}

// factKeys are the keys the policy uses, per family of operations (for facts present
// before the policy asks for them).
func (g *Gen) factKeys(op string) []string {
	keys := []string{"now", "lock", "grant", "active", "agent", "conn", "client", "token"}
	switch op {
	case "get_access_token":
		keys = append(keys, "client@fresh", "conn@lock", "client@lock", "token@lock", "now@lock", "refresh")
	case "disconnect":
		keys = append(keys, "stored", "grants", "actives")
	case "connect", "import_forwarded":
		keys = append(keys, "grants", "authorize", "now@lock", "client@lock", "conn@lock")
		for _, a := range agentsPool[:3] {
			keys = append(keys, "agent|"+a.(string), "grant|"+a.(string))
		}
	case "status", "connections":
		for _, id := range g.cat.IDs {
			for _, k := range []string{"conn|", "client|", "mcp|", "client@fresh|", "lock|", "conn@lock|", "client@lock|"} {
				keys = append(keys, k+id)
			}
		}
		keys = append(keys, "grants", "actives")
	case "list_grants":
		keys = append(keys, "grants")
	case "list_activations":
		keys = append(keys, "actives")
	case "visible_servers":
		keys = append(keys, "agent_grants", "agent_actives")
	case "credential":
		keys = append(keys, "mcp", "secrets")
	}
	return keys
}

func field(v any, k string) any {
	if m, ok := v.(map[string]any); ok {
		return m[k]
	}
	return nil
}

// Episode is one operation run from an empty fact set to a done decision, the way a
// driver runs it. Next returns the next query (nil when the episode is over); Answer
// feeds the engine's answer to that query.
type Episode struct {
	g       *Gen
	Op      string
	args    any
	facts   map[string]any
	attempt any
	extra   map[string]any
	step    int
	done    bool
	raw     bool // facts sent as a non-object
}

// Episode starts an episode of op (or, rarely, of an unknown or malformed operation).
func (g *Gen) Episode(op string) *Episode {
	g.resetWorld()
	e := &Episode{g: g, Op: op, facts: map[string]any{}, attempt: json.Number("0")}
	e.args = g.Args(op)
	g.w.conn = field(e.args, "connector")
	if g.w.conn == nil {
		g.w.conn = field(e.args, "provider")
	}
	if req, ok := field(e.args, "scopes").([]any); ok {
		g.w.req = req
		g.w.connScopes = g.covering()
	}
	switch {
	case g.chance(0.6):
	case g.chance(0.5):
		e.attempt = g.pick([]any{json.Number("1"), json.Number("15"), json.Number("16"), json.Number("17"), json.Number("100")})
	default:
		e.attempt = g.pick([]any{nil, "3", json.Number("-1"), json.Number("2147483648"), json.Number("9007199254740991"), json.Number("16.5")})
	}
	if g.chance(0.25) {
		keys := g.factKeys(op)
		for range 1 + g.r.IntN(4) {
			k := keys[g.r.IntN(len(keys))]
			e.facts[k] = g.keyFact(k)
		}
	}
	if g.chance(0.01) {
		e.raw = true
	}
	if g.chance(0.02) {
		e.extra = map[string]any{"unexpected": g.junk()}
	}
	return e
}

// Query encodes the episode's current query.
func (e *Episode) Query() []byte {
	q := map[string]any{"op": e.Op, "args": e.args, "facts": e.facts}
	if e.raw {
		q["facts"] = e.g.junk()
	}
	if e.attempt != nil {
		q["attempt"] = e.attempt
	}
	// A driver numbers its questions from 0; some hosts send no round, a broken one anything.
	switch {
	case e.g.chance(0.85):
		q["round"] = json.Number(fmt.Sprint(e.step))
	case e.g.chance(0.5):
	default:
		q["round"] = e.g.pick([]any{"0", json.Number("-1"), json.Number("1"), nil, json.Number("3")})
	}
	for k, v := range e.extra {
		q[k] = v
	}
	if e.g.chance(0.01) {
		delete(q, "args")
	}
	if e.g.chance(0.01) {
		q["op"] = e.g.pick([]any{"nope", nil, json.Number("1"), "GET_ACCESS_TOKEN", ""})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(e.g.chance(0.5))
	if err := enc.Encode(q); err != nil {
		panic(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// Answer continues the episode after the engine decided d; it reports whether another
// query follows.
func (e *Episode) Answer(d *core.Decision) bool {
	e.step++
	if d == nil || d.Status != core.StatusNeed || e.step >= 12 {
		return false
	}
	g := e.g
	busy := map[string]bool{}
	readOn := g.chance(0.8)
	for _, n := range d.Needs {
		after := n.Str("after")
		if after != "" {
			l, _ := e.facts[after].(string)
			switch {
			case l == "held":
			case l != "busy" && readOn: // a malformed lock fact: a broken shell reads on
			case g.chance(0.03):
			default:
				continue // a busy lock skips what was to be read under it
			}
		}
		if g.chance(0.03) {
			continue // a shell that forgot a fact
		}
		e.facts[n.Key] = g.Fact(n, e.args)
		if n.Kind == "lock.acquire" && e.facts[n.Key] == "busy" {
			busy[n.Key] = true
		}
	}
	if g.chance(0.04) && len(e.facts) > 0 {
		keys := sortedKeys(e.facts)
		k := keys[g.r.IntN(len(keys))]
		if g.chance(0.5) {
			delete(e.facts, k)
		} else {
			e.facts[k] = g.keyFact(k)
		}
	}
	if g.chance(0.03) {
		// A failed precondition: the driver restarts with fresh facts and attempt+1.
		e.facts = map[string]any{}
		if n, ok := e.attempt.(json.Number); ok {
			if v, err := n.Int64(); err == nil {
				e.attempt = json.Number(fmt.Sprint(v + 1))
			}
		}
	}
	return true
}
