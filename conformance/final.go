package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
)

// --- final world ----------------------------------------------------------------------

// ledgerNames are the ledgers the final world is checked for.
var ledgerNames = []string{"grants", "activations", "state", "mcp_servers"}

func (r *runner) final() {
	f := r.s.Final
	for _, name := range ledgerNames {
		doc, _, err := r.caps.Files.Read(r.ctx, layout.Ledgers[name])
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
	for _, p := range slices.Sorted(maps.Keys(f.Connections)) {
		r.blob("connection", layout.ConnectionUser(p), f.Connections[p])
	}
	for _, p := range slices.Sorted(maps.Keys(f.Clients)) {
		r.blob("client", layout.ClientUser(p), f.Clients[p])
	}
	for _, u := range slices.Sorted(maps.Keys(f.KeyringValues)) {
		r.users[u] = true
		got, err := r.caps.Keyring.Get(r.ctx, r.service, u)
		if err != nil || got != f.KeyringValues[u] {
			r.failf("final: keyring %s = %q (%v), want the value staged", u, got, err)
		}
	}
	// Every stored refresh token is a secret too (tokens issued during the steps).
	for _, id := range r.cat.IDs() {
		r.users[layout.ConnectionUser(id)] = true
		r.users[layout.ClientUser(id)] = true
		r.users[layout.TokenUser(id)] = true
		if v, err := r.caps.Keyring.Get(r.ctx, r.service, layout.TokenUser(id)); err == nil {
			var t layout.AccessToken
			if json.Unmarshal([]byte(v), &t) == nil {
				r.secret(t.AccessToken)
			}
		}
		if blob, err := r.caps.Keyring.Get(r.ctx, r.service, layout.ConnectionUser(id)); err == nil {
			if b, err := layout.ParseConnection(blob); err == nil {
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
			for _, u := range slices.Sorted(maps.Keys(r.users)) {
				if _, err := r.caps.Keyring.Get(r.ctx, r.service, u); err == nil {
					have = append(have, u)
				}
			}
		}
		sort.Strings(have)
		want := append([]string(nil), f.Keyring...)
		sort.Strings(want)
		if !slices.Equal(have, want) {
			r.failf("final: keyring holds %q, want %q", have, want)
		}
	}
	if ts := f.TokenServer; ts != nil {
		srv := r.w.TokenServer()
		for _, c := range []struct {
			want *int
			got  func() int
			what string
		}{
			{ts.Requests, srv.Requests, "the token endpoint got %d refresh requests, want %d"},
			{ts.Exchanges, srv.Exchanges, "the token endpoint got %d code exchanges, want %d"},
			{ts.Revocations, srv.Revocations, "the revocation endpoint got %d requests, want %d"},
			{ts.Revoked, srv.Revoked, "the revocation endpoint revoked %d tokens, want %d"},
		} {
			if c.want != nil {
				if got := c.got(); got != *c.want {
					r.failf("final: "+c.what, got, *c.want)
				}
			}
		}
		if ts.ClientAuth != nil {
			if got := srv.ClientAuth(); !slices.Equal(got, ts.ClientAuth) {
				r.failf("final: the token endpoint saw the client authenticate with %q, want %q", got, ts.ClientAuth)
			}
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
		w["client_id_hash"] = layout.ClientIDHash(id)
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
