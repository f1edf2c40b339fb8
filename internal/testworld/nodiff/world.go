package nodiff

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// world is one episode's simulated host (hostabi/README.md): the keyring, the ledgers
// under the home, the environment, agent sources, locks, the providers' token and
// userinfo endpoints and the user at the loopback. Its contents are drawn the first time a
// need asks for them, and drawn consistently, so that episodes reach the deep branches: a
// connection records the hash of the client it was issued under and a cached token is
// bound to its connection (mostly), the ledgers hold the pair the operation is about and
// grants cover the scopes it asks for (often), an agent registry declares what the agents
// of the arguments need. Between the reads before and under a lock another process
// sometimes changes a slot (a rotated client, a reconnection, a cleared connection).
//
// Its answers are what a host answers: facts computed from stored bytes exactly as the Go
// host does (strict parsing, descriptions of secrets, {"$number"} for numbers that are not
// safe integers, paths and shapes of ledger reads). The Episode then spoils some of them
// (see Episode.spoil) to play a broken host.
type world struct {
	g       *Gen
	home    string
	service string
	now     int64
	slots   map[string]*string // keyring user → stored value; nil: absent
	files   map[string]*file   // ledger → file; nil: absent
	env     map[string]*string
	held    map[string]bool // locks this operation holds
	provs   map[string]*prov
	conns   []string // the connectors the arguments name
	agents  []string // the agents the arguments name
	req     []any    // the scopes the arguments ask for
	// happy worlds rarely fail: the client is configured, the registry knows and declares
	// the agents, the user completes the authorization, the token endpoint answers well.
	// They take episodes through the long paths (a connect that stores its connection).
	happy bool
	// rems are the remote MCP servers the world has drawn (see remote.go); lastIssuer is the
	// issuer of the last authorization-server metadata it served (the callback names it).
	rems       map[string]*rem
	lastIssuer string
}

// risk is a chance of a failure, much smaller in a happy world.
func (w *world) risk(p float64) bool {
	if w.happy {
		p /= 10
	}
	return w.g.chance(p)
}

// file is a ledger as stored: corrupt (the host's reason) or a document.
type file struct {
	bad     bool // unreadable: corrupt says why
	corrupt string
	doc     any
	version string
}

// prov is what the world remembers of a provider, to keep its slots consistent.
type prov struct {
	clientID    string
	refresh     string
	connectedAt any   // as stored: seconds
	connMs      int64 // as the policy reads it (when it can)
	hash        any   // the client id hash the connection records
	scopes      any
}

var (
	homes = []string{
		"/home/user/.grantwire", "/home/user/.grantwire", "/home/user/.grantwire", "/home/user/.grantwire",
		"/home/o'brien/.grantwire", "/tmp/a b/.grantwire", "/home/zoë/.grantwire", "/home/x/\u202e.grantwire",
		`C:\Users\me\.grantwire`, "/home/\"q\"/.grantwire", "/home/tab\tx/.grantwire",
	}
	services  = []string{"grantwire.connections", "grantwire.connections", "grantwire.connections", "gaia.connections", "svc with space", "o'svc", "zoë:svc"}
	clientIDs = []string{"1234-abcd.apps.example.com", "client-b", "ü-client", "client\"q"}
	accounts  = []any{"user@example.com", "user@example.com", "zoë@example.com", "", "o'brien@example.com", "\u202emoc.elpmaxe@resu", json.Number("3"), nil}
	tenants   = []any{"organizations", "common", "consumers", "Tenant-1", "a b", "ü", "x/../y", "[::1]", "127.1", "%2e", "", "a@b", "evil.example#", "0x7f", "169.254.169.254", "[fe80::1]", "[::ffff:127.0.0.1]", "x:99999", "127.0.0.01", "0177.0.0.1", "[::ffff:7f00:1]",
		"[0:0:0:0:0:ffff:127.0.0.1]", "[FE80::1]", "[::127.0.0.1]", "x:080", "127.0.0.1:8080", "[::1]:443", "login.example.com", json.Number("7"), nil}
	seconds = []any{
		json.Number("1789990000.123"), json.Number("1789990000.123"), json.Number("1789990000"), json.Number("1789990000.5"),
		json.Number("1789990000.123456"), json.Number("1789990000.1234567890123456"), json.Number("1789990000000"),
		json.Number("1.79e9"), json.Number("-1.5"), json.Number("0.5"), json.Number("17899900000000000000.5"),
		json.Number("999999999999999.999"), json.Number("123456789012345.5"), json.Number("100000000000000000000"),
		"1789990000", nil, true, map[string]any{"$number": "1.5"},
	}
	expiries   = []int64{-1000, 0, 59999, 60000, 60001, 60002, 3599000, 3600000}
	corruption = []string{
		"not valid JSON: unexpected end of JSON input", "duplicate member \"google\"", "not valid UTF-8",
		"trailing data after the JSON document", "it's \"broken\"\n\tbadly", "",
	}
	sources = []string{"tools/tool.py", "~/agents/helper.js", "/opt/agents/bot", "a b/c'd.py", "tools/tool.v2.py"}
)

