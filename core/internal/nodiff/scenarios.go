package nodiff

import (
	"encoding/json"
	"fmt"
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

func agentID(i int) string { return fmt.Sprintf("installed:agent-%04d", i) }

var benchScopes = []string{"openid", "email", "s1", "s2", "s3", "s4", "s5", "s6"}

// grantedScopes are the scopes agent i holds on a connector: five, every third agent
// three, every seventh none (no grant).
func grantedScopes(i int) []string {
	switch {
	case i%7 == 6:
		return nil
	case i%3 == 2:
		return benchScopes[:3]
	}
	return benchScopes[:5]
}

const (
	benchNow  = int64(1790000000000)
	benchAt   = int64(1789990000000)
	benchHash = "1a2b3c4d"
)

func connFact(scopes []string, hash string) map[string]any {
	return map[string]any{
		"found": true, "valid": true, "account": "user@example.com", "scopes": scopes,
		"connected_at": benchAt, "client_id_hash": hash, "tenant": nil, "account_type": nil,
		"refresh": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"version": "v:0123456789abcdef",
	}
}

func clientFact(hash string) map[string]any {
	return map[string]any{
		"found": true, "client_id_hash": hash, "tenant": nil, "has_secret": true,
		"source": "keyring", "version": "v:fedcba9876543210",
	}
}

func tokenFact(expiresAt int64) map[string]any {
	return map[string]any{"found": true, "expires_at": expiresAt, "client_id_hash": benchHash, "connected_at": benchAt}
}

// query is the question a driver would ask with these facts: round is its number within
// the operation (the argument rules are checked on round 0 only).
func query(op string, args any, facts map[string]any, round int) []byte {
	b, err := json.Marshal(map[string]any{"op": op, "args": args, "facts": facts, "attempt": 0, "round": round})
	if err != nil {
		panic(err)
	}
	return b
}

// gateFacts are the prefetched facts of get_access_token for the pair (provider, agent 0).
func gateFacts() map[string]any {
	return map[string]any{
		"grant":  map[string]any{"found": true, "value": grantedScopes(0)},
		"conn":   connFact(benchScopes, benchHash),
		"client": clientFact(benchHash),
		"token":  tokenFact(benchNow + 3600000),
		"now":    benchNow,
	}
}

func gateArgs(scopes ...string) map[string]any {
	return map[string]any{"provider": "c000", "agent": agentID(0), "scopes": scopes}
}

// GateAllow is the hot path: granted, connected, client unchanged, cached token valid.
func GateAllow() Scenario {
	return Scenario{"allow", query("get_access_token", gateArgs("openid", "s1"), gateFacts(), 1), "done result"}
}

// GateFirst is the hot path's first question: the grant, the token cache and the clock
// (no keyring yet); a granted agent is asked for the connection and the client.
func GateFirst() Scenario {
	f := gateFacts()
	delete(f, "conn")
	delete(f, "client")
	return Scenario{"first", query("get_access_token", gateArgs("openid", "s1"), f, 0), "need client.get,connection.get"}
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
			f["conn"] = connFact(benchScopes[:2], benchHash)
		}),
		with("tripwire", "need client.get", gateArgs("openid"), func(f map[string]any) { f["client"] = clientFact("9f8e7d6c") }),
		with("expired", "need client.get,clock.now,connection.get,lock.acquire,token.get", gateArgs("openid"), func(f map[string]any) {
			f["token"] = tokenFact(benchNow + 1000)
		}),
		with("usage", "done USAGE", map[string]any{"provider": "c000", "agent": "", "scopes": []string{}}, func(map[string]any) {}),
	}
}

