// Package nodiff proves grantwire's engines identical. Its generator plays a host of the
// host ABI v2 (hostabi/README.md) against the policy: for every operation of the manifest
// it draws arguments (valid, malformed and hostile: unicode, bidi and zero-width
// characters, quotes, controls), runs the operation the way a driver does (prefetch,
// rounds, locks and reads under them, restarts after conflicts, failed applies) and
// answers every need from a simulated world (keyring slots, ledger files, environment,
// agent sources, token and userinfo endpoints, the user at the loopback, remote MCP
// servers with their challenges, metadata and registration endpoints) whose contents
// are drawn consistently but include every branch: missing, corrupt and misshapen
// ledgers, blobs that are not JSON, GAIA float seconds, empty secrets, rotated clients,
// tokens bound or not, locks held or busy, every kind of token endpoint answer, host
// failures. It also spoils answers the way a broken host would. Its tests feed the same
// queries to every engine and demand byte-identical decisions and identical errors
// (10,000 queries per operation, 2,500 to 5,000 for the six costliest, 1,000 with -short:
// see perOp in nodiff_test.go); its
// coverage test shows, with OPA's coverage tracer, that the queries reach every line of
// the policy.
//
// It is internal test support: only tests import it, and it imports the standard library
// and core only (the engines are imported by its tests).
package nodiff

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"

	"github.com/grantwire/grantwire/core"
)

// Ops lists every operation of the policy's manifest, in the order decide routes them
// save those added since (appended, so that each operation keeps its random stream:
// TestCoverage seeds an operation's generator with its index); TestOpsMatchManifest keeps
// it in step with the manifest.
var Ops = []string{
	"get_access_token", "grant", "revoke", "list_grants", "activate", "deactivate",
	"list_activations", "visible_servers", "activation_changes", "grant_changes", "disconnect", "connect",
	"configure_client", "status", "connections", "test_connector", "import_forwarded",
	"configure_mcp", "credential", "mcp_list", "list_agents", "agent_id", "validate_catalog",
	"mcp_add", "mcp_auth", "mcp_token", "mcp_logout", "mcp_remove", "mcp_remote_list", "launch", "mcp_tool", "connector_view", "start_flow",
	"maintain", "mcp_challenge", "configure",
}

// Gen generates queries for one catalog. It is deterministic for a given seed.
type Gen struct {
	r   *rand.Rand
	cat *Catalog
	// Manifest, when set, gives the prefetch of each operation: episodes then start as a
	// driver does, with the prefetched facts on the first question.
	Manifest *core.Manifest
}

// NewGen returns a generator seeded with (seed, stream).
func NewGen(cat *Catalog, seed, stream uint64) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, stream)), cat: cat}
}

// Rand exposes the generator's source (for callers that make their own choices).
func (g *Gen) Rand() *rand.Rand { return g.r }

func pick[T any](g *Gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

func (g *Gen) chance(p float64) bool { return g.r.Float64() < p }

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// token is a random alphanumeric string of n characters.
func (g *Gen) token(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[g.r.IntN(len(alnum))]
	}
	return string(b)
}

// junk returns a value of a random JSON type (for malformed members).
func (g *Gen) junk() any {
	switch g.r.IntN(10) {
	case 0:
		return nil
	case 1:
		return g.chance(0.5)
	case 2:
		return json.Number("0")
	case 3:
		return json.Number(pick(g, []string{"-1", "9007199254740991", "-9007199254740991", "2147483648"}))
	case 4:
		return ""
	case 5:
		return pick(g, hostile)
	case 6:
		return []any{}
	case 7:
		return map[string]any{}
	case 8:
		return map[string]any{"$number": pick(g, []string{"1.5", "1e400", "x"})}
	default:
		return []any{"a", json.Number("1"), nil}
	}
}