func newWorld(g *Gen) *world {
	w := &world{
		g: g, home: homes[0], service: services[0], now: 1790000000000,
		slots: map[string]*string{}, files: map[string]*file{}, env: map[string]*string{},
		held: map[string]bool{}, provs: map[string]*prov{},
	}
	if g.chance(0.15) {
		w.home = pick(g, homes)
	}
	if g.chance(0.1) {
		w.service = pick(g, services)
	}
	if g.chance(0.1) {
		w.now = pick(g, []int64{0, 1, 1<<53 - 1, 1790000000000 + 3600000, 1789990000123})
	}
	return w
}

// SourceDigest is the SHA-256 the world's agent sources have (a stable function of the
// file's base name), so that arguments can name the custom agent a source registers.
func SourceDigest(p string) string {
	return jsonx.Version("src:"+path.Base(p)) + jsonx.Version("digest:"+path.Base(p)) + jsonx.Version("x") + jsonx.Version("y")
}

// customID is the custom agent id of a source with the given name.
func customID(src, name string) string { return "custom:" + SourceDigest(src)[:16] + ":" + name }

func (w *world) prov(p string) *prov {
	if v, ok := w.provs[p]; ok {
		return v
	}
	g := w.g
	v := &prov{clientID: pick(g, clientIDs[:2]), refresh: "1//refresh-" + g.token(8)}
	if g.chance(0.1) {
		v.clientID = pick(g, clientIDs)
	}
	if g.chance(0.04) {
		v.refresh = ""
	}
	v.connectedAt = seconds[0]
	if g.chance(0.3) {
		v.connectedAt = pick(g, seconds)
	}
	if w.happy {
		v.connectedAt = seconds[0]
	}
	v.connMs, _ = msOf(jsonx.FactValue(v.connectedAt))
	switch x := g.r.Float64(); {
	case x < 0.78 || w.happy:
		v.hash = jsonx.CRC32(v.clientID)
	case x < 0.92:
		v.hash = jsonx.CRC32(pick(g, clientIDs))
	default:
		v.hash = pick(g, []any{nil, "", json.Number("12345678"), "short"})
	}
	v.scopes = g.covering(w.req, p)
	if g.chance(0.04) {
		v.scopes = g.junk()
	}
	w.provs[p] = v
	return v
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// slot returns a keyring slot's value, drawing it on first use.
func (w *world) slot(user string) *string { return drawn(w.slots, user, w.draw) }

// drawn returns m[k], drawing it on first use.
func drawn[V any](m map[string]V, k string, draw func(string) V) V {
	if v, ok := m[k]; ok {
		return v
	}
	v := draw(k)
	m[k] = v
	return v
}

func some(s string) *string { return &s }

func (w *world) draw(user string) *string {
	g := w.g
	if v, ok := w.drawRemote(user); ok {
		return v
	}
	switch {
	case strings.HasPrefix(user, "provider:"):
		p := w.prov(strings.TrimPrefix(user, "provider:"))
		switch x := g.r.Float64(); {
		case x < 0.16 && !w.happy:
			return nil
		case x < 0.22 && !w.happy:
			return some(pick(g, []string{
				"not json", "[]", `"string"`, `{"client_id":""}`, `{"client_id":7}`, `{"client_secret":"s"}`,
				`{"client_id":"a","client_id":"b"}`, `{"client_id":"x"} trailing`, "{\"client_id\":\"\xff\"}", "",
			}))
		}
		m := map[string]any{"client_id": p.clientID}
		switch x := g.r.Float64(); {
		case x < 0.6:
			m["client_secret"] = "secret-" + g.token(6)
		case x < 0.7:
			m["client_secret"] = ""
		case x < 0.73:
			m["client_secret"] = json.Number("5")
		}
		if g.chance(0.3) {
			m["tenant"] = pick(g, tenants)
		}
		return some(encode(m))
	case strings.HasSuffix(user, ":default"):
		p := w.prov(strings.TrimSuffix(user, ":default"))
		switch x := g.r.Float64(); {
		case x < 0.17 && !w.happy:
			return nil
		case x < 0.23 && !w.happy:
			return some(pick(g, []string{
				"not json", "[]", "null", "{}", `{"refresh_token":"r"}`, `{"refresh_token":"r","scopes":[],"connected_at":1}x`,
				`{"refresh_token":"r","scopes":["a"],"connected_at":1789990000,"refresh_token":"s"}`,
			}))
		}
		m := map[string]any{
			"account_email": pick(g, accounts), "client_id_hash": p.hash, "connected_at": p.connectedAt,
			"refresh_token": p.refresh, "scopes": p.scopes,
		}
		if g.chance(0.3) {
			m["tenant"] = pick(g, tenants)
		}
		if g.chance(0.2) {
			m["account_type"] = pick(g, []any{"personal", "work", nil, json.Number("1")})
		}
		g.tamper(m, 0.05)
		return some(encode(m))
	case strings.HasSuffix(user, ":access_token"):
		p := w.prov(strings.TrimSuffix(user, ":access_token"))
		switch x := g.r.Float64(); {
		case x < 0.28:
			return nil
		case x < 0.31:
			return some(pick(g, []string{"not json", "[]", `{"access_token":"a"}`, `{"access_token":"a","expires_at":1.5e12}`}))
		}
		var exp any = json.Number(fmt.Sprint(safeAdd(w.now, pick(g, expiries))))
		if g.chance(0.03) {
			exp = pick(g, []any{json.Number("1790000003600.5"), "1790003600000", nil})
		}
		var hash, at any = p.hash, json.Number(fmt.Sprint(p.connMs))
		if g.chance(0.12) {
			hash = jsonx.CRC32(pick(g, clientIDs))
		}
		if g.chance(0.12) {
			at = pick(g, []any{json.Number(fmt.Sprint(safeAdd(p.connMs, 1))), p.connectedAt, nil})
		}
		m := map[string]any{"access_token": "ya29." + g.token(10), "expires_at": exp, "client_id_hash": hash, "connected_at": at}
		if g.chance(0.03) {
			m["access_token"] = pick(g, []any{"", json.Number("1"), nil})
		}
		return some(encode(m))
	}
	// "<connector>:<KEY>": one value of an MCP server.
	if g.chance(0.15) {
		return nil
	}
	return some(pick(g, []string{"ghp_" + g.token(8), "value", "", "zoë's \"value\"\n"}))
}

// perturb plays another process changing a slot between two reads.
func (w *world) perturb(user string) {
	g := w.g
	switch {
	case strings.HasPrefix(user, "provider:"):
		p := w.prov(strings.TrimPrefix(user, "provider:"))
		if g.chance(0.6) {
			p.clientID = pick(g, clientIDs)
		}
	case strings.HasSuffix(user, ":default"):
		p := w.prov(strings.TrimSuffix(user, ":default"))
		if g.chance(0.6) { // a reconnection under the current client
			p.refresh = "1//refresh-" + g.token(8)
			p.connectedAt = json.Number("1789995000.5")
			p.connMs = 1789995000500
			p.hash = jsonx.CRC32(p.clientID)
		}
	}
	delete(w.slots, user)
}

// ledger returns a ledger file, drawing it on first use.
func (w *world) ledger(name string) *file { return drawn(w.files, name, w.drawLedger) }

func (w *world) drawLedger(name string) *file {
	g := w.g
	switch x := g.r.Float64(); {
	case x < 0.12:
		return nil
	case x < 0.15 && !w.happy:
		return &file{bad: true, corrupt: pick(g, corruption), version: jsonx.Version(g.token(4))}
	}
	var doc any
	switch name {
	case "connectors/grants.json":
		doc = w.grantsDoc()
	case "connectors/activations.json":
		doc = w.activationsDoc()
	case "connectors/state.json":
		doc = w.stateDoc()
	case "mcp_servers.json":
		doc = w.mcpDoc()
	case "agents.json":
		doc = w.agentsDoc()
	case "mcp_remote.json":
		doc = w.remoteDoc()
	default:
		return nil
	}
	return &file{doc: doc, version: jsonx.Version(encode(doc))}
}

// connectorPool is the connectors a ledger mentions: those of the arguments, catalog ids
// and ids no catalog has.
func (w *world) someConnector() string {
	g := w.g
	switch {
	case len(w.conns) > 0 && g.chance(0.5):
		return pick(g, w.conns)
	case len(g.cat.IDs) > 0 && g.chance(0.85):
		return pick(g, g.cat.IDs)
	}
	return pick(g, []string{"gone", "zoë", "tab\tc", "q\"c"})
}

func (w *world) someAgent() string {
	g := w.g
	if len(w.agents) > 0 && g.chance(0.5) {
		return pick(g, w.agents)
	}
	return g.agentID(0.15)
}

func (w *world) grantsDoc() any {
	g := w.g
	doc := map[string]any{}
	w.somePairs(0.65, func(c, a string) { setPair(doc, c, a, g.covering(w.req, c)) })
	for range g.r.IntN(4) {
		setPair(doc, w.someConnector(), w.someAgent(), g.scopeList(3))
	}
	return w.misshape(doc, func(m map[string]any) {
		c := w.someConnector()
		switch g.r.IntN(4) {
		case 0:
			m[c] = []any{"x"}
		case 1:
			m[c] = map[string]any{w.someAgent(): "x"}
		case 2:
			m[c] = map[string]any{w.someAgent(): []any{"a", json.Number("1")}}
		default:
			m[c] = "x"
		}
	})
}

// somePairs calls f on each pair of the world's connectors and agents with probability p.
func (w *world) somePairs(p float64, f func(c, a string)) {
	for _, c := range w.conns {
		for _, a := range w.agents {
			if w.g.chance(p) {
				f(c, a)
			}
		}
	}
}

// setPair sets doc[c][a] to v (doc[c] becomes an object when it is not one).
func setPair(doc map[string]any, c, a string, v any) {
	m, ok := doc[c].(map[string]any)
	if !ok {
		m = map[string]any{}
		doc[c] = m
	}
	m[a] = v
}

// misshape sometimes gives a document a wrong shape: not an object, or one entry spoilt.
func (w *world) misshape(doc map[string]any, spoil func(map[string]any)) any {
	g := w.g
	switch x := g.r.Float64(); {
	case w.happy:
	case x < 0.02:
		return pick(g, []any{[]any{}, "x", json.Number("1"), nil, map[string]any{"$number": "1.5"}})
	case x < 0.07:
		spoil(doc)
	}
	return doc
}

func (w *world) activationsDoc() any {
	g := w.g
	acts := map[string]any{}
	w.somePairs(0.5, func(c, a string) { setPair(acts, c, a, true) })
	for range g.r.IntN(4) {
		setPair(acts, w.someConnector(), w.someAgent(), g.chance(0.9))
	}
	doc := map[string]any{"version": json.Number("1"), "activations": acts}
	if g.chance(0.05) {
		delete(doc, "version")
	}
	if g.chance(0.03) {
		delete(doc, "activations")
	}
	// tool rules beside the activations, for some pairs
	if g.chance(0.6) {
		rules := map[string]any{}
		w.somePairs(0.4, func(c, a string) { setPair(rules, c, a, g.toolRule()) })
		doc["tools"] = rules
	}
	return w.misshape(doc, func(m map[string]any) {
		switch g.r.IntN(5) {
		case 0:
			m["activations"] = []any{}
		case 1:
			acts[w.someConnector()] = []any{"x"}
		case 2:
			m["tools"] = map[string]any{w.someConnector(): map[string]any{w.someAgent(): true}}
		case 3:
			m["tools"] = map[string]any{w.someConnector(): []any{"x"}}
		default:
			acts[w.someConnector()] = map[string]any{w.someAgent(): "true"}
		}
	})
}

func (w *world) stateDoc() any {
	g := w.g
	doc := map[string]any{}
	for _, c := range append(append([]string{}, w.conns...), w.someConnector()) {
		if g.chance(0.6) {
			e := map[string]any{"configured": true, "account": "user@example.com", "scopes": []any{"openid"},
				"connected_at": json.Number("1789990000123"), "client_id_hash": jsonx.CRC32(clientIDs[0]), "tenant": nil}
			if g.chance(0.4) { // connected long ago: a keep-alive due, or the refresh token expiring
				e["connected_at"] = json.Number(fmt.Sprint(safeAdd(w.now, -pick(g, connectedAgo))))
			}
			if g.chance(0.5) {
				e["health"] = w.healthRecord()
			}
			if g.chance(0.1) { // revoked at the provider during an earlier health pass
				e = map[string]any{"configured": false, "health": map[string]any{"state": "revoked",
					"revoked_at": json.Number("1789990000123"), "scopes": pick(g, []any{[]any{"openid"}, []any{}, nil})}}
			}
			doc[c] = e
		}
	}
	return w.misshape(doc, func(m map[string]any) {
		c := w.someConnector()
		if len(w.conns) > 0 && g.chance(0.7) {
			c = w.conns[0]
		}
		m[c] = pick(g, []any{[]any{}, "x", json.Number("2")})
	})
}

// connectedAgo are ages of a connection (ms): a day, 76 days (a 90-day inactivity limit's
// keep-alive due), 84 days (its refresh token expiring), 91 days (past it).
var connectedAgo = []int64{86_400_000, 76 * 86_400_000, 76*86_400_000 - 1, 84 * 86_400_000, 91 * 86_400_000}

// healthRecord is a state.json entry's health member as health passes write it (and worse).
func (w *world) healthRecord() any {
	g := w.g
	if g.chance(0.05) {
		return g.junk()
	}
	h := map[string]any{"state": pick(g, []any{"healthy", "failing", "expiring", "revoked", json.Number("1")})}
	g.optional(h, "refreshed_at", 0.5, 0.05, func() any { return json.Number(fmt.Sprint(safeAdd(w.now, -int64(g.r.IntN(80))*86_400_000))) })
	g.optional(h, "failures", 0.5, 0.05, func() any {
		return pick(g, []any{json.Number("1"), json.Number("2"), json.Number("3"), json.Number("7"), json.Number("8"), json.Number("40"), "2"})
	})
	g.optional(h, "failed_at", 0.4, 0.05, func() any { return json.Number(fmt.Sprint(safeAdd(w.now, -int64(g.r.IntN(4))*60_000))) })
	return h
}

func (w *world) mcpDoc() any {
	g := w.g
	servers := map[string]any{}
	for _, c := range append(append([]string{}, w.conns...), w.someConnector()) {
		if !g.chance(0.7) {
			continue
		}
		all, required := g.cat.envKeys(c)
		env := map[string]any{}
		keys := required
		if g.chance(0.25) {
			keys = all
		}
		if g.chance(0.15) && len(keys) > 0 {
			keys = keys[1:]
		}
		if g.chance(0.05) {
			keys = append(keys, "EXTRA")
		}
		for _, k := range keys {
			env[k] = map[string]any{"$keyring": w.service + ":" + c + ":" + k}
		}
		servers[c] = map[string]any{"command": pick(g, []any{"npx", "uvx", "", json.Number("1")}), "args": []any{"-y", c}, "env": env}
		if g.chance(0.05) {
			servers[c].(map[string]any)["env"] = pick(g, []any{[]any{"A"}, "A", nil})
		}
		if g.chance(0.05) {
			delete(servers[c].(map[string]any), "args")
		}
	}
	key := "mcpServers"
	if g.chance(0.15) {
		key = "servers"
	}
	doc := map[string]any{key: servers}
	if g.chance(0.05) {
		doc["mcpServers"], doc["servers"] = pick(g, []any{false, nil, map[string]any{}}), servers
	}
	return w.misshape(doc, func(m map[string]any) {
		switch g.r.IntN(3) {
		case 0:
			m[key] = []any{}
		default:
			servers[w.someConnector()] = pick(g, []any{"x", []any{}})
		}
	})
}

// agentsDoc is an agent registry naming the arguments' agents (with what they declare
// for the arguments' connectors), a few others, and sometimes an entry with a problem.
func (w *world) agentsDoc() any {
	g := w.g
	if w.risk(0.04) {
		return pick(g, []any{
			[]any{}, "x", map[string]any{"version": json.Number("2"), "agents": []any{}},
			map[string]any{"version": "1", "agents": []any{}}, map[string]any{"version": json.Number("1"), "agents": "x"},
			map[string]any{"agents": []any{}}, map[string]any{"version": json.Number("1")},
		})
	}
	var entries []any
	for _, a := range w.agents {
		if !g.chance(0.6) && !w.happy {
			continue
		}
		e := map[string]any{"id": a}
		for _, src := range sources {
			name := strings.TrimSuffix(path.Base(src), path.Ext(src))
			if a == customID(src, name) {
				e["source"] = src
				if g.chance(0.5) {
					e["id"] = "custom:" + name
				}
			}
		}
		var reqs []any
		for _, c := range w.conns {
			switch {
			case w.happy && len(w.req) > 0:
				reqs = append(reqs, map[string]any{"connector": c, "scopes": w.req})
			case w.happy:
				reqs = append(reqs, map[string]any{"connector": c, "scopes": []any{pick(g, commonScopes)}})
			case g.chance(0.7):
				reqs = append(reqs, map[string]any{"connector": c, "scopes": g.declared(w.req, c)})
			}
		}
		if reqs != nil || g.chance(0.3) {
			e["required_connectors"] = reqs
		}
		if g.chance(0.3) {
			e["consumes_mcp_servers"] = g.chance(0.8)
		}
		if g.chance(0.2) {
			e["name"], e["description"] = "Agent "+a, "does things"
		}
		entries = append(entries, e)
	}
	for range g.r.IntN(3) {
		src := pick(g, sources)
		name := strings.TrimSuffix(path.Base(src), path.Ext(src))
		switch g.r.IntN(4) {
		case 0:
			entries = append(entries, map[string]any{"id": "custom:" + name, "source": src})
		case 1:
			id := customID(src, name)
			if g.chance(0.4) {
				id = "custom:0123456789abcdef:" + name // a source that changed since
			}
			entries = append(entries, map[string]any{"id": id, "source": src})
		default:
			entries = append(entries, map[string]any{"id": g.agentID(0), "consumes_mcp_servers": g.chance(0.5)})
		}
	}
	if w.risk(0.1) {
		entries = append(entries, pick(g, badAgentEntries))
	}
	if w.risk(0.03) && len(entries) > 0 {
		entries = append(entries, entries[0])
	}
	g.r.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	if entries == nil {
		entries = []any{}
	}
	return map[string]any{"version": json.Number("1"), "agents": entries}
}

var badAgentEntries = []any{
	"x",
	map[string]any{"id": "installed:a", "colour": json.Number("1"), "size": "l"},
	map[string]any{"name": "no id"},
	map[string]any{"id": json.Number("5")},
	map[string]any{"id": "installed:a", "source": "a.py"},
	map[string]any{"id": "it's"},
	map[string]any{"id": "custom:bad name!", "source": "x.py"},
	map[string]any{"id": "installed:b", "required_connectors": "x"},
	map[string]any{"id": "installed:b", "required_connectors": []any{map[string]any{"scopes": []any{"a"}}}},
	map[string]any{"id": "installed:b", "required_connectors": []any{
		map[string]any{"connector": "google", "scopes": []any{"a"}}, map[string]any{"connector": "google", "scopes": []any{"b"}}}},
	map[string]any{"id": "installed:b", "required_connectors": []any{map[string]any{"connector": "google", "scopes": []any{}}}},
	map[string]any{"id": "installed:b", "required_connectors": []any{map[string]any{"connector": "google", "scopes": []any{"a b"}}}},
	map[string]any{"id": "installed:b", "required_connectors": []any{map[string]any{"connector": "google", "scopes": []any{"a", "a"}}}},
	map[string]any{"id": "installed:b", "required_connectors": []any{map[string]any{"connector": "google", "scopes": "a"}}},
	map[string]any{"id": "installed:c", "consumes_mcp_servers": "yes"},
	map[string]any{"id": "builtin:chat", "consumes_mcp_servers": false},
}

// fetch answers a need as the world's host would (nil for a need the host refuses).
func (w *world) fetch(n core.Need) any {
	g := w.g
	switch n.Kind {
	case "clock.now":
		w.now = safeAdd(w.now, int64(g.r.IntN(3)*g.r.IntN(40000)))
		return json.Number(fmt.Sprint(w.now))
	case "entropy":
		return jsonx.Describe(n.Key+"#value", base64.RawURLEncoding.EncodeToString([]byte(g.token(32))))
	case "env.get":
		return w.envGet(n)
	case "keyring.info":
		return map[string]any{"service": w.service}
	case "keyring.get":
		return w.keyringGet(n)
	case "ledger.read":
		return w.ledgerRead(n)
	case "file.digest":
		if w.risk(0.1) {
			return map[string]any{"found": false, "reason": pick(g, []string{"no such file or directory", "not a regular file", "larger than 16777216 bytes"})}
		}
		sum := SourceDigest(n.Str("path"))
		if w.risk(0.08) {
			sum = SourceDigest(g.token(3))
		}
		return map[string]any{"found": true, "sha256": sum}
	case "lock.acquire":
		name := n.Str("name")
		if w.held[name] {
			return "held"
		}
		switch x := g.r.Float64(); {
		case x < 0.12 && !w.happy:
			return "busy"
		case x < 0.14 && !w.happy:
			return pick(g, []any{"", "HELD", nil, map[string]any{}, json.Number("1")})
		}
		w.held[name] = true
		return "held"
	case "http.request":
		return w.http(n)
	case "loopback.open":
		switch x := g.r.Float64(); {
		case w.happy:
		case x < 0.1:
			return map[string]any{"unavailable": pick(g, []string{"no display (DISPLAY is not set)", "this shell has no loopback", "it's \"headless\""})}
		case x < 0.13:
			return pick(g, []any{map[string]any{"redirect_uri": json.Number("7")}, map[string]any{}, "x"})
		}
		return map[string]any{"redirect_uri": fmt.Sprintf("http://127.0.0.1:%d/callback", 40000+g.r.IntN(20000))}
	case "loopback.wait":
		return w.callback(n)
	case "dpop.key":
		if w.risk(0.05) {
			return pick(g, []any{map[string]any{"key": "pem", "jwk": map[string]any{}, "jkt": ""}, map[string]any{}, "x"})
		}
		jwk := map[string]any{"kty": "EC", "crv": "P-256", "x": g.token(8), "y": g.token(8)}
		return map[string]any{"key": jsonx.Describe(n.Key+"#key", "-----BEGIN PRIVATE KEY-----"+g.token(16)), "jwk": jwk, "jkt": g.token(8)}
	}
	return g.junk()
}

func (w *world) envGet(n core.Need) any {
	g := w.g
	name := n.Str("name")
	v, ok := w.env[name]
	if !ok {
		switch {
		case strings.HasSuffix(n.Key, "@env_id") && g.chance(0.35):
			v = some(w.prov(w.providerOf(n.Key)).clientID)
		case strings.HasSuffix(n.Key, "@env_secret") && g.chance(0.4):
			v = some("env-secret-" + g.token(4))
		case g.chance(0.3):
			v = some(g.token(6))
		}
		if v != nil && g.chance(0.03) {
			v = some("") // a foreign host that reports an empty variable as found
		}
		w.env[name] = v
	}
	if v == nil {
		return map[string]any{"found": false}
	}
	if n.Bool("secret") {
		return map[string]any{"found": true, "value": jsonx.Describe(n.Key+"#value", *v)}
	}
	return map[string]any{"found": true, "value": *v}
}

// providerOf is the provider a fact key is about: "client|p@env_id" names it, the
// operation's own keys ("client@fresh@env_id") are about its connector.
func (w *world) providerOf(key string) string {
	if _, rest, ok := strings.Cut(key, "|"); ok {
		p, _, _ := strings.Cut(rest, "@")
		return p
	}
	if len(w.conns) > 0 {
		return w.conns[0]
	}
	return "google"
}

func (w *world) keyringGet(n core.Need) any {
	g := w.g
	user := n.Str("user")
	if strings.Contains(n.Key, "@") && g.chance(0.2) {
		w.perturb(user)
	}
	var fields []string
	if raw, ok := n.Params["fields"]; ok {
		_ = json.Unmarshal(raw, &fields)
		if fields == nil {
			fields = []string{}
		}
	}
	return keyringAnswer(n.Key, w.slot(user), fields)
}

// keyringAnswer is a host's answer to a keyring.get under key: {found:false} for an absent
// slot (nil), else its version and description and, when fields is not nil, the value
// parsed as a JSON object with those members described.
func keyringAnswer(key string, v *string, fields []string) map[string]any {
	if v == nil {
		return map[string]any{"found": false}
	}
	fact := map[string]any{"found": true, "version": jsonx.Version(*v), "value": jsonx.Describe(key+"#value", *v)}
	if fields != nil {
		fact["json"] = redact(key, *v, fields)
	}
	return fact
}

// redact is a stored value parsed as a JSON object with each listed string member
// replaced by its description, or nil.
func redact(key, v string, fields []string) any {
	doc, err := jsonx.Decode([]byte(v))
	if err != nil {
		return nil
	}
	return jsonx.DescribeMembers(doc, fields, func(f, s string) map[string]any { return jsonx.Describe(key+"#"+f, s) })
}

func (w *world) ledgerRead(n core.Need) any {
	name := n.Str("ledger")
	p, _ := jsonx.Decode(n.Params["path"])
	if _, ok := p.([]any); !ok {
		p = []any{}
	}
	if strings.Contains(n.Key, "@lock") && w.g.chance(0.15) {
		delete(w.files, name)
	}
	return ledgerAnswer(w.home, name, p.([]any), w.ledger(name))
}

// ledgerAnswer is a host's answer to a ledger.read of path in a ledger file under home
// (nil: no file).
func ledgerAnswer(home, name string, p []any, f *file) map[string]any {
	fact := map[string]any{"ledger": name, "path": p, "file": home + "/" + name}
	if f == nil {
		fact["found"] = false
		return fact
	}
	fact["found"], fact["version"] = true, f.version
	if f.bad {
		fact["corrupt"] = f.corrupt
		return fact
	}
	path, whole := keys(p)
	v, ok := jsonx.At(f.doc, path)
	ok = ok && whole
	fact["exists"] = ok
	if ok {
		fact["value"] = jsonx.FactValue(v)
	}
	fact["shape"] = jsonx.Shape(f.doc, path)
	return fact
}

// form returns the decoded form of an http.request need.
func form(n core.Need) map[string]any {
	var f map[string]any
	_ = n.Decode("form", &f)
	return f
}

func (w *world) http(n core.Need) any {
	g := w.g
	f := form(n)
	secret := func(name, v string) any { return jsonx.Describe(n.Key+"#"+name, v) }
	headers := map[string]any{"content-type": "application/json", "cache-control": "no-store"}
	if v, ok := w.remoteHTTP(n); ok {
		return v
	}
	if field(f, "grant_type") == nil {
		return w.userinfo(n)
	}
	// A token request with a DPoP proof: the authorization server's nonce asked for (RFC
	// 9449 §8), or a DPoP-bound token.
	var hdrs map[string]any
	_ = n.Decode("headers", &hdrs)
	dpop := hdrs["DPoP"] != nil
	if dpop && g.chance(0.3) {
		return map[string]any{"status": json.Number("400"), "headers": map[string]any{"content-type": "application/json",
			"dpop-nonce": pick(g, []any{"n-" + g.token(6), "n-" + g.token(6), ""})}, "json": map[string]any{"error": "use_dpop_nonce"}}
	}
	p := w.prov(w.providerOf(n.Key))
	if strings.HasPrefix(n.Key, "refresh|") && g.chance(0.2) {
		// The health pass's refreshes (keyed per provider) are rare episodes: the provider
		// revoking the grant is drawn more often there, so that the generator reaches it.
		return map[string]any{"status": json.Number("400"), "headers": headers, "json": map[string]any{"error": "invalid_grant"}}
	}
	switch x := g.r.Float64(); {
	case x < 0.5 || w.happy && x < 0.9:
		j := map[string]any{"access_token": secret("access_token", "ya29."+g.token(10)), "token_type": "Bearer"}
		if dpop && g.chance(0.7) {
			j["token_type"] = pick(g, []any{"DPoP", "DPoP", "dpop", "mac"})
		}
		if g.chance(0.9) {
			j["expires_in"] = pick(g, []any{json.Number("3599"), json.Number("3600"), json.Number("0"), json.Number("-5"), "3600",
				json.Number("86400"), json.Number("9007199254"), map[string]any{"$number": "3600.5"}, nil})
		}
		switch x := g.r.Float64(); {
		case x < 0.45 || w.happy:
			j["refresh_token"] = secret("refresh_token", "1//refresh-"+g.token(8))
		case x < 0.7:
			j["refresh_token"] = secret("refresh_token", p.refresh)
		case x < 0.72:
			j["refresh_token"] = pick(g, []any{"", json.Number("1")})
		}
		if g.chance(0.45) {
			j["scope"] = g.scopeString(w.req)
		}
		if g.chance(0.1) {
			j["id_token"] = secret("id_token", "eyJ."+g.token(6))
		}
		g.tamper(j, 0.03)
		return map[string]any{"status": json.Number("200"), "headers": headers, "json": j}
	case x < 0.66:
		code := pick(g, []any{"invalid_grant", "invalid_grant", "invalid_grant", "invalid_client", "invalid_client", "invalid_client", "invalid_request",
			"unauthorized_client", "slow_down", "bad code!", strings.Repeat("x", 70), json.Number("5"), "", "temporarily_unavailable"})
		status := pick(g, []string{"400", "400", "401", "200", "403", "500"})
		return map[string]any{"status": json.Number(status), "headers": headers,
			"json": map[string]any{"error": code, "error_description": "it's \"bad\"\n"}}
	case x < 0.73:
		return map[string]any{"status": json.Number("401"), "headers": map[string]any{"www-authenticate": "Bearer"}, "json": pick(g, []any{nil, map[string]any{}})}
	case x < 0.8:
		return map[string]any{"status": json.Number(pick(g, []string{"500", "502", "429", "302", "204", "999"})),
			"headers": map[string]any{"retry-after": "5"}, "json": pick(g, []any{nil, map[string]any{}, []any{}}), "body": "not_json"}
	case x < 0.86:
		return map[string]any{"status": json.Number("200"), "headers": map[string]any{"content-type": "text/html"}, "json": nil,
			"body": pick(g, []string{"not_json", "too_large"})}
	case x < 0.9:
		return map[string]any{"status": json.Number("200"), "headers": headers, "json": pick(g, []any{
			map[string]any{"token_type": "Bearer"}, map[string]any{"access_token": json.Number("1")}, []any{"a"}, "x",
			map[string]any{"access_token": secret("access_token", "")},
		})}
	case x < 0.97:
		m := map[string]any{"status": json.Number("0"), "error": pick(g, []any{"timeout", "refused", "tls", "canceled", "failed", "weird", nil})}
		if m["error"] == nil {
			delete(m, "error")
		}
		return m
	}
	return pick(g, []any{
		map[string]any{"status": "200", "json": map[string]any{"access_token": secret("access_token", "a")}},
		map[string]any{"json": map[string]any{"access_token": secret("access_token", "a")}},
		map[string]any{"status": json.Number("-1")}, map[string]any{"status": json.Number("9007199254740991"), "json": nil},
	})
}

func (w *world) userinfo(n core.Need) any {
	g := w.g
	switch x := g.r.Float64(); {
	case x < 0.7 || w.happy:
		j := map[string]any{"sub": "1234"}
		switch g.r.IntN(5) {
		case 0:
			j["email"] = pick(g, []any{"user@example.com", "zoë@example.com", "", "\u202eevil@example.com"})
		case 1:
			j["preferred_username"] = pick(g, []any{"user@example.com", "user"})
		case 2:
			j["login"] = pick(g, []any{"octocat", ""})
		case 3:
			j["email"], j["login"] = json.Number("1"), "octocat"
		}
		return map[string]any{"status": json.Number("200"), "headers": map[string]any{"content-type": "application/json"}, "json": j}
	case x < 0.8:
		return map[string]any{"status": json.Number("401"), "headers": map[string]any{}, "json": nil, "body": "not_json"}
	case x < 0.9:
		return map[string]any{"status": json.Number("200"), "headers": map[string]any{}, "json": nil, "body": "too_large"}
	}
	return map[string]any{"status": json.Number("0"), "error": "timeout"}
}

// callback is the user at the loopback: a callback with a code (and an issuer, an error,
// the state), or a timeout.
func (w *world) callback(n core.Need) any {
	g := w.g
	switch x := g.r.Float64(); {
	case w.happy:
	case x < 0.12:
		return map[string]any{"status": "timeout"}
	case x < 0.15:
		return pick(g, []any{map[string]any{"status": "canceled"}, map[string]any{}, "x"})
	}
	params := map[string]any{"state": g.token(8)}
	if !w.risk(0.1) {
		params["code"] = jsonx.Describe(n.Key+"#code", "code-"+g.token(6))
	}
	switch x := g.r.Float64(); {
	case x < 0.6 || w.happy:
		params["iss"] = w.issuer(n.Str("connector"))
		if r, ok := w.rems[n.Str("connector")]; ok {
			params["iss"] = originOf(r.url) // a remote server's legacy authorization server
			if w.lastIssuer != "" {
				params["iss"] = w.lastIssuer
			}
		}
	case x < 0.7:
		params["iss"] = pick(g, []any{"https://evil.example", "", "https://accounts.example.com/"})
	}
	if w.risk(0.1) {
		params["error"] = pick(g, []any{"access_denied", "access_denied", "server_error", "bad code!"})
		params["error_description"] = "it's \"denied\""
	}
	if g.chance(0.1) {
		params["scope"] = g.scopeString(w.req)
	}
	return map[string]any{"status": "callback", "params": params}
}

// issuer is the issuer a provider's authorization response names: the catalog's, else
// the origin of its authorization endpoint with the catalog's tenant.
func (w *world) issuer(c string) string {
	e := w.g.cat.entries[c]
	if s, ok := e["issuer"].(string); ok && s != "" {
		return s
	}
	u, _ := e["authorization_url"].(string)
	if t, ok := e["tenant"].(string); ok {
		u = strings.ReplaceAll(u, "{tenant}", t)
	}
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	host, _, _ := strings.Cut(rest, "/")
	return scheme + "://" + host
}

// safeAdd adds within the integers a query may carry (|n| < 2^53).
func safeAdd(a, b int64) int64 {
	const max = 1<<53 - 1
	switch s := a + b; {
	case s > max:
		return max
	case s < -max:
		return -max
	default:
		return s
	}
}
