package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/layout"
)

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
	h := host.New(caps)
	h.Trace = func(line string) {
		r.texts = append(r.texts, line)
		if r.hooks.Trace != nil {
			r.hooks.Trace(name, line)
		}
	}
	d := &hostabi.Driver{Engine: r.engine, Host: h}
	r.procs[name], r.hosts[name] = d, h
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
				r.users[layout.MCPUser(a.Connector, key)] = true
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
	if err != nil {
		r.failf("%s: the driver failed: %v", where, err)
		return
	}
	if x.HostError != "" {
		switch {
		case out.Error == nil:
			r.failf("%s: expected a host failure %q, got result %s", where, x.HostError, out.Result)
		case !out.HostFailure:
			b, _ := json.Marshal(out.Error)
			r.failf("%s: expected a host failure %q, got the decision error %s", where, x.HostError, b)
		case !strings.Contains(out.Error.Message, x.HostError):
			r.failf("%s: host failure %q does not contain %q", where, out.Error.Message, x.HostError)
		}
		r.texts = append(r.texts, out.Error.Message)
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
		ref, ok := jsonx.RawAt(body, strings.Split(p, "."))
		var rv hostabi.SecretRef
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

// storeMoveAside is the move-aside fix of a ledger of a PostgreSQL store (whose file is
// postgres://USER@HOST:PORT/DATABASE/HOME/LEDGER): the corpus's "mv {{path:x}}
// {{path:x}}.corrupt" is that command on such a shell (docs/behaviour.md#corrupt-ledger).
func storeMoveAside(file, ledger string) (string, bool) {
	rest, ok := strings.CutPrefix(file, "postgres://")
	if !ok {
		if rest, ok = strings.CutPrefix(file, "postgresql://"); !ok {
			return "", false
		}
	}
	parts := strings.SplitN(rest, "/", 4) // host, database, home, ledger
	if len(parts) != 4 || parts[3] != ledger {
		return "", false
	}
	if parts[2] == "default" {
		return "grantwire store move-aside " + ledger, true
	}
	return "grantwire store move-aside --store-home " + parts[2] + " " + ledger, true
}

// expand replaces "{{path:<ledger>}}" in the expectation's strings with the shell's path
// of that ledger (error messages name the file, and each shell puts it elsewhere).
func (r *runner) expand(x *Expect) *Expect {
	b, _ := json.Marshal(x)
	s := string(b)
	for _, name := range slices.Sorted(maps.Keys(layout.Ledgers)) {
		file := r.caps.Files.Path(layout.Ledgers[name])
		if fix, ok := storeMoveAside(file, layout.Ledgers[name]); ok {
			s = strings.ReplaceAll(s, "mv {{path:"+name+"}} {{path:"+name+"}}.corrupt", fix)
		}
		p, _ := json.Marshal(file)
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
