package hostabi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/canon"
	"github.com/grantwire/grantwire/internal/strictjson"
)

// Ledger names.
const (
	LedgerGrants      = "grants"      // connectors/grants.json: {connector: {agent: [scopes]}}
	LedgerActivations = "activations" // connectors/activations.json: {"version": 1, "activations": {connector: {agent: true}}}
	LedgerState       = "state"       // connectors/state.json: {provider: non-secret connection metadata}
	LedgerMCPServers  = "mcp_servers" // mcp_servers.json: {"mcpServers": {id: {command, args, env}}}
)

// ledgerDoc is one parsed ledger. root is the whole document (unknown top-level fields
// included, so they survive a rewrite); entries is the map the ledger's paths index.
type ledgerDoc struct {
	name    string
	root    map[string]any
	entries map[string]any
	version string
}

func corrupt(l Ledgers, name, detail string) *core.Error {
	p := l.Path(name)
	e := Errorf("CORRUPT_LEDGER",
		fmt.Sprintf("inspect it, or move it aside to start that ledger empty: mv %s %s.corrupt", p, p),
		fmt.Sprintf("the %s ledger at %s is unreadable (%s); nothing was changed", name, p, detail))
	e.Fields = map[string]json.RawMessage{"path": mustJSON(p), "ledger": mustJSON(name)}
	return e
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// readLedger reads and validates a ledger. A missing file is an empty ledger; a file that
// is not strict JSON (strictjson.Check: UTF-8, no duplicate keys, one document) or has the
// wrong shape is a CORRUPT_LEDGER error and is never rewritten.
func readLedger(ctx context.Context, l Ledgers, name string) (*ledgerDoc, error) {
	raw, version, err := l.Read(ctx, name)
	if err != nil {
		return nil, err
	}
	d := &ledgerDoc{name: name, root: map[string]any{}, version: version}
	if raw != nil {
		if err := strictjson.Check(raw); err != nil {
			return nil, corrupt(l, name, err.Error()) // invalid UTF-8, duplicate keys, two documents, ...
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, corrupt(l, name, "not valid JSON: "+err.Error())
		}
		if rest := bytes.TrimSpace(raw[dec.InputOffset():]); len(rest) > 0 {
			return nil, corrupt(l, name, "trailing data after the JSON document")
		}
		root, ok := v.(map[string]any)
		if !ok {
			return nil, corrupt(l, name, "expected a JSON object")
		}
		d.root = root
	}
	if err := d.index(l); err != nil {
		return nil, err
	}
	return d, nil
}

// index finds the entries map and checks the shape of every entry.
func (d *ledgerDoc) index(l Ledgers) error {
	switch d.name {
	case LedgerGrants, LedgerState:
		d.entries = d.root
	case LedgerActivations:
		sub, err := subMap(d.root, "activations")
		if err != nil {
			return corrupt(l, d.name, err.Error())
		}
		d.entries = sub
	case LedgerMCPServers:
		key := "mcpServers"
		if _, ok := d.root[key]; !ok {
			if _, legacy := d.root["servers"]; legacy {
				key = "servers"
			}
		}
		sub, err := subMap(d.root, key)
		if err != nil {
			return corrupt(l, d.name, err.Error())
		}
		d.entries = sub
	default:
		return fmt.Errorf("hostabi: unknown ledger %q", d.name)
	}
	for c, v := range d.entries {
		if d.name == LedgerState || d.name == LedgerMCPServers {
			if _, ok := v.(map[string]any); !ok {
				return corrupt(l, d.name, fmt.Sprintf("entry %q is not an object", c))
			}
			continue
		}
		agents, ok := v.(map[string]any)
		if !ok {
			return corrupt(l, d.name, fmt.Sprintf("connector %q is not an object", c))
		}
		for a, val := range agents {
			if d.name == LedgerGrants {
				if !isStringList(val) {
					return corrupt(l, d.name, fmt.Sprintf("the scopes of %q for %q are not a list of strings", a, c))
				}
			} else if _, ok := val.(bool); !ok {
				return corrupt(l, d.name, fmt.Sprintf("the activation of %q for %q is not true or false", a, c))
			}
		}
	}
	return nil
}

func subMap(root map[string]any, key string) (map[string]any, error) {
	v, ok := root[key]
	if !ok || v == nil {
		m := map[string]any{}
		root[key] = m
		return m, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%q is not an object", key)
	}
	return m, nil
}

func isStringList(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, s := range list {
		if _, ok := s.(string); !ok {
			return false
		}
	}
	return true
}

// get returns the value at path: [c, a], [c], ["*", a] (by agent) or [] (all entries).
func (d *ledgerDoc) get(path []string) (any, bool) {
	switch {
	case len(path) == 0:
		return d.entries, true
	case len(path) == 2 && path[0] == "*":
		out := map[string]any{}
		for c, v := range d.entries {
			if m, ok := v.(map[string]any); ok {
				if x, ok := m[path[1]]; ok {
					out[c] = x
				}
			}
		}
		return out, true
	case len(path) == 1:
		v, ok := d.entries[path[0]]
		return v, ok
	case len(path) == 2:
		m, ok := d.entries[path[0]].(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[path[1]]
		return v, ok
	}
	return nil, false
}

// put sets the value at [c] or [c, a].
func (d *ledgerDoc) put(path []string, v any) error {
	switch len(path) {
	case 1:
		d.entries[path[0]] = v
	case 2:
		m, ok := d.entries[path[0]].(map[string]any)
		if !ok {
			m = map[string]any{}
			d.entries[path[0]] = m
		}
		m[path[1]] = v
	default:
		return fmt.Errorf("hostabi: cannot write ledger path %v", path)
	}
	return nil
}

// del removes the value at [c] or [c, a]; a connector left empty is removed too.
func (d *ledgerDoc) del(path []string) error {
	switch len(path) {
	case 1:
		delete(d.entries, path[0])
	case 2:
		if m, ok := d.entries[path[0]].(map[string]any); ok {
			delete(m, path[1])
			if len(m) == 0 {
				delete(d.entries, path[0])
			}
		}
	default:
		return fmt.Errorf("hostabi: cannot delete ledger path %v", path)
	}
	return nil
}

// bytes renders the document as grantwire writes every ledger: JSON with sorted keys and
// 2-space indentation (the format GAIA writes too).
func (d *ledgerDoc) bytes() []byte {
	if d.name == LedgerActivations {
		if _, ok := d.root["version"]; !ok {
			d.root["version"] = json.Number("1")
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d.root); err != nil {
		panic(err) // values come from JSON; encoding cannot fail
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if d.name == LedgerMCPServers {
		out = append(out, '\n')
	}
	return out
}

// matches reports whether the entry at path is as expect describes: {"found": false} or
// {"found": true, "value": v} (compared in canonical JSON). A nil expect always matches.
func (d *ledgerDoc) matches(path []string, expect json.RawMessage) (bool, error) {
	if len(expect) == 0 {
		return true, nil
	}
	var e struct {
		Found bool            `json:"found"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(expect, &e); err != nil {
		return false, fmt.Errorf("hostabi: malformed expect: %w", err)
	}
	v, ok := d.get(path)
	if ok != e.Found {
		return false, nil
	}
	if !ok {
		return true, nil
	}
	want, err := canon.Append(nil, e.Value)
	if err != nil {
		return false, err
	}
	have, err := canon.Append(nil, v)
	if err != nil {
		return false, err
	}
	return bytes.Equal(want, have), nil
}

// sortedKeys returns the keys of a map, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
