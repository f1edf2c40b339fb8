package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/grantwire/grantwire/internal/layout"
)

// --- staging --------------------------------------------------------------------------

func (r *runner) stage() error {
	ws := r.s.world
	if len(ws.MCPEnv) > 0 {
		if err := r.stageMCP(ws); err != nil {
			return err
		}
	}
	if err := r.writeLedgers(ws.Ledgers, ws.RawLedgers); err != nil {
		return err
	}
	if ts := ws.TokenServer; ts != nil {
		rotate := ts.Rotate == nil || *ts.Rotate
		exp := ts.ExpiresIn
		if exp == 0 {
			exp = 3600
		}
		r.w.TokenServer().Configure(rotate, exp)
		for _, p := range slices.Sorted(maps.Keys(ts.ClientAuth)) {
			e, _ := r.cat.Entry(p)
			r.w.TokenServer().RequireClientAuth(p, ts.ClientAuth[p], e.ClientSecretRequired)
		}
		for _, p := range slices.Sorted(maps.Keys(ts.Revoke)) {
			for _, x := range ts.Revoke[p] {
				r.w.TokenServer().ScriptRevoke(p, x)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(ts.Issued)) {
			for _, rt := range ts.Issued[p] {
				r.secret(rt)
				r.w.TokenServer().Issue(p, rt)
			}
		}
	}
	if err := r.act(&Action{
		SetConnections: ws.Connections, SetClients: ws.Clients, Hold: ws.Locks, SetAgents: ws.Agents,
	}); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(ws.Env)) {
		r.w.Setenv(k, ws.Env[k])
	}
	if ts := ws.TokenServer; ts != nil {
		if err := r.act(&Action{ScriptRefresh: ts.Refresh, ScriptAuthorize: ts.Authorize}); err != nil {
			return err
		}
	}
	if len(ws.CachedClients) > 0 {
		if _, err := r.process("A"); err != nil {
			return err
		}
		h := r.hosts["A"]
		for _, p := range slices.Sorted(maps.Keys(ws.CachedClients)) {
			h.Remember(layout.ClientUser(p), encodeClient(ws.CachedClients[p]), true)
		}
	}
	return r.act(&Action{KeyringFailures: ws.KeyringFailures})
}

// renderLedger renders a ledger as grantwire writes it: sorted keys, 2-space indent, a
// final newline.
func renderLedger(doc json.RawMessage) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return doc
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

// writeLedger writes a ledger (by the corpus's short name) byte for byte, as another
// process would.
func (r *runner) writeLedger(name string, doc []byte) error {
	file, ok := layout.Ledgers[name]
	if !ok {
		return fmt.Errorf("unknown ledger %q", name)
	}
	return r.caps.Files.Update(r.ctx, file, func([]byte, string) ([]byte, error) { return doc, nil })
}

// writeLedgers writes ledgers by name in sorted order: the documents rendered as grantwire
// writes them, then the raw ones byte for byte.
func (r *runner) writeLedgers(docs map[string]json.RawMessage, raw map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		if err := r.writeLedger(name, renderLedger(docs[name])); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		if err := r.writeLedger(name, []byte(raw[name])); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) stageMCP(ws WorldSpec) error {
	servers := map[string]any{}
	for _, c := range slices.Sorted(maps.Keys(ws.MCPEnv)) {
		env := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(ws.MCPEnv[c])) {
			user := layout.MCPUser(c, k)
			if err := r.setKeyring(user, ws.MCPEnv[c][k]); err != nil {
				return err
			}
			r.secret(ws.MCPEnv[c][k])
			env[k] = map[string]any{"$keyring": r.service + ":" + user}
		}
		e, _ := r.cat.Entry(c)
		args := e.Args
		if args == nil {
			args = []string{}
		}
		servers[c] = map[string]any{"command": e.Command, "args": args, "env": env}
	}
	doc, _ := json.Marshal(map[string]any{"mcpServers": servers})
	return r.writeLedger("mcp_servers", renderLedger(doc))
}

func (r *runner) setKeyring(user, value string) error {
	r.users[user] = true
	return r.caps.Keyring.Set(r.ctx, r.service, user, value)
}

func (r *runner) deleteKeyring(user string) error {
	r.users[user] = true
	return r.caps.Keyring.Delete(r.ctx, r.service, user)
}

func (r *runner) secret(v string) {
	if len(v) >= 6 {
		r.secrets[v] = true
	}
}

