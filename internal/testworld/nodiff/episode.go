package nodiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Episode is one operation run the way a driver runs it (hostabi/README.md): the secret
// arguments described in facts["arg"], the prefetch, then one question per round, each
// need answered from the world in order (needs under a lock only when it is held), and
// after a done decision with effects, the outcome of applying them: success, a conflict
// (a restart from fresh facts with attempt+1, the held locks kept) or a host failure
// (reported as the fact "apply@<attempt>"). A share of episodes play a broken host:
// answers spoilt or replaced by host failures, facts forgotten or unasked for, rounds
// that do not start at 0, queries with members missing or of the wrong type.
type Episode struct {
	g       *Gen
	w       *world
	Op      string
	args    any
	facts   map[string]any
	attempt any
	round   int
	queries int
	sloppy  float64 // how often a fact is spoilt
	broken  float64 // how often a fact is a host failure
	raw     bool    // facts sent as a non-object
	extra   map[string]any
}

// maxQueries bounds an episode (a driver allows 64 rounds; episodes rarely need 10).
const maxQueries = 24

// Episode starts an episode of op.
func (g *Gen) Episode(op string) *Episode {
	e := &Episode{g: g, Op: op, facts: map[string]any{}, attempt: json.Number("0")}
	e.args = g.Args(op)
	w := newWorld(g)
	w.conns, w.agents, w.req = focus(e.args)
	e.w = w
	switch x := g.r.Float64(); {
	case x < 0.3:
		w.happy = true
	case x < 0.42:
		e.sloppy = 0.04
	case x < 0.47:
		e.sloppy = 0.2
	}
	if !w.happy && g.chance(0.2) {
		e.broken = 0.015
	}
	switch x := g.r.Float64(); {
	case x < 0.06:
		e.attempt = pick(g, []any{json.Number("1"), json.Number("15"), json.Number("16"), json.Number("17"), json.Number("100")})
	case x < 0.09:
		e.attempt = pick(g, []any{nil, "3", json.Number("-1"), json.Number("2147483648"), json.Number("9007199254740991"), map[string]any{}})
	}
	if g.chance(0.08) {
		e.round = 1 + g.r.IntN(5) // a host that numbers its questions from elsewhere
	}
	e.describeSecrets()
	if g.Manifest != nil && g.chance(0.8) {
		e.prefetch()
	}
	if g.chance(0.08) {
		e.stale()
	}
	if g.chance(0.01) {
		e.raw = true
	}
	if g.chance(0.02) {
		e.extra = map[string]any{"unexpected": g.junk()}
	}
	return e
}

// describeSecrets puts the descriptions of the operation's secret arguments in
// facts["arg"], as a driver does (empty secrets are not described; a broken one does).
func (e *Episode) describeSecrets() {
	g := e.g
	if g.chance(0.05) {
		if g.chance(0.5) {
			e.facts["arg"] = g.junk()
		}
		return
	}
	descs := map[string]any{}
	for _, name := range secretArgs(e.Op, e.args) {
		switch x := g.r.Float64(); {
		case x < 0.1 || name == "client_secret" && x < 0.4 || (name == "private_key" || name == "assertion") && x < 0.75:
		case x < 0.13:
			descs[name] = jsonx.Describe("arg#"+name, "")
		case x < 0.15:
			descs[name] = pick(g, []any{"plain", map[string]any{"digest": "sha256:0123456789abcdef"}, nil})
		default:
			descs[name] = jsonx.Describe("arg#"+name, name+"-"+g.token(8))
		}
	}
	e.facts["arg"] = descs
}

// prefetch fetches the operation's prefetch templates, with {"$arg": name} replaced by
// that string argument (a template whose argument is missing or not a string is dropped).
func (e *Episode) prefetch() {
	op, ok := e.g.Manifest.Ops[e.Op]
	if !ok {
		return
	}
	var templates []map[string]any
	if err := json.Unmarshal(op.Prefetch, &templates); err != nil {
		return
	}
	var needs []core.Need
	for _, t := range templates {
		v, ok := instantiate(t, e.args)
		if !ok {
			continue
		}
		b, _ := json.Marshal(v)
		var n core.Need
		if err := json.Unmarshal(b, &n); err == nil {
			needs = append(needs, n)
		}
	}
	e.fetch(needs)
}

func instantiate(v any, args any) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		if name, ok := t["$arg"].(string); ok && len(t) == 1 {
			s, ok := field(args, name).(string)
			return s, ok
		}
		out := map[string]any{}
		for k, x := range t {
			y, ok := instantiate(x, args)
			if !ok {
				return nil, false
			}
			out[k] = y
		}
		return out, true
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			y, ok := instantiate(x, args)
			if !ok {
				return nil, false
			}
			out[i] = y
		}
		return out, true
	}
	return v, true
}