// tamper, with probability p, drops a member of m or gives it a junk value.
func (g *Gen) tamper(m map[string]any, p float64) {
	if len(m) == 0 || !g.chance(p) {
		return
	}
	keys := slices.Sorted(maps.Keys(m))
	k := keys[g.r.IntN(len(keys))]
	if g.chance(0.5) {
		delete(m, k)
	} else {
		m[k] = g.junk()
	}
}

func field(v any, k string) any {
	if m, ok := v.(map[string]any); ok {
		return m[k]
	}
	return nil
}

// hostile strings: unicode (NFC and NFD, astral, bidi overrides, zero-width, line and
// paragraph separators, a byte-order mark), quotes, backslashes, controls, shell
// metacharacters, HTML, templates, paths, the empty string and a long one.
var hostile = []string{
	"it's", "two words", "ü-agent", "zoë", "zoe\u0308", "\u202eevil", "zero\u200bwidth", "line\u2028sep", "para\u2029",
	"\ufeffbom", "😀", "\ufffd", "tab\tx", "nl\nx", "cr\rx", "nul\x00x", "del\x7fx", "bell\x07", "dq\"x", `back\slash`,
	"<b>&amp;</b>", "$(rm -rf ~)", "`id`", "semi;colon", "*", "[x]", "{tenant}", `\u0000`, "%2e%2e", "..", "a/b",
	"~/x", "-flag", "--scopes", "", " ", "x,y", strings.Repeat("x", 300),
}

// agentID returns an agent id: mostly valid (built-ins of the catalog, installed,
// native, the custom ids of the world's sources), hostile with probability bad.
func (g *Gen) agentID(bad float64) string {
	if g.chance(bad) {
		return pick(g, badAgents)
	}
	if len(g.cat.Builtins) > 0 && g.chance(0.35) {
		return pick(g, g.cat.Builtins)
	}
	return pick(g, goodAgents)
}

var goodAgents = []string{
	"installed:notes", "native:mail", "installed:a.b@c+d-e", "builtin:Chat_2", customID("tools/tool.py", "tool"),
	customID("~/agents/helper.js", "helper"), customID("tools/tool.v2.py", "tool.v2"), customID("/opt/agents/bot", "bot"),
	"installed:" + strings.Repeat("n", 128),
}

var badAgents = []string{
	"it's", "two words", "ü-agent", "installed:zoë", "installed:\u202eevil", "installed:zero\u200bwidth", "builtin:",
	"custom:xyz:tool", "custom:0123456789ABCDEF:tool", "installed:_x", "installed:" + strings.Repeat("n", 129), "a",
	"semi;colon", "$HOME", "installed:a\"b", `installed:a\b`, "installed:tab\tx", "installed:<b>", "installed:x\u2028y",
	"😀", "native:a:b", "builtin:chat ", "",
}

var commonScopes = []string{"openid", "email", "profile", "offline_access", "use", "read:user", "repo", "a", "b", "mail"}

var badScopes = []string{
	"x,y", "sp ace", "q'uote", "$(rm)", "é", "", "dq\"", `back\slash`, "<html>", "zero\u200bw", "\u202e",
	strings.Repeat("s", 513), "tab\tx",
}

// scope returns one scope: from the catalog, a common one, rarely a hostile one.
func (g *Gen) scope() string {
	switch {
	case g.chance(0.04):
		return pick(g, badScopes)
	case len(g.cat.IDs) > 0 && g.chance(0.5):
		c := pick(g, g.cat.IDs)
		list := append(g.cat.strs(c, "default_scopes"), g.cat.strs(c, "available_scopes")...)
		if len(list) > 0 {
			return pick(g, list)
		}
	}
	return pick(g, commonScopes)
}

// toolNames are the tool names the generator draws from: a few a rule lists, and names no
// rule can hold (spaces, commas, quotes, unicode, empty, too long).
var toolNames = []string{
	"read", "list", "push", "get_file", "repo.read", "ns/tool-1",
	"a b", "a,b", "it's", "", "naïve", "\u202etool", strings.Repeat("t", 129),
}