func (r *runner) encodeConnection(p string, c *ConnectionSpec) string {
	if c.Blob != nil {
		return *c.Blob
	}
	b := layout.Connection{AccountEmail: c.Account, ClientIDHash: c.ClientIDHash, RefreshToken: c.RefreshToken,
		Scopes: c.Scopes, Tenant: c.Tenant, AccountType: c.AccountType}
	if b.AccountEmail == "" {
		b.AccountEmail = "user@example.com"
	}
	if b.ClientIDHash == "" {
		b.ClientIDHash = layout.ClientIDHash(c.ClientID)
	}
	if b.RefreshToken == "" {
		b.RefreshToken = "rt-" + p + "-staged"
	}
	at := c.ConnectedAtMS
	if at == 0 {
		at = r.caps.Clock.Now().UnixMilli() - 86_400_000
	}
	b.ConnectedAt = layout.Seconds(at)
	return b.Encode()
}

func encodeClient(c *ClientSpec) string {
	if c.Blob != nil {
		return *c.Blob
	}
	return layout.Client{ClientID: c.ClientID, ClientSecret: c.ClientSecret, Tenant: c.Tenant}.Encode()
}

// agentsFile renders the world's agents as agents.json.
func (r *runner) agentsFile() []byte {
	list := []any{}
	for _, id := range slices.Sorted(maps.Keys(r.agents)) {
		s := r.agents[id]
		a := map[string]any{"id": id}
		if s.Name != "" {
			a["name"] = s.Name
		}
		if s.ConsumesMCPServers {
			a["consumes_mcp_servers"] = true
		}
		var reqs []any
		for _, c := range slices.Sorted(maps.Keys(s.RequiredConnectors)) {
			reqs = append(reqs, map[string]any{"connector": c, "scopes": s.RequiredConnectors[c]})
		}
		if reqs != nil {
			a["required_connectors"] = reqs
		}
		list = append(list, a)
	}
	doc, _ := json.Marshal(map[string]any{"version": 1, "agents": list})
	return renderLedger(doc)
}

// act applies a world action (staging uses it too).
func (r *runner) act(a *Action) error {
	if a.AdvanceMS != 0 {
		r.w.Advance(time.Duration(a.AdvanceMS) * time.Millisecond)
	}
	for _, p := range slices.Sorted(maps.Keys(a.SetConnections)) {
		c := a.SetConnections[p]
		if c == nil {
			if err := r.deleteKeyring(layout.ConnectionUser(p)); err != nil {
				return err
			}
			continue
		}
		blob := r.encodeConnection(p, c)
		if err := r.setKeyring(layout.ConnectionUser(p), blob); err != nil {
			return err
		}
		if b, err := layout.ParseConnection(blob); err == nil && b.RefreshToken != "" {
			r.secret(b.RefreshToken)
			if c.Live == nil || *c.Live {
				r.w.TokenServer().Issue(p, b.RefreshToken)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(a.SetClients)) {
		c := a.SetClients[p]
		if c == nil {
			if err := r.deleteKeyring(layout.ClientUser(p)); err != nil {
				return err
			}
			continue
		}
		r.secret(c.ClientSecret)
		if err := r.setKeyring(layout.ClientUser(p), encodeClient(c)); err != nil {
			return err
		}
	}
	if err := r.writeLedgers(a.SetLedgers, a.SetRawLedgers); err != nil {
		return err
	}
	for _, lock := range slices.Sorted(maps.Keys(a.Hold)) {
		if err := r.w.Hold(lock, a.Hold[lock]); err != nil {
			return err
		}
	}
	for _, lock := range a.Release {
		if err := r.w.Release(lock); err != nil {
			return err
		}
	}
	if len(a.SetAgents) > 0 {
		for id, s := range a.SetAgents {
			r.agents[id] = s
		}
		if err := r.writeLedger("agents", r.agentsFile()); err != nil {
			return err
		}
	}
	ts := r.w.TokenServer()
	for _, p := range slices.Sorted(maps.Keys(a.ScriptRefresh)) {
		for _, x := range a.ScriptRefresh[p] {
			r.secret(x.AccessToken)
			r.secret(x.RefreshToken)
			var during func()
			if x.During != nil {
				a := x.During
				during = func() {
					if err := r.act(a); err != nil {
						r.failf("during a refresh: %v", err)
					}
				}
			}
			ts.ScriptRefresh(p, x, during)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(a.ScriptAuthorize)) {
		for _, x := range a.ScriptAuthorize[p] {
			r.secret(x.AccessToken)
			r.secret(x.RefreshToken)
			ts.ScriptAuthorize(p, x)
		}
	}
	for _, f := range a.KeyringFailures {
		n := f.Count
		if n == 0 {
			n = 1
		}
		r.users[f.User] = true
		if err := r.w.FailKeyring(f.Op, f.User, n, f.Insecure); err != nil {
			return err
		}
	}
	return nil
}
