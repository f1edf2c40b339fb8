package nodiff

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Size is a world for the benchmarks: a catalog of Connectors (data for the engines) and
// Agents agents. The gate reads facts for one pair only, so its queries barely grow with
// the world; the listings carry whole ledgers as facts and grow with it.
type Size struct {
	Connectors, Agents int
}

// Name is "10x10", "50x1000", ...
func (s Size) Name() string { return fmt.Sprintf("%dx%d", s.Connectors, s.Agents) }

// Sizes are the two worlds the benchmarks measure.
var Sizes = []Size{{10, 10}, {50, 1000}}

// Catalog returns the size's catalog (see Scaled).
func (s Size) Catalog() *Catalog { return Scaled(s.Connectors) }

// Scenario is one benchmarked query with the outcome it must produce.
type Scenario struct {
	Name  string
	Query []byte
	Want  string // Outcome of the decision, checked before measuring
}

// DecideParallel measures e's decisions from GOMAXPROCS goroutines (b.RunParallel), each
// asking query(0), query(1), ... in turn, and reports decisions/s: the throughput of the
// whole process.
func DecideParallel(b *testing.B, e core.Engine, query func(i int) []byte) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, 16384)
		var err error
		for i := 0; pb.Next(); i++ {
			if buf, err = e.DecideJSON(ctx, buf[:0], query(i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

func agentID(i int) string { return fmt.Sprintf("installed:agent-%04d", i) }

// BenchScopes are the scopes of the scaled worlds' connectors.
var BenchScopes = []string{"openid", "email", "s1", "s2", "s3", "s4", "s5", "s6"}

// GrantedScopes are the scopes agent i holds on a connector: five, every third agent
// three, every seventh none (no grant). The native engine's episodes use them too.
func GrantedScopes(i int) []string {
	switch {
	case i%7 == 6:
		return nil
	case i%3 == 2:
		return BenchScopes[:3]
	}
	return BenchScopes[:5]
}

const (
	benchHome     = "/home/user/.grantwire"
	benchNow      = int64(1790000000000)
	benchAt       = "1789990000.123" // GAIA's float seconds
	benchAtMs     = int64(1789990000123)
	benchClientID = "1234-abcd.apps.example.com"
	benchRotated  = "5678-efgh.apps.example.com"
)

func connBlob(scopes []string, clientID string) *string {
	return some(encode(map[string]any{
		"account_email": "user@example.com", "client_id_hash": jsonx.CRC32(clientID),
		"connected_at": json.Number(benchAt), "refresh_token": "1//refresh-token-0123456789",
		"scopes": scopes,
	}))
}

func clientBlob(clientID string) *string {
	return some(encode(map[string]any{"client_id": clientID, "client_secret": "client-secret-0123"}))
}

func tokenBlob(expiresAt int64) *string {
	return some(encode(map[string]any{
		"access_token": "ya29.access-token-0123456789", "expires_at": expiresAt,
		"client_id_hash": jsonx.CRC32(benchClientID), "connected_at": benchAtMs,
	}))
}

// The facts of one provider's slots, as a host answers them under the given keys.
func connFact(key string, v *string) map[string]any {
	return keyringAnswer(key, v, []string{"refresh_token"})
}

func tokenFact(key string, v *string) map[string]any {
	return keyringAnswer(key, v, []string{"access_token"})
}

// clientFacts are the three facts of a client read under key: the slot and the two
// environment variables (not set).
func clientFacts(f map[string]any, key string, v *string) {
	f[key] = keyringAnswer(key, v, []string{"client_id", "client_secret"})
	f[key+"@env_id"] = map[string]any{"found": false}
	f[key+"@env_secret"] = map[string]any{"found": false}
}

func ledgerFact(name string, path []any, doc any) map[string]any {
	return ledgerAnswer(benchHome, name, path, &file{doc: doc, version: jsonx.Version(encode(doc))})
}

// query is the question a driver would ask with these facts: round is its number within
// the operation (the argument rules are checked on round 0 only).
func query(op string, args any, facts map[string]any, round int) []byte {
	facts["arg"] = map[string]any{}
	b, err := json.Marshal(map[string]any{"op": op, "args": args, "facts": facts, "attempt": 0, "round": round})
	if err != nil {
		panic(err)
	}
	return b
}

// gateFacts are the facts of get_access_token for the pair (c000, agent 0) after the
// keyring round: the grant, the clock, the connection, a cached token valid for an hour,
// and the client.
func gateFacts() map[string]any {
	f := map[string]any{
		"grant": ledgerFact("connectors/grants.json", []any{"c000", agentID(0)},
			map[string]any{"c000": map[string]any{agentID(0): GrantedScopes(0)}}),
		"now":   json.Number(fmt.Sprint(benchNow)),
		"conn":  connFact("conn", connBlob(BenchScopes, benchClientID)),
		"token": tokenFact("token", tokenBlob(benchNow+3600000)),
	}
	clientFacts(f, "client", clientBlob(benchClientID))
	return f
}

func gateArgs(scopes ...string) map[string]any {
	return map[string]any{"provider": "c000", "agent": agentID(0), "scopes": scopes}
}

// GateAllow is the hot path: granted, connected, client unchanged, cached token valid.
func GateAllow() Scenario {
	return Scenario{"allow", query("get_access_token", gateArgs("openid", "s1"), gateFacts(), 1), "done result"}
}

// GateFirst is the hot path's first question: the prefetched grant and clock (nothing from
// the keyring yet); a granted agent is asked for the connection, the token and the client.
func GateFirst() Scenario {
	f := gateFacts()
	for _, k := range []string{"conn", "token", "client", "client@env_id", "client@env_secret"} {
		delete(f, k)
	}
	return Scenario{"first", query("get_access_token", gateArgs("openid", "s1"), f, 0), "need env.get,keyring.get"}
}

// GateMix rotates over the gate's outcomes after the prefetch round.
func GateMix() []Scenario {
	with := func(name, want string, args map[string]any, edit func(f map[string]any)) Scenario {
		f := gateFacts()
		edit(f)
		round := 1 // after the keyring round
		if name == "usage" || name == "not-granted" {
			round = 0 // decided on the first question, before the keyring is read
		}
		return Scenario{name, query("get_access_token", args, f, round), want}
	}
	return []Scenario{
		GateAllow(),
		with("not-granted", "done AGENT_NOT_GRANTED", gateArgs("openid", "s6"), func(map[string]any) {}),
		with("not-connected", "done NOT_CONNECTED", gateArgs("openid"), func(f map[string]any) { f["conn"] = map[string]any{"found": false} }),
		with("missing-scopes", "done CONNECTION_MISSING_SCOPES", gateArgs("openid", "s2"), func(f map[string]any) {
			f["conn"] = connFact("conn", connBlob(BenchScopes[:2], benchClientID))
		}),
		with("tripwire", "need env.get,keyring.get", gateArgs("openid"), func(f map[string]any) {
			clientFacts(f, "client", clientBlob(benchRotated))
		}),
		with("expired", "need clock.now,env.get,keyring.get,ledger.read,lock.acquire", gateArgs("openid"), func(f map[string]any) {
			f["token"] = tokenFact("token", tokenBlob(benchNow+1000))
		}),
		with("usage", "done USAGE", map[string]any{"provider": "c000", "agent": "", "scopes": []string{}}, func(map[string]any) {}),
	}
}

// lockedFacts adds the facts read under the provider's lock.
func lockedFacts(f map[string]any, client string, token *string) {
	f["lock"] = "held"
	f["conn@lock"] = connFact("conn@lock", connBlob(BenchScopes, benchClientID))
	f["token@lock"] = tokenFact("token@lock", token)
	f["now@lock"] = json.Number(fmt.Sprint(benchNow))
	f["state@lock"] = ledgerFact("connectors/state.json", []any{"c000"}, map[string]any{"c000": map[string]any{
		"configured": true, "account": "user@example.com", "scopes": BenchScopes, "connected_at": benchAtMs,
		"client_id_hash": jsonx.CRC32(benchClientID), "tenant": nil,
	}})
	clientFacts(f, "client@lock", clientBlob(client))
}

// Tripwire is the gate's client-hash tripwire: detected in phase A (ask for a fresh read
// of the client), still mismatched after it (take the lock), and cleared under the lock.
func Tripwire() []Scenario {
	f := gateFacts()
	clientFacts(f, "client", clientBlob(benchRotated))
	detect := query("get_access_token", gateArgs("openid"), f, 1)
	clientFacts(f, "client@fresh", clientBlob(benchRotated))
	lock := query("get_access_token", gateArgs("openid"), f, 2)
	lockedFacts(f, benchRotated, nil)
	clear := query("get_access_token", gateArgs("openid"), f, 3)
	return []Scenario{
		{"detect", detect, "need env.get,keyring.get"},
		{"lock", lock, "need clock.now,env.get,keyring.get,ledger.read,lock.acquire"},
		{"clear", clear, "done REAUTH_REQUIRED +event.emit,keyring.delete,ledger.write"},
	}
}

// Refresh is the refresh plan: an expired token asks for the lock, the facts re-read
// under it ask for the refresh, and a rotated refresh token gives the result and effects.
func Refresh() []Scenario {
	f := gateFacts()
	f["token"] = tokenFact("token", tokenBlob(benchNow+1000))
	lock := query("get_access_token", gateArgs("openid"), f, 1)
	lockedFacts(f, benchClientID, tokenBlob(benchNow+1000))
	plan := query("get_access_token", gateArgs("openid"), f, 2)
	f["refresh"] = map[string]any{
		"status":  json.Number("200"),
		"headers": map[string]any{"content-type": "application/json", "cache-control": "no-store"},
		"json": map[string]any{
			"access_token":  jsonx.Describe("refresh#access_token", "ya29.fresh-access-token"),
			"refresh_token": jsonx.Describe("refresh#refresh_token", "1//rotated-refresh-token"),
			"token_type":    "Bearer", "expires_in": json.Number("3599"), "scope": "openid email s1 s2 s3 s4 s5 s6",
		},
	}
	apply := query("get_access_token", gateArgs("openid"), f, 3)
	return []Scenario{
		{"lock", lock, "need clock.now,env.get,keyring.get,ledger.read,lock.acquire"},
		{"plan", plan, "need http.request"},
		{"apply", apply, "done result +keyring.set"},
	}
}

// grantsLedger is the whole grants ledger of a world: connector → agent → scopes, for
// every connector and every agent that holds a grant.
func (s Size) grantsLedger() map[string]any {
	l := map[string]any{}
	for c := range s.Connectors {
		m := map[string]any{}
		for a := range s.Agents {
			if sc := GrantedScopes(a + c); sc != nil {
				m[agentID(a)] = sc
			}
		}
		l[fmt.Sprintf("c%03d", c)] = m
	}
	return l
}

// activationsLedger activates every fifth agent on every MCP connector.
func (s Size) activationsLedger() map[string]any {
	l := map[string]any{}
	for c := range s.Connectors {
		if c%5 != 4 {
			continue
		}
		m := map[string]any{}
		for a := 0; a < s.Agents; a += 5 {
			m[agentID(a)] = true
		}
		l[fmt.Sprintf("c%03d", c)] = m
	}
	return map[string]any{"version": 1, "activations": l}
}

// oauthIDs are the OAuth connectors of the size's catalog (see Scaled).
func (s Size) oauthIDs() []string {
	var out []string
	for c := range s.Connectors {
		if c%5 != 4 && c%7 != 6 {
			out = append(out, fmt.Sprintf("c%03d", c))
		}
	}
	return out
}

// Listings are the three listing operations at this size, with every fact they ask for:
// status (every connector's state with the whole grants and activations ledgers and the
// MCP servers), list_grants (the whole grants ledger) and connections (every OAuth
// connection, one with a rotated client that is cleared under its lock).
func (s Size) Listings() []Scenario {
	servers := map[string]any{}
	for c := range s.Connectors {
		if c%5 == 4 {
			id := fmt.Sprintf("c%03d", c)
			servers[id] = map[string]any{"command": "npx", "args": []string{"-y", id},
				"env": map[string]any{"TOKEN": map[string]any{"$keyring": "grantwire.connections:" + id + ":TOKEN"}}}
		}
	}
	grants := ledgerFact("connectors/grants.json", []any{}, s.grantsLedger())
	status := map[string]any{
		"grants":  grants,
		"actives": ledgerFact("connectors/activations.json", []any{"activations"}, s.activationsLedger()),
		"mcp":     ledgerFact("mcp_servers.json", []any{}, map[string]any{"mcpServers": servers}),
	}
	conns := map[string]any{}
	for i, c := range s.oauthIDs() {
		status["conn|"+c] = connFact("conn|"+c, connBlob(BenchScopes[:5], benchClientID))
		clientFacts(status, "client|"+c, clientBlob(benchClientID))
		conns["conn|"+c] = status["conn|"+c]
		clientFacts(conns, "client|"+c, clientBlob(benchClientID))
		if i == 0 {
			clientFacts(conns, "client|"+c, clientBlob(benchRotated))
			clientFacts(conns, "client@fresh|"+c, clientBlob(benchRotated))
			conns["lock|"+c] = "held"
			conns["conn@lock|"+c] = connFact("conn@lock|"+c, connBlob(BenchScopes[:5], benchClientID))
			conns["state@lock|"+c] = ledgerFact("connectors/state.json", []any{c}, map[string]any{})
			clientFacts(conns, "client@lock|"+c, clientBlob(benchRotated))
		}
	}
	return []Scenario{
		{"status", query("status", map[string]any{}, status, 1), "done result"},
		{"list_grants", query("list_grants", map[string]any{}, map[string]any{"grants": grants}, 1), "done result"},
		{"connections", query("connections", map[string]any{}, conns, 3), "done result +event.emit,keyring.delete"},
	}
}