// tool is one tool name, mostly one a rule may hold.
func (g *Gen) tool() string {
	if g.chance(0.85) {
		return pick(g, toolNames[:6])
	}
	return pick(g, toolNames)
}

func (g *Gen) toolArg() any {
	if g.chance(0.03) {
		return g.junk()
	}
	return g.tool()
}

// toolsArg is an array of tool names (see listArg).
func (g *Gen) toolsArg() any { return listArg(g, g.tool) }

// listArg is an array of up to three elements made by el: sometimes junk instead, sometimes
// with a junk member.
func listArg[T any](g *Gen, el func() T) any {
	if g.chance(0.03) {
		return g.junk()
	}
	n := g.r.IntN(4)
	out := make([]any, 0, n)
	for range n {
		if g.chance(0.02) {
			out = append(out, g.junk())
			continue
		}
		out = append(out, el())
	}
	return out
}

// toolRule is a rule as connectors/activations.json holds it.
func (g *Gen) toolRule() []any {
	n := g.r.IntN(4)
	out := make([]any, 0, n)
	for range n {
		out = append(out, pick(g, toolNames[:6]))
	}
	return out
}

func (g *Gen) scopeList(max int) []any {
	n := g.r.IntN(max + 1)
	out := make([]any, 0, n)
	for range n {
		out = append(out, g.scope())
	}
	return out
}

// covering returns scopes that usually cover req (for what a grant or a connection
// holds), sometimes random ones.
func (g *Gen) covering(req []any, c string) []any {
	if g.chance(0.25) {
		return g.scopeList(4)
	}
	out := append([]any{}, req...)
	if len(req) == 0 || g.chance(0.3) {
		for _, s := range g.cat.strs(c, "default_scopes") {
			out = append(out, s)
		}
	}
	out = append(out, g.scopeList(2)...)
	if g.chance(0.1) && len(out) > 0 {
		out = append(out, out[0]) // a duplicate
	}
	return out
}

// declared returns what a registry entry declares for a connector: part of req, all of
// it, other scopes, none, or something that is not a list of valid scopes.
func (g *Gen) declared(req []any, c string) any {
	switch x := g.r.Float64(); {
	case x < 0.3 && len(req) > 0:
		return req[:1+g.r.IntN(len(req))]
	case x < 0.6 && len(req) > 0:
		return req
	case x < 0.88:
		list := g.cat.strs(c, "default_scopes")
		if len(list) == 0 || g.chance(0.4) {
			return []any{pick(g, commonScopes)}
		}
		out := []any{}
		for _, s := range list {
			out = append(out, s)
		}
		return out
	case x < 0.94:
		return []any{}
	}
	return pick(g, []any{"use", []any{"a b"}, []any{"a", "a"}, nil})
}

// scopeString is a token response's or a callback's scope: what was asked for, part of
// it or more, space- or comma-separated.
func (g *Gen) scopeString(req []any) any {
	var parts []string
	for _, s := range req {
		if str, ok := s.(string); ok && g.chance(0.8) {
			parts = append(parts, str)
		}
	}
	if g.chance(0.3) {
		parts = append(parts, g.scope())
	}
	sep := " "
	if g.chance(0.15) {
		sep = ","
	}
	switch x := g.r.Float64(); {
	case x < 0.05:
		return []any{"openid"}
	case x < 0.1:
		return " "
	}
	return strings.Join(parts, sep)
}

// connector returns a connector id: of the given types mostly, any catalog id, or one the
// catalog lacks.
func (g *Gen) connector(types ...string) any {
	switch {
	case g.chance(0.02):
		return g.junk()
	case g.chance(0.04):
		return pick(g, []string{"nope", "GOOGLE", "google ", "catalog", "zoë", "q\"c", ""})
	}
	var ids []string
	for _, t := range types {
		ids = append(ids, g.cat.OfType(t)...)
	}
	if len(ids) == 0 || g.chance(0.12) {
		ids = g.cat.IDs
	}
	if len(ids) == 0 {
		return "google"
	}
	return pick(g, ids)
}

