package nodiff_test

// A hand-written Go version of the gate (decide for op get_access_token, with the policy's
// exact semantics: undefined values fall through to the next else branch, sets are sorted
// in OPA's order of types), used as the floor of the benchmarks. It is test-only code:
// TestGoGate proves it byte-identical to the engines on the generator's gate episodes, so
// the floor it sets is a fair one.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/internal/nodiff"
	"github.com/grantwire/grantwire/internal/canon"
)

type obj = map[string]any

// goGate holds the catalog, as the policy's data.
type goGate struct {
	connectors obj // nil when data.catalog.connectors is not an object
}

func newGoGate(data []byte) *goGate {
	var doc any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		panic(err)
	}
	c, _ := get(get(doc, "catalog"), "connectors").(obj)
	return &goGate{connectors: c}
}

// decodeQuery parses a query as the engines see it (CheckQuery has accepted it).
func decodeQuery(q []byte) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(q))
	d.UseNumber()
	err := d.Decode(&v)
	return v, err
}

// DecideJSON answers a get_access_token query given as JSON, in canonical JSON. ok is
// false for queries it does not implement (other operations).
func (gg *goGate) DecideJSON(dst, q []byte) ([]byte, bool) {
	in, err := decodeQuery(q)
	if err != nil {
		return dst, false
	}
	d, ok := gg.decide(in)
	if !ok {
		return dst, false
	}
	return appendJSON(dst, d), true
}

// appendJSON writes a decision in canonical JSON (see internal/canon).
func appendJSON(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil, null:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case json.Number:
		return append(dst, x...)
	case string:
		return canon.AppendString(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, e)
		}
		return append(dst, ']')
	case obj:
		var kb [16]string
		keys := kb[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = canon.AppendString(dst, k)
			dst = append(dst, ':')
			dst = appendJSON(dst, x[k])
		}
		return append(dst, '}')
	}
	panic("appendJSON: unexpected type")
}

// get is Rego's x.k: undefined (nil here, distinct from JSON null) unless x is an object
// holding k.
func get(x any, k string) any {
	if m, ok := x.(obj); ok {
		if v, ok := m[k]; ok {
			if v == nil {
				return null{}
			}
			return v
		}
	}
	return nil
}

// null is JSON null once read (nil means undefined).
type null struct{}

func defined(x any) bool { return x != nil }

func isString(x any) bool { _, ok := x.(string); return ok }

func isNumber(x any) bool { _, ok := x.(json.Number); return ok }

// rank orders JSON types as OPA does: null, boolean, number, string, array, object.
func rank(x any) int {
	switch x.(type) {
	case null:
		return 0
	case bool:
		return 1
	case json.Number:
		return 2
	case string:
		return 3
	case []any:
		return 4
	case obj:
		return 5
	}
	panic("rank of undefined")
}

func numCmp(a, b json.Number) int {
	x, err1 := strconv.ParseInt(string(a), 10, 64)
	y, err2 := strconv.ParseInt(string(b), 10, 64)
	if err1 != nil || err2 != nil {
		panic("non-integer number")
	}
	return cmp.Compare(x, y)
}

