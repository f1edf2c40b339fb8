package conformance

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
)

//go:embed corpus
var corpusFS embed.FS

// BaseCatalog is the catalog every scenario starts from (corpus/catalog.json): fixed, so
// the product catalog can grow without changing what the corpus means.
//
//go:embed corpus/catalog.json
var BaseCatalog []byte

// CorpusFS is the embedded corpus (the .yaml files of conformance/corpus).
func CorpusFS() fs.FS {
	sub, err := fs.Sub(corpusFS, "corpus")
	if err != nil {
		panic(err)
	}
	return sub
}

// DefaultCorpus loads the embedded corpus.
func DefaultCorpus() (*Corpus, error) { return Load(CorpusFS()) }

// Run runs the embedded corpus against a shell: one subtest per scenario, named by its id.
// It fails on an empty corpus, and logs the number of scenarios of each family. A scenario
// listed in exceptions.yaml for this shell must fail (with the reason logged), so a known
// difference that disappears is noticed.
func Run(t *testing.T, shell Shell) {
	t.Helper()
	c, err := DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	RunCorpus(t, shell, c)
}

// RunCorpus runs a loaded corpus against a shell (see [Run]).
func RunCorpus(t *testing.T, shell Shell, c *Corpus) {
	t.Helper()
	all := c.Scenarios()
	if len(all) == 0 {
		t.Fatal("conformance: the corpus is empty (an embed path mistake?)")
	}
	counts := map[string]int{}
	for _, s := range all {
		counts[s.Family]++
	}
	var parts []string
	for _, f := range c.Files {
		parts = append(parts, fmt.Sprintf("%s %d", f.Family, counts[f.Family]))
	}
	t.Logf("conformance on %s: %d scenarios (%s)", shell.Name(), len(all), strings.Join(parts, ", "))
	for _, s := range all {
		t.Run(s.ID(), func(t *testing.T) {
			rep, err := RunScenario(context.Background(), t, shell, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if reason, known := c.Exceptions[s.ID()][shell.Name()]; known {
				if len(rep.Failures) == 0 {
					t.Errorf("known difference on %s no longer differs; remove it from exceptions.yaml (%s)", shell.Name(), reason)
					return
				}
				t.Logf("known difference on %s: %s\n%s", shell.Name(), reason, strings.Join(rep.Failures, "\n"))
				return
			}
			for _, f := range rep.Failures {
				t.Error(f)
			}
		})
	}
}

// Hooks observe a scenario run.
type Hooks struct {
	// Step is called before each step (an operation or a world action).
	Step func(i int, st Step)
	// Trace receives every host call of every process, as hostabi.Host.Trace prints it.
	Trace func(process, line string)
}

// Report is what a scenario run found.
type Report struct {
	// Failures lists every expectation that did not hold.
	Failures []string
	// Steps holds each operation's outcome (nil for world actions).
	Steps []*hostabi.Outcome
}

type runner struct {
	ctx     context.Context
	s       *Scenario
	w       World
	caps    hostabi.Capabilities
	engine  core.Engine
	cat     *catalog.Catalog
	service string
	hooks   *Hooks
	procs   map[string]*hostabi.Driver
	secrets map[string]bool
	users   map[string]bool
	texts   []string
	rep     *Report
}

func (r *runner) failf(format string, args ...any) {
	r.rep.Failures = append(r.rep.Failures, fmt.Sprintf(format, args...))
}

// RunScenario runs one scenario and reports what did not hold. err is for a world the
// shell could not build or stage.
func RunScenario(ctx context.Context, t testing.TB, shell Shell, s *Scenario, hooks *Hooks) (*Report, error) {
	if hooks == nil {
		hooks = &Hooks{}
	}
	raw, err := MergePatch(BaseCatalog, s.world.Catalog)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	cat, err := catalog.Load(raw)
	if err != nil {
		return nil, err
	}
	engine, err := shell.Engine(ctx, cat.Data())
	if err != nil {
		return nil, err
	}
	clock := s.world.Clock
	if clock == 0 {
		clock = DefaultClock
	}
	w, err := shell.NewWorld(ctx, t, Setup{Start: time.UnixMilli(clock), Catalog: cat, Engine: engine})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	r := &runner{
		ctx: ctx, s: s, w: w, caps: w.Capabilities(), engine: engine, cat: cat, hooks: hooks,
		procs: map[string]*hostabi.Driver{}, secrets: map[string]bool{}, users: map[string]bool{},
		rep: &Report{},
	}
	r.service = r.caps.Service
	if r.service == "" {
		r.service = hostabi.DefaultService
	}
	if err := r.stage(); err != nil {
		return nil, fmt.Errorf("staging: %w", err)
	}
	for i, st := range s.Steps {
		if hooks.Step != nil {
			hooks.Step(i, st)
		}
		if st.World != nil {
			if err := r.act(st.World); err != nil {
				return nil, fmt.Errorf("step %d: world action: %w", i, err)
			}
			r.rep.Steps = append(r.rep.Steps, nil)
			continue
		}
		r.step(i, st)
	}
	r.final()
	return r.rep, nil
}

// --- staging --------------------------------------------------------------------------

func (r *runner) stage() error {
	ws := r.s.world
	if len(ws.MCPEnv) > 0 {
		if err := r.stageMCP(ws); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(ws.Ledgers) {
		if err := r.writeLedger(name, renderLedger(ws.Ledgers[name])); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(ws.RawLedgers) {
		if err := r.writeLedger(name, []byte(ws.RawLedgers[name])); err != nil {
			return err
		}
	}
	if ts := ws.TokenServer; ts != nil {
		rotate := ts.Rotate == nil || *ts.Rotate
		exp := ts.ExpiresIn
		if exp == 0 {
			exp = 3600
		}
		r.w.TokenServer().Configure(rotate, exp)
		for _, p := range sortedKeys(ts.Issued) {
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
	for _, k := range sortedKeys(ws.Env) {
		r.w.Setenv(k, ws.Env[k])
	}
	if ts := ws.TokenServer; ts != nil {
		if err := r.act(&Action{ScriptRefresh: ts.Refresh, ScriptAuthorize: ts.Authorize}); err != nil {
			return err
		}
	}
	if len(ws.CachedClients) > 0 {
		d, err := r.process("A")
		if err != nil {
			return err
		}
		h := d.Host
		for _, p := range sortedKeys(ws.CachedClients) {
			c := ws.CachedClients[p]
			h.SetCachedClient(p, map[string]any{
				"found": true, "client_id_hash": hostabi.ClientIDHash(c.ClientID), "tenant": strOrNil(c.Tenant),
				"has_secret": c.ClientSecret != "", "source": "keyring", "version": hostabi.Version(encodeClient(c)),
			})
		}
	}
	return r.act(&Action{KeyringFailures: ws.KeyringFailures})
}

// renderLedger renders a ledger as grantwire writes it: sorted keys, 2-space indent.
func renderLedger(doc json.RawMessage) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return doc
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return b
}

func (r *runner) writeLedger(name string, doc []byte) error {
	_, version, err := r.caps.Ledgers.Read(r.ctx, name)
	if err != nil && !isCorrupt(err) {
		return err
	}
	return r.caps.Ledgers.Write(r.ctx, name, doc, version)
}

func isCorrupt(err error) bool {
	var ce *core.Error
	return errors.As(err, &ce) && ce.Code == "CORRUPT_LEDGER"
}

func (r *runner) stageMCP(ws WorldSpec) error {
	servers := map[string]any{}
	for _, c := range sortedKeys(ws.MCPEnv) {
		env := map[string]any{}
		for _, k := range sortedKeys(ws.MCPEnv[c]) {
			user := hostabi.MCPUser(c, k)
			if err := r.setKeyring(user, ws.MCPEnv[c][k]); err != nil {
				return err
			}
			r.secret(ws.MCPEnv[c][k])
			env[k] = map[string]any{"$keyring": r.service + ":" + user}
		}
		spec, _ := r.cat.Connector(c)
		args := spec.Args
		if args == nil {
			args = []string{}
		}
		servers[c] = map[string]any{"command": spec.Command, "args": args, "env": env}
	}
	doc, _ := json.Marshal(map[string]any{"mcpServers": servers})
	return r.writeLedger(hostabi.LedgerMCPServers, append(renderLedger(doc), '\n'))
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

// connectionBlob is the keyring layout of a connection (hostabi's, shared with GAIA).
type connectionBlob struct {
	AccountEmail string   `json:"account_email"`
	ClientIDHash string   `json:"client_id_hash"`
	ConnectedAt  float64  `json:"connected_at"`
	RefreshToken string   `json:"refresh_token"`
	Scopes       []string `json:"scopes"`
	Tenant       *string  `json:"tenant,omitempty"`
	AccountType  *string  `json:"account_type,omitempty"`
}

func (r *runner) encodeConnection(p string, c *ConnectionSpec) string {
	if c.Blob != nil {
		return *c.Blob
	}
	b := connectionBlob{AccountEmail: c.Account, ClientIDHash: c.ClientIDHash, RefreshToken: c.RefreshToken,
		Scopes: c.Scopes, Tenant: c.Tenant, AccountType: c.AccountType}
	if b.AccountEmail == "" {
		b.AccountEmail = "user@example.com"
	}
	if b.ClientIDHash == "" {
		b.ClientIDHash = hostabi.ClientIDHash(c.ClientID)
	}
	if b.RefreshToken == "" {
		b.RefreshToken = "rt-" + p + "-staged"
	}
	if b.Scopes == nil {
		b.Scopes = []string{}
	}
	at := c.ConnectedAtMS
	if at == 0 {
		at = r.caps.Clock.Now().UnixMilli() - 86_400_000
	}
	b.ConnectedAt = float64(at) / 1000
	out, _ := json.Marshal(b)
	return string(out)
}

func encodeClient(c *ClientSpec) string {
	if c.Blob != nil {
		return *c.Blob
	}
	out, _ := json.Marshal(struct {
		ClientID     string  `json:"client_id"`
		ClientSecret string  `json:"client_secret"`
		Tenant       *string `json:"tenant,omitempty"`
	}{c.ClientID, c.ClientSecret, c.Tenant})
	return string(out)
}

// act applies a world action (staging uses it too).
func (r *runner) act(a *Action) error {
	if a.AdvanceMS != 0 {
		r.w.Advance(time.Duration(a.AdvanceMS) * time.Millisecond)
	}
	for _, p := range sortedKeys(a.SetConnections) {
		c := a.SetConnections[p]
		if c == nil {
			if err := r.deleteKeyring(hostabi.ConnectionUser(p)); err != nil {
				return err
			}
			continue
		}
		blob := r.encodeConnection(p, c)
		if err := r.setKeyring(hostabi.ConnectionUser(p), blob); err != nil {
			return err
		}
		var b connectionBlob
		if json.Unmarshal([]byte(blob), &b) == nil && b.RefreshToken != "" {
			r.secret(b.RefreshToken)
			if c.Live == nil || *c.Live {
				r.w.TokenServer().Issue(p, b.RefreshToken)
			}
		}
	}
	for _, p := range sortedKeys(a.SetClients) {
		c := a.SetClients[p]
		if c == nil {
			if err := r.deleteKeyring(hostabi.ClientUser(p)); err != nil {
				return err
			}
			continue
		}
		r.secret(c.ClientSecret)
		if err := r.setKeyring(hostabi.ClientUser(p), encodeClient(c)); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(a.SetLedgers) {
		if err := r.writeLedger(name, renderLedger(a.SetLedgers[name])); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(a.SetRawLedgers) {
		if err := r.writeLedger(name, []byte(a.SetRawLedgers[name])); err != nil {
			return err
		}
	}
	for _, lock := range sortedKeys(a.Hold) {
		if err := r.w.Hold(lock, a.Hold[lock]); err != nil {
			return err
		}
	}
	for _, lock := range a.Release {
		if err := r.w.Release(lock); err != nil {
			return err
		}
	}
	for _, id := range sortedKeys(a.SetAgents) {
		s := a.SetAgents[id]
		if err := r.w.SetAgent(hostabi.Agent{ID: id, Name: s.Name, RequiredConnectors: s.RequiredConnectors,
			ConsumesMCPServers: s.ConsumesMCPServers}); err != nil {
			return err
		}
	}
	ts := r.w.TokenServer()
	for _, p := range sortedKeys(a.ScriptRefresh) {
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
			ts.ScriptRefresh(p, hostabi.TokenResponse{Status: x.Status, Error: x.Error, AccessToken: x.AccessToken,
				RefreshToken: x.RefreshToken, ExpiresIn: x.ExpiresIn}, during)
		}
	}
	for _, p := range sortedKeys(a.ScriptAuthorize) {
		for _, x := range a.ScriptAuthorize[p] {
			r.secret(x.AccessToken)
			r.secret(x.RefreshToken)
			ts.ScriptAuthorize(p, hostabi.AuthResult{Status: x.Status, Token: hostabi.TokenResponse{
				Status: x.HTTPStatus, Error: x.Error, AccessToken: x.AccessToken, RefreshToken: x.RefreshToken,
				ExpiresIn: x.ExpiresIn, Scopes: x.Scopes, Account: x.Account}})
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

// --- steps ----------------------------------------------------------------------------

func (r *runner) process(name string) (*hostabi.Driver, error) {
	if name == "" {
		name = "A"
	}
	if d, ok := r.procs[name]; ok {
		return d, nil
	}
	caps := r.caps
	if pw, ok := r.w.(Processes); ok {
		var err error
		if caps, err = pw.ProcessCapabilities(name); err != nil {
			return nil, fmt.Errorf("process %s: %w", name, err)
		}
	}
	h := hostabi.NewHost(caps)
	h.Trace = func(line string) {
		r.texts = append(r.texts, line)
		if r.hooks.Trace != nil {
			r.hooks.Trace(name, line)
		}
	}
	d := &hostabi.Driver{Engine: r.engine, Host: h}
	r.procs[name] = d
	return d, nil
}

func (r *runner) step(i int, st Step) {
	for _, v := range st.Secrets {
		r.secret(v)
	}
	if st.Op == "configure_mcp" {
		var a struct {
			Connector string `json:"connector"`
		}
		_ = json.Unmarshal(st.Args, &a)
		for k := range st.Secrets {
			if key, ok := strings.CutPrefix(k, "env."); ok {
				r.users[hostabi.MCPUser(a.Connector, key)] = true
			}
		}
	}
	args := st.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	where := fmt.Sprintf("step %d (%s)", i, st.Op)
	d, err := r.process(st.Process)
	if err != nil {
		r.failf("%s: %v", where, err)
		return
	}
	out, err := d.Run(r.ctx, st.Op, args, st.Secrets)
	r.rep.Steps = append(r.rep.Steps, out)
	x := r.expand(st.Expect)
	if x.HostError != "" {
		switch {
		case err == nil && out.Error != nil:
			b, _ := json.Marshal(out.Error)
			r.failf("%s: expected a host failure %q, got the decision error %s", where, x.HostError, b)
		case err == nil:
			r.failf("%s: expected a host failure %q, got result %s", where, x.HostError, out.Result)
		case !strings.Contains(err.Error(), x.HostError):
			r.failf("%s: host failure %q does not contain %q", where, err, x.HostError)
		}
		if err != nil {
			r.texts = append(r.texts, err.Error())
		}
		return
	}
	if err != nil {
		r.failf("%s: the driver failed: %v", where, err)
		return
	}
	var body []byte
	if out.Error != nil {
		body, _ = json.Marshal(out.Error)
		if x.Error == nil {
			r.failf("%s: unexpected error %s", where, body)
			return
		}
		if x.ErrorExact {
			r.equal(where+": error", x.Error, body)
		} else {
			r.subset(where+": error", x.Error, body)
		}
		info, known := r.engine.Manifest().Errors[out.Error.Code]
		if !known {
			r.failf("%s: error code %s is not in the policy's error table", where, out.Error.Code)
		}
		if x.Status != 0 && info.Status != x.Status {
			r.failf("%s: %s has REST status %d, want %d", where, out.Error.Code, info.Status, x.Status)
		}
		if x.Exit != 0 && info.Exit != x.Exit {
			r.failf("%s: %s has CLI exit %d, want %d", where, out.Error.Code, info.Exit, x.Exit)
		}
	} else {
		body = out.Result
		if x.Error != nil {
			r.failf("%s: expected error %s, got result %s", where, x.Error, body)
			return
		}
		if x.Result != nil {
			r.subset(where+": result", x.Result, body)
		}
		r.resolveAll(out, body)
	}
	r.texts = append(r.texts, string(body))
	for _, s := range x.Contains {
		if !strings.Contains(string(body), s) {
			r.failf("%s: %s does not contain %q", where, body, s)
		}
	}
	for _, s := range x.Excludes {
		if strings.Contains(string(body), s) {
			r.failf("%s: %s contains %q", where, body, s)
		}
	}
	for p, want := range x.Resolved {
		ref, ok := lookup(body, p)
		var rv struct {
			Ref string `json:"$ref"`
		}
		if !ok || json.Unmarshal(ref, &rv) != nil || rv.Ref == "" {
			r.failf("%s: result %s has no secret reference at %s", where, body, p)
			continue
		}
		got, ok := out.Secret(rv.Ref)
		if !ok || got != want {
			r.failf("%s: %s resolves to %q, want %q", where, p, got, want)
		}
	}
	if x.Rounds != nil && out.Rounds != *x.Rounds {
		r.failf("%s: took %d rounds, want %d", where, out.Rounds, *x.Rounds)
	}
}

// expand replaces "{{path:<ledger>}}" in the expectation's strings with the shell's path
// of that ledger (error messages name the file, and each shell puts it elsewhere).
func (r *runner) expand(x *Expect) *Expect {
	b, _ := json.Marshal(x)
	s := string(b)
	for _, name := range ledgerNames {
		p, _ := json.Marshal(r.caps.Ledgers.Path(name))
		s = strings.ReplaceAll(s, "{{path:"+name+"}}", strings.Trim(string(p), `"`))
	}
	var out Expect
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		panic(err)
	}
	return &out
}

// resolveAll resolves every secret reference of a result, so the values are checked for
// leaks like every other secret.
func (r *runner) resolveAll(out *hostabi.Outcome, body []byte) {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && len(x) == 1 {
				if s, ok := out.Secret(ref); ok {
					r.secret(s)
				} else {
					r.failf("result reference %q does not resolve", ref)
				}
				return
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
}

// lookup finds a dotted path in a JSON object.
func lookup(doc []byte, path string) (json.RawMessage, bool) {
	cur := json.RawMessage(doc)
	for _, part := range strings.Split(path, ".") {
		var m map[string]json.RawMessage
		if json.Unmarshal(cur, &m) != nil {
			return nil, false
		}
		next, ok := m[part]
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// --- final world ----------------------------------------------------------------------

var ledgerNames = []string{hostabi.LedgerGrants, hostabi.LedgerActivations, hostabi.LedgerState, hostabi.LedgerMCPServers}

func (r *runner) final() {
	f := r.s.Final
	for _, name := range ledgerNames {
		doc, _, err := r.caps.Ledgers.Read(r.ctx, name)
		if err != nil {
			r.failf("final: read ledger %s: %v", name, err)
			continue
		}
		r.texts = append(r.texts, string(doc))
		if want, ok := f.Ledgers[name]; ok {
			switch {
			case string(want) == "null" && doc != nil:
				r.failf("final: ledger %s exists: %s", name, doc)
			case string(want) != "null" && doc == nil:
				r.failf("final: ledger %s is absent, want %s", name, want)
			case string(want) != "null":
				r.equal("final: ledger "+name, want, doc)
			}
		}
		if want, ok := f.RawLedgers[name]; ok && string(doc) != want {
			r.failf("final: ledger %s is %q, want exactly %q", name, doc, want)
		}
	}
	for _, p := range sortedKeys(f.Connections) {
		r.blob("connection", hostabi.ConnectionUser(p), f.Connections[p])
	}
	for _, p := range sortedKeys(f.Clients) {
		r.blob("client", hostabi.ClientUser(p), f.Clients[p])
	}
	for _, u := range sortedKeys(f.KeyringValues) {
		r.users[u] = true
		got, err := r.caps.Keyring.Get(r.ctx, r.service, u)
		if err != nil || got != f.KeyringValues[u] {
			r.failf("final: keyring %s = %q (%v), want the value staged", u, got, err)
		}
	}
	// Every stored refresh token is a secret too (tokens issued during the steps).
	for _, id := range r.cat.IDs() {
		r.users[hostabi.ConnectionUser(id)] = true
		r.users[hostabi.ClientUser(id)] = true
		if blob, err := r.caps.Keyring.Get(r.ctx, r.service, hostabi.ConnectionUser(id)); err == nil {
			var b connectionBlob
			if json.Unmarshal([]byte(blob), &b) == nil {
				r.secret(b.RefreshToken)
			}
		}
	}
	if f.Keyring != nil {
		for _, u := range f.Keyring {
			r.users[u] = true
		}
		var have []string
		if l, ok := r.w.(KeyringLister); ok {
			have = l.KeyringUsers(r.service)
		} else {
			for _, u := range sortedKeys(r.users) {
				if _, err := r.caps.Keyring.Get(r.ctx, r.service, u); err == nil {
					have = append(have, u)
				}
			}
		}
		sort.Strings(have)
		want := append([]string(nil), f.Keyring...)
		sort.Strings(want)
		if !reflect.DeepEqual(nonNilStrings(have), nonNilStrings(want)) {
			r.failf("final: keyring holds %q, want %q", have, want)
		}
	}
	if f.TokenServer != nil && f.TokenServer.Requests != nil {
		if got := r.w.TokenServer().Requests(); got != *f.TokenServer.Requests {
			r.failf("final: the token endpoint got %d refresh requests, want %d", got, *f.TokenServer.Requests)
		}
	}
	got := r.w.Events()
	gotJSON := make([]Event, len(got))
	for i, e := range got {
		gotJSON[i] = Event{Type: e.Type, Payload: e.Payload}
	}
	wantB, _ := json.Marshal(*f.Events)
	gotB, _ := json.Marshal(gotJSON)
	r.texts = append(r.texts, string(gotB))
	r.equal("final: events", wantB, gotB)
	if sw, ok := r.w.(Surfaces); ok {
		surfaces, err := sw.Surfaces()
		if err != nil {
			r.failf("final: the world's surfaces: %v", err)
		}
		for _, s := range surfaces {
			r.texts = append(r.texts, s.Name+": "+s.Text)
		}
	}
	r.leaks()
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (r *runner) blob(what, user string, want json.RawMessage) {
	r.users[user] = true
	got, err := r.caps.Keyring.Get(r.ctx, r.service, user)
	absent := errors.Is(err, hostabi.ErrNotFound)
	if err != nil && !absent {
		r.failf("final: %s %s: %v", what, user, err)
		return
	}
	if string(want) == "null" {
		if !absent {
			r.failf("final: %s %s exists, want none", what, user)
		}
		return
	}
	if absent {
		r.failf("final: no %s %s, want %s", what, user, want)
		return
	}
	var w map[string]any
	if err := json.Unmarshal(want, &w); err != nil {
		r.failf("final: %s %s: expectation is not an object: %s", what, user, want)
		return
	}
	if id, ok := w["client_id"].(string); ok && what == "connection" {
		delete(w, "client_id")
		w["client_id_hash"] = hostabi.ClientIDHash(id)
	}
	wb, _ := json.Marshal(w)
	r.subset(fmt.Sprintf("final: %s %s", what, user), wb, []byte(got))
}

// leaks fails the scenario if any secret appears in a result, an error, an event, a
// ledger file, a host-call transcript or a surface the world shows (Surfaces).
func (r *runner) leaks() {
	for s := range r.secrets {
		for _, text := range r.texts {
			if strings.Contains(text, s) {
				r.failf("secret leaked: %q appears in %.200s", s, text)
				break
			}
		}
	}
}

// --- comparison -----------------------------------------------------------------------

func decode(b []byte) (any, error) {
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}

func (r *runner) equal(where string, want, got []byte) {
	w, err1 := decode(want)
	g, err2 := decode(got)
	if err1 != nil || err2 != nil {
		r.failf("%s: malformed JSON (%v, %v)", where, err1, err2)
		return
	}
	if !reflect.DeepEqual(w, g) {
		r.failf("%s:\n got  %s\n want %s", where, compact(got), compact(want))
	}
}

func (r *runner) subset(where string, want, got []byte) {
	w, err1 := decode(want)
	g, err2 := decode(got)
	if err1 != nil || err2 != nil {
		r.failf("%s: malformed JSON (%v, %v)", where, err1, err2)
		return
	}
	if msg := Subset(w, g, ""); msg != "" {
		r.failf("%s: %s\n got  %s\n want %s", where, msg, compact(got), compact(want))
	}
}

func compact(b []byte) string {
	v, err := decode(b)
	if err != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// Subset reports ("" when it holds) whether want is a subset of got: objects need every
// key of want (recursively); arrays need the same length and each element a subset of the
// element at the same index; everything else must be equal.
func Subset(want, got any, path string) string {
	if wa, ok := want.([]any); ok {
		ga, ok := got.([]any)
		if !ok || len(ga) != len(wa) {
			return fmt.Sprintf("at %s: got %s, want %d elements like %s", orRoot(path), mustJSON(got), len(wa), mustJSON(want))
		}
		for i := range wa {
			if msg := Subset(wa[i], ga[i], fmt.Sprintf("%s[%d]", path, i)); msg != "" {
				return msg
			}
		}
		return ""
	}
	wm, ok := want.(map[string]any)
	if !ok {
		if !reflect.DeepEqual(want, got) {
			return fmt.Sprintf("at %s: got %s, want %s", orRoot(path), mustJSON(got), mustJSON(want))
		}
		return ""
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return fmt.Sprintf("at %s: got %s, want an object", orRoot(path), mustJSON(got))
	}
	for _, k := range sortedKeys(wm) {
		gv, ok := gm[k]
		if !ok {
			return fmt.Sprintf("at %s: missing %q", orRoot(path), k)
		}
		if msg := Subset(wm[k], gv, path+"."+k); msg != "" {
			return msg
		}
	}
	return ""
}

func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func strOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