func (g *Gen) agentArg() any {
	switch {
	case g.chance(0.02):
		return g.junk()
	case g.chance(0.01):
		return nil
	}
	return g.agentID(0.08)
}

func (g *Gen) scopesArg(max int) any {
	if g.chance(0.03) {
		return g.junk()
	}
	return g.scopeList(max)
}

// agentsArg is an array of agent ids (see listArg).
func (g *Gen) agentsArg() any { return listArg(g, func() string { return g.agentID(0.05) }) }

// optional sets a[k] to v(), to null, or leaves it absent.
func (g *Gen) optional(a map[string]any, k string, pAbsent, pNull float64, v func() any) {
	switch x := g.r.Float64(); {
	case x < pAbsent:
	case x < pAbsent+pNull:
		a[k] = nil
	default:
		a[k] = v()
	}
}

var oauth = []string{"oauth_pkce"}

// Args returns random arguments for op: mostly well-formed, sometimes with a member
// missing, of the wrong type, hostile, or not an object at all.
func (g *Gen) Args(op string) any {
	a := map[string]any{}
	conn := func() any { return g.connector() }
	switch op {
	case "get_access_token":
		a["provider"], a["agent"], a["scopes"] = g.connector(oauth...), g.agentArg(), g.scopesArg(3)
	case "grant":
		a["connector"], a["agent"], a["scopes"] = g.connector(), g.agentArg(), g.scopesArg(3)
	case "revoke":
		a["connector"], a["agent"] = g.connector(), g.agentArg()
	case "list_grants", "list_activations", "status", "connector_view":
		g.optional(a, "connector", 0.4, 0.08, conn)
	case "activate", "deactivate":
		a["connector"], a["agent"] = g.connector("mcp_server", "mcp_remote"), g.agentArg()
		g.optional(a, "scopes", 0.5, 0.1, func() any { return g.scopesArg(2) })
		if op == "activate" {
			switch x := g.r.Float64(); {
			case x < 0.2:
				a["tools"] = g.toolsArg()
			case x < 0.3:
				a["all_tools"] = pick(g, []any{true, true, true, false, "yes"})
			case x < 0.33:
				a["tools"], a["all_tools"] = g.toolsArg(), true
			}
		}
	case "mcp_tool":
		a["connector"], a["agent"] = g.connector("mcp_server", "mcp_remote"), g.agentArg()
		switch x := g.r.Float64(); {
		case x < 0.5:
			a["tool"] = g.toolArg()
		case x < 0.95:
			a["tools"] = g.toolsArg()
		case x < 0.97:
			a["tool"], a["tools"] = g.toolArg(), g.toolsArg()
		}
	case "visible_servers":
		a["agent"] = g.agentArg()
	case "activation_changes":
		a["before"] = g.before()
		g.optional(a, "after", 0.6, 0.05, g.before)
	case "grant_changes":
		a["before"] = g.grantsView()
		g.optional(a, "after", 0.6, 0.05, g.grantsView)
	case "launch":
		a["connector"], a["agent"] = g.connector("mcp_server", "mcp_remote"), g.agentArg()
		g.optional(a, "check", 0.5, 0.1, func() any { return pick(g, []any{true, false, "yes"}) })
	case "start_flow":
		a["connector"] = g.connector(oauth...)
		a["kind"] = pick(g, []any{"pkce", "pkce", "pkce", "device", "", json.Number("1")})
		a["pending"] = g.pending(a["connector"])
	case "disconnect", "test_connector":
		a["connector"] = g.connector()
	case "connect":
		a["connector"] = g.connector(oauth...)
		a["scopes"] = g.scopesArg(3)
		if g.chance(0.4) {
			a["scopes"] = []any{}
		}
		a["grant_agents"] = g.agentsArg()
		g.optional(a, "timeout_ms", 0.7, 0.02, func() any {
			return pick(g, []any{json.Number("1000"), json.Number("1800000"), json.Number("999"), json.Number("1800001"),
				json.Number("60000"), json.Number("90000"), "60000"})
		})
	case "configure_client":
		a["connector"] = g.connector(oauth...)
		g.optional(a, "tenant", 0.6, 0.05, func() any {
			return pick(g, []any{"organizations", "common", "Tenant-1.x_y", "a b", "-x", strings.Repeat("t", 129), "zoë", json.Number("1"), ""})
		})
	case "connections", "list_agents", "maintain":
	case "import_forwarded":
		a["provider"], a["scopes"], a["grant_agents"] = g.connector(oauth...), g.scopesArg(4), g.agentsArg()
		a["account_email"] = pick(g, []any{"user@example.com", "user@example.com", "", "zoë@example.com", "o'brien@example.com", json.Number("1")})
		g.optional(a, "account_type", 0.6, 0.1, func() any { return pick(g, []any{"personal", "work", json.Number("1")}) })
	case "configure_mcp":
		a["connector"] = g.connector("mcp_server")
		c, _ := a["connector"].(string)
		all, required := g.cat.envKeys(c)
		keys := []any{}
		for _, k := range all {
			if contains(required, k) && g.chance(0.9) || g.chance(0.4) {
				keys = append(keys, k)
			}
		}
		if g.chance(0.08) {
			keys = append(keys, pick(g, []any{"UNKNOWN", "", "GITHUB_TOKEN", "A"}))
		}
		g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		a["env_keys"] = keys
		if g.chance(0.03) {
			a["env_keys"] = g.junk()
		}
	case "configure":
		// One operation for every type: an OAuth provider's arguments or an MCP server's,
		// sometimes mixed or on a connector of another type.
		inner := "configure_mcp"
		if g.chance(0.5) {
			inner = "configure_client"
		}
		b, ok := g.Args(inner).(map[string]any)
		if !ok {
			return b
		}
		a = b
		if _, has := a["env_keys"]; !has {
			a["env_keys"] = []any{}
		}
		if g.chance(0.1) {
			a["env_keys"] = []any{pick(g, []any{"GITHUB_TOKEN", "X", json.Number("1")})}
		}
		if g.chance(0.08) {
			a["tenant"] = pick(g, []any{"common", "a b"})
		}
		if g.chance(0.05) {
			a["set"] = map[string]any{}
		}
		if g.chance(0.1) {
			a["connector"] = g.connector()
		}
		// The form: the setup fields a surface shows, asked of the policy (sometimes with a
		// value that is not true, which is a store as always).
		if g.chance(0.15) {
			a["form"] = pick(g, []any{true, true, true, false, "true"})
		}
	case "credential":
		a["connector"], a["agent"] = g.connector("mcp_server"), g.agentArg()
	case "mcp_list":
		g.optional(a, "agent", 0.5, 0.1, func() any { return g.agentArg() })
	case "agent_id":
		a["source"] = pick(g, append([]any{"", "~/x", "/abs/x.tar.gz", "noext", "a/.hidden", "dir/", json.Number("1")}, toAny(sources)...))
		g.optional(a, "name", 0.7, 0.05, func() any {
			return pick(g, []any{"tool", "bad name!", "", "-x", strings.Repeat("n", 129), "zoë", "a.b@c"})
		})
	case "mcp_add", "mcp_auth", "mcp_token", "mcp_logout", "mcp_remove", "mcp_remote_list", "mcp_challenge":
		g.remoteArgs(op, a)
	case "validate_catalog":
		g.optional(a, "strict", 0.4, 0.05, func() any { return pick(g, []any{true, true, false, "yes"}) })
	default:
		a["connector"] = g.connector()
	}
	return g.mutateArgs(a)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// byConnectorAndAgent is {connector: {agent: value()}}: up to three connectors drawn of
// kinds (any kind when none), one or two agents each.
func (g *Gen) byConnectorAndAgent(value func() any, kinds ...string) map[string]any {
	m := map[string]any{}
	for range g.r.IntN(4) {
		cs, ok := g.connector(kinds...).(string)
		if !ok {
			continue
		}
		inner, ok := m[cs].(map[string]any)
		if !ok {
			inner = map[string]any{}
			m[cs] = inner
		}
		for range 1 + g.r.IntN(2) {
			inner[g.agentID(0.1)] = value()
		}
	}
	return m
}

// grantsView is a view of the grants ledger for grant_changes ({connector: {agent:
// [scopes]}}), with now and then an entry that is no grant.
func (g *Gen) grantsView() any {
	if g.chance(0.05) {
		return g.junk()
	}
	m := g.byConnectorAndAgent(func() any {
		return pick(g, []any{g.scopesArg(2), g.scopesArg(2), []any{}, "use", []any{json.Number("1")}})
	})
	if g.chance(0.05) {
		m["version"] = json.Number("1")
	}
	return m
}

// before is an activation watcher's earlier view: {connector: {agent: true}}.
func (g *Gen) before() any {
	if g.chance(0.05) {
		return g.junk()
	}
	m := g.byConnectorAndAgent(func() any { return pick(g, []any{true, true, true, false, "true"}) }, "mcp_server", "mcp_remote")
	if g.chance(0.05) {
		m["odd"] = pick(g, []any{[]any{"a"}, true})
	}
	return m
}

// pending is a server's flows in progress, [{flow_id, connector, kind}], often one of c.
func (g *Gen) pending(c any) any {
	if g.chance(0.05) {
		return g.junk()
	}
	out := []any{}
	for range g.r.IntN(3) {
		p := map[string]any{"flow_id": g.token(8), "connector": g.connector(oauth...), "kind": "pkce"}
		if g.chance(0.3) {
			p["connector"] = c
		}
		if g.chance(0.05) {
			g.tamper(p, 1)
		}
		out = append(out, p)
	}
	return out
}

func (g *Gen) mutateArgs(a map[string]any) any {
	switch {
	case g.chance(0.015):
		return pick(g, []any{nil, []any{}, "args", json.Number("1")})
	case g.chance(0.05) && len(a) > 0:
		g.tamper(a, 1)
	case g.chance(0.02):
		a["unexpected"] = g.junk()
	}
	return a
}

// secretArgs are the secret arguments an operation takes, described in facts["arg"].
func secretArgs(op string, args any) []string {
	switch op {
	case "configure_client":
		return []string{"client_id", "client_secret"}
	case "import_forwarded":
		return []string{"client_id", "client_secret", "refresh_token"}
	case "mcp_add":
		return []string{"client_secret", "private_key", "assertion"}
	case "configure_mcp", "configure":
		var out []string
		if keys, _ := field(args, "env_keys").([]any); op == "configure" && (len(keys) == 0 || field(args, "tenant") != nil) {
			out = append(out, "client_id", "client_secret")
		}
		if keys, ok := field(args, "env_keys").([]any); ok {
			for _, k := range keys {
				if s, ok := k.(string); ok {
					out = append(out, "env."+s)
				}
			}
		}
		return out
	}
	return nil
}

// focus lists the connectors, agents and scopes the arguments name, for the world to
// draw relevant content.
func focus(args any) (conns, agents []string, req []any) {
	for _, k := range []string{"provider", "connector"} {
		if s, ok := field(args, k).(string); ok {
			conns = append(conns, s)
		}
	}
	if s, ok := field(args, "agent").(string); ok {
		agents = append(agents, s)
	}
	if list, ok := field(args, "grant_agents").([]any); ok {
		for _, x := range list {
			if s, ok := x.(string); ok {
				agents = append(agents, s)
			}
		}
	}
	if list, ok := field(args, "scopes").([]any); ok {
		req = list
	}
	return conns, agents, req
}

// nameOf is a source's agent name (its base name without the extension).
func nameOf(src string) string { return strings.TrimSuffix(path.Base(src), path.Ext(src)) }