// Tripwire is the gate's client-hash tripwire: detected in phase A (ask for a fresh read
// of the client), still mismatched after it (take the lock), and cleared under the lock.
func Tripwire() []Scenario {
	f := gateFacts()
	f["client"] = clientFact("9f8e7d6c")
	detect := query("get_access_token", gateArgs("openid"), f, 1)
	f["client@fresh"] = clientFact("9f8e7d6c")
	lock := query("get_access_token", gateArgs("openid"), f, 2)
	f["lock"] = "held"
	f["conn@lock"] = connFact(benchScopes, benchHash)
	f["client@lock"] = clientFact("9f8e7d6c")
	f["token@lock"] = map[string]any{"found": false}
	f["now@lock"] = benchNow
	clear := query("get_access_token", gateArgs("openid"), f, 3)
	return []Scenario{
		{"detect", detect, "need client.get"},
		{"lock", lock, "need client.get,clock.now,connection.get,lock.acquire,token.get"},
		{"clear", clear, "done REAUTH_REQUIRED +connection.delete,event.emit,token.delete"},
	}
}

// Refresh is the refresh plan: an expired token asks for the lock, the facts re-read
// under it ask for the refresh, and a rotated refresh token gives the result and effects.
func Refresh() []Scenario {
	f := gateFacts()
	f["token"] = tokenFact(benchNow + 1000)
	lock := query("get_access_token", gateArgs("openid"), f, 1)
	f["lock"] = "held"
	f["conn@lock"] = connFact(benchScopes, benchHash)
	f["client@lock"] = clientFact(benchHash)
	f["token@lock"] = tokenFact(benchNow + 1000)
	f["now@lock"] = benchNow
	plan := query("get_access_token", gateArgs("openid"), f, 2)
	f["refresh"] = map[string]any{"status": 200, "error": nil, "expires_in": 3599, "rotated": true, "refresh": "sha256:bb"}
	apply := query("get_access_token", gateArgs("openid"), f, 3)
	return []Scenario{
		{"lock", lock, "need client.get,clock.now,connection.get,lock.acquire,token.get"},
		{"plan", plan, "need oauth.refresh"},
		{"apply", apply, "done result +connection.set_refresh,token.put"},
	}
}

// grantsLedger is the whole grants ledger of a world: connector → agent → scopes, for
// every OAuth or MCP connector and every agent that holds a grant.
func (s Size) grantsLedger() map[string]any {
	l := map[string]any{}
	for c := range s.Connectors {
		m := map[string]any{}
		for a := range s.Agents {
			if sc := grantedScopes(a + c); sc != nil {
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
	return l
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
// status (every connector's state with the whole grants and activations ledgers),
// list_grants (the whole grants ledger) and connections (every OAuth connection, one
// with a rotated client that is cleared under its lock).
func (s Size) Listings() []Scenario {
	status := map[string]any{
		"grants":  map[string]any{"found": true, "value": s.grantsLedger()},
		"actives": map[string]any{"found": true, "value": s.activationsLedger()},
	}
	conns := map[string]any{}
	for c := range s.Connectors {
		id := fmt.Sprintf("c%03d", c)
		if isMCP(id) {
			status["mcp|"+id] = map[string]any{"found": true, "keys": []string{"TOKEN"}, "command": "npx", "args": []string{"-y", id}}
			continue
		}
		status["conn|"+id] = connFact(benchScopes[:5], benchHash)
		status["client|"+id] = clientFact(benchHash)
	}
	for i, c := range s.oauthIDs() {
		conns["conn|"+c] = connFact(benchScopes[:5], benchHash)
		conns["client|"+c] = clientFact(benchHash)
		if i == 0 {
			conns["client|"+c] = clientFact("9f8e7d6c")
			conns["client@fresh|"+c] = clientFact("9f8e7d6c")
			conns["lock|"+c] = "held"
			conns["conn@lock|"+c] = connFact(benchScopes[:5], benchHash)
			conns["client@lock|"+c] = clientFact("9f8e7d6c")
		}
	}
	return []Scenario{
		{"status", query("status", map[string]any{}, status, 1), "done result"},
		{"list_grants", query("list_grants", map[string]any{}, map[string]any{"grants": status["grants"]}, 1), "done result"},
		{"connections", query("connections", map[string]any{}, conns, 3), "done result +connection.delete,event.emit,token.delete"},
	}
}

func isMCP(id string) bool {
	var n int
	if _, err := fmt.Sscanf(id, "c%03d", &n); err != nil {
		return false
	}
	return n%5 == 4
}