// stale adds facts nobody asked for: leftovers of a broken host, under keys the policy
// uses or not, some of them ledger reads or host failures.
func (e *Episode) stale() {
	g := e.g
	for range 1 + g.r.IntN(3) {
		k := pick(g, []string{"grant", "conn", "lock", "now", "refresh", "token", "callback", "loopback", "agents", "stale", "grants|x", "client"})
		switch g.r.IntN(5) {
		case 4:
			// The answer to another read of a ledger the world holds, at any depth.
			name := pick(g, []string{"connectors/grants.json", "connectors/activations.json", "connectors/state.json", "mcp_servers.json", "agents.json"})
			f := e.w.ledger(name)
			path := []any{}
			var at any
			if f != nil {
				at = f.doc
			}
			for range g.r.IntN(4) {
				m, ok := at.(map[string]any)
				if !ok || len(m) == 0 || g.chance(0.2) {
					path = append(path, pick(g, []string{"activations", "mcpServers", e.w.someConnector(), e.w.someAgent()}))
					break
				}
				key := pick(g, slices.Sorted(maps.Keys(m)))
				path, at = append(path, key), m[key]
			}
			e.facts[k] = ledgerAnswer(e.w.home, name, path, f)
		case 0:
			e.facts[k] = g.junk()
		case 1:
			e.facts[k] = map[string]any{"ledger": pick(g, []string{"connectors/grants.json", "mcp_servers.json", "connectors/state.json", "agents.json", "x/../evil.json"}),
				"path": []any{}, "file": e.w.home + "/x.json", "found": true, "version": "v",
				"corrupt": pick(g, corruption)}
		case 2:
			e.facts[k] = e.g.hostError()
		default:
			e.facts[k] = map[string]any{"ledger": "connectors/grants.json", "path": []any{"a"}, "file": "/g.json", "found": true,
				"version": "v", "exists": true, "value": json.Number("1"), "shape": []any{"object", pick(g, []string{"number", "array", "object"})}}
		}
	}
}

// hostError is a host failure, sometimes malformed.
func (g *Gen) hostError() any {
	he := map[string]any{
		"code":   pick(g, []any{"INSECURE_STORE", "INSECURE_STORE", "IO", "IO", "OTHER"}),
		"detail": pick(g, []any{"no Secret Service on the session bus", "open /home/user/.grantwire/x: permission denied", "it's \"bad\"\n", ""}),
		"fix":    pick(g, []any{"apt-get install gnome-keyring", "", "chmod 700 ~/.grantwire"}),
	}
	g.tamper(he, 0.1)
	if g.chance(0.03) {
		return map[string]any{"host_error": pick(g, []any{nil, "x", []any{}, json.Number("1")})}
	}
	return map[string]any{"host_error": he}
}

// fetch answers needs in order as a driver does: a fact already present is kept; a need
// read under a lock is fetched only when the lock fact is "held".
func (e *Episode) fetch(needs []core.Need) {
	g := e.g
	for _, n := range needs {
		if _, ok := e.facts[n.Key]; ok {
			continue
		}
		if after := n.Str("after"); after != "" && e.facts[after] != "held" && !g.chance(0.02) {
			continue
		}
		if g.chance(e.sloppy / 4) {
			continue // forgotten
		}
		v := e.w.fetch(n)
		switch {
		case g.chance(e.broken):
			v = g.hostError()
		case g.chance(e.sloppy):
			v = e.spoil(v)
		}
		e.facts[n.Key] = v
	}
}

// spoil is a broken host's answer: junk, or the right answer with a member dropped or of
// the wrong type.
func (e *Episode) spoil(v any) any {
	g := e.g
	m, ok := v.(map[string]any)
	if !ok || g.chance(0.3) {
		return g.junk()
	}
	out := map[string]any{}
	for k, x := range m {
		out[k] = x
	}
	g.tamper(out, 1)
	return out
}

// Query encodes the episode's current question.
func (e *Episode) Query() []byte {
	g := e.g
	q := map[string]any{"op": e.Op, "args": e.args, "facts": e.facts}
	if e.raw {
		q["facts"] = g.junk()
	}
	if e.attempt != nil {
		q["attempt"] = e.attempt
	}
	switch {
	case g.chance(0.96):
		q["round"] = json.Number(fmt.Sprint(e.round))
	case g.chance(0.5):
	default:
		q["round"] = pick(g, []any{"0", json.Number("-1"), nil, json.Number("3")})
	}
	for k, v := range e.extra {
		q[k] = v
	}
	if g.chance(0.005) {
		delete(q, "args")
	}
	if g.chance(0.005) {
		q["op"] = pick(g, []any{"nope", nil, json.Number("1"), "GET_ACCESS_TOKEN", ""})
	}
	return g.encodeQuery(q)
}