// compare is OPA's total order of values.
func compare(a, b any) int {
	if ra, rb := rank(a), rank(b); ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch x := a.(type) {
	case null:
		return 0
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case json.Number:
		return numCmp(x, b.(json.Number))
	case string:
		return strings.Compare(x, b.(string))
	case []any:
		return slices.CompareFunc(x, b.([]any), compare)
	case obj:
		y := b.(obj)
		kx, ky := sortedKeys(x), sortedKeys(y)
		for i := 0; i < len(kx) && i < len(ky); i++ {
			if c := strings.Compare(kx[i], ky[i]); c != 0 {
				return c
			}
			if c := compare(x[kx[i]], y[ky[i]]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(kx), len(ky))
	}
	panic("compare")
}

func sortedKeys(m obj) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func norm(x any) any {
	if x == nil {
		return null{}
	}
	return x
}

// eq is Rego's ==: undefined operands make it false.
func eq(a, b any) bool {
	if !defined(a) || !defined(b) {
		return false
	}
	return compare(norm(a), norm(b)) == 0
}

// set is scopes.set: the members of an array or the values of an object, sorted and
// without duplicates (a Rego set); empty for anything else.
func set(xs any) []any {
	if a, ok := xs.([]any); ok && allStrings(a) {
		out := slices.Clone(a)
		slices.SortFunc(out, func(x, y any) int { return strings.Compare(x.(string), y.(string)) })
		return slices.CompactFunc(out, func(x, y any) bool { return x.(string) == y.(string) })
	}
	var out []any
	switch v := xs.(type) {
	case []any:
		for _, e := range v {
			out = append(out, norm(e))
		}
	case obj:
		for _, e := range v {
			out = append(out, norm(e))
		}
	}
	slices.SortFunc(out, compare)
	return slices.CompactFunc(out, func(a, b any) bool { return compare(a, b) == 0 })
}

func allStrings(xs []any) bool {
	for _, x := range xs {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

func member(xs []any, x any) bool {
	_, found := slices.BinarySearchFunc(xs, x, compare)
	return found
}

func minus(a, b []any) []any {
	out := []any{}
	for _, x := range a {
		if !member(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func union(a, b []any) []any {
	out := append(append([]any{}, a...), b...)
	slices.SortFunc(out, compare)
	return slices.CompactFunc(out, func(a, b any) bool { return compare(a, b) == 0 })
}

// covers is scopes.covers: every requested member is a member (or an object's value) of held.
func covers(held, requested any) bool {
	in := func(x any) bool {
		switch h := held.(type) {
		case []any:
			for _, e := range h {
				if eq(e, x) {
					return true
				}
			}
		case obj:
			for _, e := range h {
				if eq(e, x) {
					return true
				}
			}
		}
		return false
	}
	switch r := requested.(type) {
	case []any:
		for _, x := range r {
			if !in(x) {
				return false
			}
		}
	case obj:
		for _, x := range r {
			if !in(x) {
				return false
			}
		}
	}
	return true
}

// concat is Rego's concat: undefined unless every member is a string.
func concat(sep string, xs []any) (string, bool) {
	parts := make([]string, len(xs))
	for i, x := range xs {
		s, ok := x.(string)
		if !ok {
			return "", false
		}
		parts[i] = s
	}
	return strings.Join(parts, sep), true
}

var shellSpecial = []string{
	" ", "'", "\"", `\`, "$", "`", "!", "&", "|", ";", "<", ">", "(", ")",
	"*", "?", "[", "]", "{", "}", "~", "#", "\t", "\n",
}

func quote(s string) string {
	special := false
	for _, ch := range shellSpecial {
		if strings.Contains(s, ch) {
			special = true
			break
		}
	}
	if s != "" && !special {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// scopeFlag is scopes.flag. When the list holds a non-string, concat is undefined and
// the function falls through to its else: no flag.
func scopeFlag(list []any) string {
	if len(list) == 0 {
		return ""
	}
	s, ok := concat(",", list)
	if !ok {
		return ""
	}
	return " --scopes " + quote(s)
}

func connectCmd(c string, list []any) string { return "grantwire connect " + c + scopeFlag(list) }

// rerr is errors.error: fields, then code, message (with the fix appended) and fix.
func rerr(code, message, fix string, fields obj) obj {
	out := obj{}
	for k, v := range fields {
		out[k] = v
	}
	if fix != "" {
		message += "; fix: " + fix
	}
	out["code"], out["message"], out["fix"] = code, message, fix
	return out
}

func fail(err obj, effects []any) obj {
	return obj{"status": "done", "error": err, "effects": effects}
}

func usage(msg string) obj { return fail(rerr("USAGE", "usage: "+msg, "", obj{}), []any{}) }

func need(needs ...any) obj { return obj{"status": "need", "needs": needs} }

func asAny(xs []any) []any {
	if xs == nil {
		return []any{}
	}
	return xs
}

// decide is data.grantwire.decide for get_access_token queries.
func (gg *goGate) decide(in any) (obj, bool) {
	op, _ := get(in, "op").(string)
	if op != "get_access_token" {
		return nil, false
	}
	args, ok := get(in, "args").(obj)
	if !ok {
		return usage("the query needs an object of args"), true
	}
	round, ok := get(in, "round").(json.Number)
	if problem := argProblem(args); problem != "" && (!ok || numCmp(round, "0") == 0) {
		return usage(problem), true
	}
	if n, ok := get(in, "attempt").(json.Number); ok && numCmp(n, "16") > 0 {
		return fail(rerr("BUSY", "gave up after "+string(n)+" attempts: other writers kept changing the same entries; retry shortly", "",
			obj{"retry_after_ms": json.Number("500"), "attempts": n}), []any{}), true
	}
	f := get(in, "facts")
	if f == nil {
		f = obj{}
	}
	if d, ok := gg.gate(args, f); ok {
		return d, true
	}
	// No gate decision (malformed facts): decide answers INTERNAL for a known operation.
	return fail(rerr("INTERNAL", "internal: no decision for get_access_token (malformed facts?)", "", obj{}), []any{}), true
}

// argProblem is decide's _arg_problem: the argument rules every operation shares.
func argProblem(args obj) string {
	if !clean(args) {
		return "arguments must not contain double quotes, backslashes or control characters"
	}
	word := func(s string, limit int) bool {
		n := utf8.RuneCountInString(s)
		return n > 0 && n <= limit && !strings.Contains(s, " ")
	}
	if a, ok := args["agent"].(string); ok && !word(a, 256) {
		return "an agent id is 1 to 256 characters without spaces"
	}
	if list, ok := args["grant_agents"].([]any); ok {
		for _, x := range list {
			if a, ok := x.(string); ok && !word(a, 256) {
				return "an agent id is 1 to 256 characters without spaces"
			}
		}
	}
	if list, ok := args["scopes"].([]any); ok {
		for _, x := range list {
			if sc, ok := x.(string); ok && (!word(sc, 512) || strings.Contains(sc, ",")) {
				return "a scope is 1 to 512 characters without spaces or commas"
			}
		}
	}
	return ""
}

// clean is scopes.clean: no string anywhere (keys included) holds a backslash, a double
// quote, a C0 control character or DEL.
func clean(x any) bool {
	bad := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c == '\\' || c == '"' || c < 0x20 || c == 0x7f {
				return true
			}
		}
		return false
	}
	switch v := x.(type) {
	case string:
		return !bad(v)
	case obj:
		for k, e := range v {
			if bad(k) || !clean(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !clean(e) {
				return false
			}
		}
	}
	return true
}

type gateCtx struct {
	gg   *goGate
	p, a string
	req  []any
	f    any
}

func (c *gateCtx) fact(k string) any { return get(c.f, k) }

// has is facts.has: the key is present, even with a null value (`_ = f[k]` is defined).
func (c *gateCtx) has(k string) bool {
	m, ok := c.f.(obj)
	if !ok {
		return false
	}
	_, ok = m[k]
	return ok
}

func (gg *goGate) gate(args obj, f any) (obj, bool) {
	p, pok := args["provider"].(string)
	a, aok := args["agent"].(string)
	req, rok := args["scopes"].([]any)
	valid := pok && aok && a != "" && rok
	if valid {
		for _, s := range req {
			if !isString(s) {
				valid = false
			}
		}
	}
	if !valid {
		return usage("get_access_token needs provider (connector id), agent (agent id) and scopes (array of strings)"), true
	}
	entry, known := gg.connectors[p].(obj)
	if !known {
		return fail(rerr("UNKNOWN_CONNECTOR", "unknown connector "+quote(p), "grantwire catalog", obj{"connector": p}), []any{}), true
	}
	if !eq(entry["type"], "oauth_pkce") {
		return fail(rerr("CONFIGURATION", "configuration error: "+p+" is an MCP connector; access tokens exist only for OAuth connectors",
			"grantwire mcp credential "+p+" --agent "+quote(a), obj{"connector": p}), []any{}), true
	}
	c := &gateCtx{gg: gg, p: p, a: a, req: req, f: f}
	if !c.has("grant") || !c.has("token") || !c.has("now") {
		prefetch := []obj{
			{"key": "grant", "kind": "ledger.get", "ledger": "grants", "path": []any{p, a}},
			{"key": "token", "kind": "token.get", "provider": p},
			{"key": "now", "kind": "clock.now"},
		}
		return need(c.missing(prefetch)...), true
	}
	held := any([]any{})
	if eq(get(c.fact("grant"), "found"), true) {
		if v := get(c.fact("grant"), "value"); defined(v) {
			held = v
		}
	}
	if !eq(get(c.fact("grant"), "found"), true) || !covers(held, req) {
		u := union(set(held), set(req))
		miss := minus(set(req), set(held))
		msg, _ := concat(" ", miss)
		phrase := " is not granted " + msg + " on "
		if len(miss) == 0 {
			phrase = " holds no grant for "
		}
		return fail(rerr("AGENT_NOT_GRANTED", "agent "+quote(a)+phrase+p,
			"grantwire grants grant "+p+" "+quote(a)+scopeFlag(u),
			obj{"connector": p, "agent": a, "missing_scopes": asAny(miss), "full_scopes": asAny(u)}), []any{}), true
	}
	if !c.has("conn") || !c.has("client") { // the keyring is read only after the grant layer
		return need(c.missing([]obj{
			{"key": "conn", "kind": "connection.get", "provider": p},
			{"key": "client", "kind": "client.get", "provider": p, "fresh": false},
		})...), true
	}
	conn := c.fact("conn")
	if !eq(get(conn, "found"), true) {
		return c.notConnected(), true
	}
	return c.phaseA(conn)
}

func (c *gateCtx) notConnected() obj {
	fix := connectCmd(c.p, c.req)
	return fail(rerr("NOT_CONNECTED", c.p+" is not connected", fix, obj{"connector": c.p}), []any{})
}

func (c *gateCtx) missing(needs []obj) []any {
	var out []any
	for _, n := range needs {
		if !c.has(n["key"].(string)) {
			out = append(out, n)
		}
	}
	return out
}

// verdict is tripwire.verdict.
func verdict(conn, client any) string {
	if !eq(get(conn, "valid"), true) {
		return "corrupt" // fails closed: anything but valid: true
	}
	if !eq(get(client, "found"), true) {
		return "no_client"
	}
	h, ok := get(client, "client_id_hash").(string)
	if !ok || !eq(get(conn, "client_id_hash"), h) {
		return "client" // a missing or malformed hash on either side differs too
	}
	st, ok1 := get(conn, "tenant").(string)
	ct, ok2 := get(client, "tenant").(string)
	if ok1 && ok2 && st != ct {
		return "tenant"
	}
	return "ok"
}

func scopesOf(conn any) any {
	if s, ok := get(conn, "scopes").([]any); ok {
		return s
	}
	return []any{}
}

func (c *gateCtx) noClient() obj {
	return fail(rerr("CONFIGURATION", "configuration error: no OAuth client is configured for "+c.p,
		"grantwire configure "+c.p+" --client-id <id>", obj{"connector": c.p}), []any{})
}

func (c *gateCtx) missingScopes(held any) obj {
	u := union(set(held), set(c.req))
	miss := minus(set(c.req), set(held))
	msg, _ := concat(" ", miss)
	return fail(rerr("CONNECTION_MISSING_SCOPES", "the "+c.p+" connection lacks "+msg, connectCmd(c.p, u),
		obj{"connector": c.p, "agent": c.a, "missing_scopes": asAny(miss), "full_scopes": asAny(u)}), []any{})
}

func tokenValid(t, conn, now any) bool {
	if !eq(get(t, "found"), true) {
		return false
	}
	exp, ok1 := get(t, "expires_at").(json.Number)
	n, ok2 := now.(json.Number)
	if !ok1 || !ok2 {
		return false
	}
	x, _ := strconv.ParseInt(string(exp), 10, 64)
	y, _ := strconv.ParseInt(string(n), 10, 64)
	if x-y <= 60000 {
		return false
	}
	return eq(get(t, "client_id_hash"), get(conn, "client_id_hash")) && eq(get(t, "connected_at"), get(conn, "connected_at"))
}

func (c *gateCtx) cached(k string, conn any) (obj, bool) {
	exp := get(c.fact(k), "expires_at")
	if !defined(exp) {
		return nil, false
	}
	return obj{"status": "done", "effects": []any{}, "result": obj{
		"provider": c.p, "access_token": obj{"$ref": k + "#access_token"},
		"expires_at": exp, "scopes": asAny(set(scopesOf(conn))),
	}}, true
}

func (c *gateCtx) phaseA(conn any) (obj, bool) {
	client := c.fact("client")
	if c.has("client@fresh") {
		client = c.fact("client@fresh")
	}
	v := verdict(conn, client)
	if (v == "client" || v == "tenant" || v == "no_client") && !c.has("client@fresh") {
		return need(obj{"key": "client@fresh", "kind": "client.get", "provider": c.p, "fresh": true}), true
	}
	if v == "no_client" {
		return c.noClient(), true
	}
	if v == "ok" && !covers(scopesOf(conn), c.req) {
		return c.missingScopes(scopesOf(conn)), true
	}
	if v == "ok" && tokenValid(c.fact("token"), conn, c.fact("now")) {
		if d, ok := c.cached("token", conn); ok {
			return d, true
		}
	}
	if v == "corrupt" || v == "client" || v == "tenant" {
		return c.phaseB(500)
	}
	return c.phaseB(15000)
}

func (c *gateCtx) busy() obj {
	return fail(rerr("BUSY", "another grantwire operation holds the "+c.p+" lock; nothing was changed, retry shortly", "",
		obj{"connector": c.p, "retry_after_ms": json.Number("500")}), []any{})
}

func (c *gateCtx) phaseB(wait int) (obj, bool) {
	if c.has("lock") && !eq(c.fact("lock"), "held") { // facts.not_held
		return c.busy(), true
	}
	after := func(n obj) obj { n["after"] = "lock"; return n }
	locked := []obj{
		{"key": "lock", "kind": "lock.acquire", "name": c.p, "wait_ms": json.Number(strconv.Itoa(wait))},
		after(obj{"key": "conn@lock", "kind": "connection.get", "provider": c.p}),
		after(obj{"key": "client@lock", "kind": "client.get", "provider": c.p, "fresh": true}),
		after(obj{"key": "token@lock", "kind": "token.get", "provider": c.p}),
		after(obj{"key": "now@lock", "kind": "clock.now"}),
	}
	if m := c.missing(locked); len(m) > 0 {
		return need(m...), true
	}
	if !eq(c.fact("lock"), "held") {
		return c.busy(), true
	}
	lconn := c.fact("conn@lock")
	if !eq(get(lconn, "found"), true) {
		return c.notConnected(), true
	}
	return c.locked(lconn, verdict(lconn, c.fact("client@lock")))
}

func (c *gateCtx) clear(lconn any, reason string) ([]any, bool) {
	version := get(lconn, "version")
	if !defined(version) {
		return nil, false
	}
	return []any{
		obj{"kind": "connection.delete", "provider": c.p, "expect": obj{"version": version}},
		obj{"kind": "token.delete", "provider": c.p},
		obj{"kind": "event.emit", "type": "connector.connection.cleared", "payload": obj{"connector_id": c.p, "reason": reason}},
	}, true
}

func (c *gateCtx) reauth(cause string, list []any) obj {
	return rerr("REAUTH_REQUIRED", "the "+c.p+" connection must be authorized again ("+cause+")", connectCmd(c.p, list),
		obj{"connector": c.p, "cause": cause})
}

func (c *gateCtx) locked(lconn any, v string) (obj, bool) {
	reconnect := union(set(scopesOf(lconn)), set(c.req))
	if v == "corrupt" {
		if eff, ok := c.clear(lconn, "corrupt"); ok {
			return fail(c.reauth("the stored connection was not valid JSON and has been cleared", c.req), eff), true
		}
	}
	if v == "no_client" {
		return c.noClient(), true
	}
	if v == "client" {
		if eff, ok := c.clear(lconn, "client_rotated"); ok {
			return fail(c.reauth("the OAuth client was rotated; the stale connection has been cleared", reconnect), eff), true
		}
	}
	if v == "tenant" {
		stored, _ := get(lconn, "tenant").(string)
		configured, _ := get(c.fact("client@lock"), "tenant").(string)
		if eff, ok := c.clear(lconn, "tenant_mismatch"); ok {
			return fail(rerr("TENANT_MISMATCH", "the "+c.p+" connection belongs to tenant "+stored+" but the configured tenant is "+configured+"; the connection was cleared",
				connectCmd(c.p, reconnect), obj{"connector": c.p, "stored_tenant": stored, "configured_tenant": configured}), eff), true
		}
	}
	if !covers(scopesOf(lconn), c.req) {
		return c.missingScopes(scopesOf(lconn)), true
	}
	if tokenValid(c.fact("token@lock"), lconn, c.fact("now@lock")) {
		if d, ok := c.cached("token@lock", lconn); ok {
			return d, true
		}
	}
	if !c.has("refresh") {
		if r := get(lconn, "refresh"); defined(r) {
			return need(obj{"key": "refresh", "kind": "oauth.refresh", "provider": c.p, "refresh": r}), true
		}
	}
	return c.refreshed(lconn, reconnect)
}

func (c *gateCtx) refreshed(lconn any, reconnect []any) (obj, bool) {
	r := c.fact("refresh")
	if !defined(r) {
		return nil, false // _refreshed(_f.refresh) with an undefined argument
	}
	status, code := get(r, "status"), get(r, "error")
	if eq(status, json.Number("200")) {
		if d, ok := c.refreshDone(r, lconn); ok {
			return d, true
		}
	}
	if eq(status, json.Number("400")) && eq(code, "invalid_grant") {
		if lr := get(lconn, "refresh"); defined(lr) {
			return fail(rerr("CONNECTION_REVOKED", "the provider revoked the "+c.p+" connection (invalid_grant)", connectCmd(c.p, reconnect), obj{"connector": c.p}), []any{
				obj{"kind": "connection.delete", "provider": c.p, "expect": obj{"refresh": lr}},
				obj{"kind": "token.delete", "provider": c.p},
				obj{"kind": "event.emit", "type": "connector.connection.cleared", "payload": obj{"connector_id": c.p, "reason": "invalid_grant"}},
			}), true
		}
	}
	if eq(status, json.Number("401")) {
		return fail(c.reauth("the token endpoint answered 401; nothing was deleted", reconnect), []any{}), true
	}
	if n, ok := status.(json.Number); ok {
		if s, ok := code.(string); ok {
			return c.providerError(n, s), true
		}
	}
	return c.providerError("0", "malformed response"), true
}

// refreshDone is the done decision of a 200 from the token endpoint; it is undefined when
// a value it carries is.
func (c *gateCtx) refreshDone(r, lconn any) (obj, bool) {
	now, ok := c.fact("now@lock").(json.Number)
	hash, connectedAt := get(lconn, "client_id_hash"), get(lconn, "connected_at")
	if !ok || !defined(hash) || !defined(connectedAt) {
		return nil, false
	}
	in := int64(3600)
	if e, ok := get(r, "expires_in").(json.Number); ok && numCmp(e, "0") > 0 {
		in, _ = strconv.ParseInt(string(e), 10, 64)
	}
	n, _ := strconv.ParseInt(string(now), 10, 64)
	at := json.Number(strconv.FormatInt(n+in*1000, 10))
	effects := []any{}
	if lr := get(lconn, "refresh"); eq(get(r, "rotated"), true) && defined(lr) {
		effects = append(effects, obj{"kind": "connection.set_refresh", "provider": c.p,
			"refresh": obj{"$ref": "refresh#refresh_token"}, "expect": obj{"refresh": lr}})
	}
	effects = append(effects, obj{"kind": "token.put", "provider": c.p, "access": obj{"$ref": "refresh#access_token"},
		"expires_at": at, "client_id_hash": hash, "connected_at": connectedAt})
	return obj{"status": "done", "effects": effects, "result": obj{
		"provider": c.p, "access_token": obj{"$ref": "refresh#access_token"}, "expires_at": at,
		"scopes": asAny(set(scopesOf(lconn))),
	}}, true
}

func (c *gateCtx) providerError(status json.Number, code string) obj {
	return fail(rerr("PROVIDER_ERROR", "the "+c.p+" token endpoint failed (status "+string(status)+" "+code+")", "",
		obj{"connector": c.p, "http_status": status, "oauth_error": code}), []any{})
}

// TestGoGate proves the hand-written gate byte-identical to the Wasm engine (itself
// proven identical to the rego engine by TestNoDiff) on generated gate episodes.
func TestGoGate(t *testing.T) {
	ctx := context.Background()
	s := seed(t)
	n := perOp()
	for ci, p := range enginePairs(t) {
		gg := newGoGate(p.cat.Data)
		g := nodiff.NewGen(p.cat, s, uint64(5000+ci))
		compared := 0
		for compared < n/len(enginePairs(t)) {
			ep := g.Episode("get_access_token")
			for {
				q := ep.Query()
				want, err := p.wasm.DecideJSON(ctx, nil, q)
				if err == nil {
					if got, ok := gg.DecideJSON(nil, q); ok {
						compared++
						if !bytes.Equal(got, want) {
							t.Fatalf("the Go gate disagrees with the engines (catalog %s)\n query %s\n go   %s\n wasm %s", p.cat.Name, q, got, want)
						}
					}
				}
				var d *core.Decision
				if err == nil {
					d, _ = core.ParseDecision(want)
				}
				if !ep.Answer(d) {
					break
				}
			}
		}
	}
}