// Answer continues the episode after the engine decided d (nil after an engine error);
// it reports whether another question follows.
func (e *Episode) Answer(d *core.Decision) bool {
	g := e.g
	e.round++
	e.queries++
	if d == nil || e.queries >= maxQueries {
		return false
	}
	if d.Status == core.StatusNeed {
		e.fetch(d.Needs)
		if g.chance(e.sloppy / 2) {
			e.stale()
		}
		return true
	}
	if len(d.Effects) == 0 {
		return false
	}
	switch x := g.r.Float64(); {
	case x < 0.75:
		return false // applied
	case x < 0.9:
		// A precondition failed: decide again from fresh facts, the held locks kept.
		kept := map[string]any{}
		for k, v := range e.facts {
			if v == "held" || k == "arg" {
				kept[k] = v
			}
		}
		e.facts = kept
		if n, ok := e.attempt.(json.Number); ok {
			if v, err := n.Int64(); err == nil {
				e.attempt = json.Number(fmt.Sprint(v + 1))
			}
		}
		// In sorted order: a draw per entry in map order would make a seed unrepeatable.
		for _, user := range slices.Sorted(maps.Keys(e.w.slots)) {
			if g.chance(0.3) {
				e.w.perturb(user)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(e.w.files)) {
			if g.chance(0.3) {
				delete(e.w.files, name)
			}
		}
		return true
	}
	// An effect failed: the core reports the host's failure.
	e.facts["apply@"+attemptText(e.attempt)] = g.hostError()
	return true
}

func attemptText(a any) string {
	if n, ok := a.(json.Number); ok {
		return string(n)
	}
	return "0"
}

// encodeQuery writes a query as some host would: members in any order, HTML characters
// and non-ASCII escaped or not, whitespace or none. Every query passes core.CheckQuery.
func (g *Gen) encodeQuery(q map[string]any) []byte {
	enc := queryEncoder{
		shuffle:     g.chance(0.3),
		escapeHTML:  g.chance(0.3),
		escapeASCII: g.chance(0.15),
		spaces:      g.chance(0.1),
		g:           g,
	}
	var b strings.Builder
	enc.value(&b, q)
	return []byte(b.String())
}

type queryEncoder struct {
	shuffle, escapeHTML, escapeASCII, spaces bool
	g                                        *Gen
}

func (enc *queryEncoder) ws(b *strings.Builder) {
	if enc.spaces {
		b.WriteString(pick(enc.g, []string{"", " ", "\n  ", "\t"}))
	}
}

func (enc *queryEncoder) value(b *strings.Builder, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprint(b, t)
	case json.Number:
		b.WriteString(string(t))
	case string:
		enc.str(b, t)
	case []any:
		enc.list(b, '[', ']', len(t), func(i int) { enc.value(b, t[i]) })
	case map[string]any:
		keys := slices.Sorted(maps.Keys(t))
		if enc.shuffle {
			enc.g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		}
		enc.list(b, '{', '}', len(keys), func(i int) {
			enc.str(b, keys[i])
			b.WriteByte(':')
			enc.ws(b)
			enc.value(b, t[keys[i]])
		})
	case []string:
		list := make([]any, len(t))
		for i, s := range t {
			list[i] = s
		}
		enc.value(b, list)
	default:
		panic(fmt.Sprintf("nodiff: cannot encode %T", v))
	}
}

// list writes n items, each after some whitespace, separated by commas, between start and
// end (an array's or an object's).
func (enc *queryEncoder) list(b *strings.Builder, start, end byte, n int, item func(i int)) {
	b.WriteByte(start)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		enc.ws(b)
		item(i)
	}
	b.WriteByte(end)
}

func (enc *queryEncoder) str(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f && enc.escapeASCII:
			fmt.Fprintf(b, `\u%04x`, r)
		case enc.escapeHTML && (r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029):
			fmt.Fprintf(b, `\u%04x`, r)
		case enc.escapeASCII && r > 0x7f && r < 0x10000:
			fmt.Fprintf(b, `\u%04X`, r)
		case enc.escapeASCII && r >= 0x10000:
			r -= 0x10000
			fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
