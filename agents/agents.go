// Package agents is grantwire's agent registry: the agents a user runs and what each one
// declares it needs. It merges a few built-in agents with the file
// $GRANTWIRE_HOME/agents.json and implements hostabi.Agents, so the policy reads the
// declarations as agent.get facts: one-click activation grants an agent its declared
// scopes (or ["use"] for an agent that consumes MCP servers), connect --grant-agent grants
// them, and a forwarded connection must cover the union of what its agents declare.
//
// # The agents file
//
//	{
//	  "version": 1,
//	  "agents": [
//	    {
//	      "id": "installed:triage",
//	      "name": "Inbox triage",
//	      "description": "Labels and drafts replies",
//	      "required_connectors": [
//	        {"connector": "google",
//	         "scopes": ["https://www.googleapis.com/auth/gmail.modify"],
//	         "reason": "Read and label your mail"}
//	      ],
//	      "consumes_mcp_servers": false
//	    },
//	    {"id": "custom:reviewer", "source": "~/agents/reviewer.py", "consumes_mcp_servers": true}
//	  ]
//	}
//
// Agent ids are namespaced and stored verbatim: builtin:<id>, installed:<id>, native:<id>
// and custom:<first 16 hex of sha256(agent source)>:<id>. A custom agent is written either
// with its full id, or as "custom:<id>" with "source": the file whose bytes name it
// (relative paths are relative to agents.json, "~/" is the home directory). The registry
// hashes the source when it loads, so an agent whose code changes gets a new id and
// inherits no grant; a full id whose source no longer matches is not registered, and the
// mismatch is reported by Problems. Entries of the file replace built-in agents of the
// same id. The file is re-read when it changes. Unknown top-level fields are ignored;
// unknown fields of an agent are refused (a typo must not silently drop a declaration).
//
// The agents file is read as a regular file of at most MaxFileBytes, checked as strict
// JSON (internal/strictjson: a duplicate key would silently drop a declaration); agent
// sources are hashed only when they are regular files, as they are read, up to
// MaxSourceBytes (a source of /dev/zero or a FIFO is a problem reported at once).
//
// It imports hostabi (for the Agents interface and its error type) and the internal
// safefile and strictjson packages, nothing else of grantwire.
package agents

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/safefile"
	"github.com/grantwire/grantwire/internal/strictjson"
)

// FileName is the agents file under grantwire's home.
const FileName = "agents.json"

// MaxFileBytes is the largest agents file read (4 MiB); MaxSourceBytes the largest
// custom agent source hashed (256 MiB, hashed as it is read, never held in memory).
const (
	MaxFileBytes   = 4 << 20
	MaxSourceBytes = 256 << 20
)

// Version is the file format version this package writes and reads.
const Version = 1

// Namespaces of agent ids.
var Namespaces = []string{"builtin", "installed", "native", "custom"}

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$`)
	customRE = regexp.MustCompile(`^custom:([0-9a-f]{16}):(.+)$`)
)

// Requirement is one connector an agent declares: the scopes it asks for, and why.
type Requirement struct {
	Connector string   `json:"connector"`
	Scopes    []string `json:"scopes"`
	Reason    string   `json:"reason,omitempty"`
}

// Agent is one agent of the registry.
type Agent struct {
	ID                 string        `json:"id"`
	Name               string        `json:"name,omitempty"`
	Description        string        `json:"description,omitempty"`
	Source             string        `json:"source,omitempty"`
	RequiredConnectors []Requirement `json:"required_connectors,omitempty"`
	ConsumesMCPServers bool          `json:"consumes_mcp_servers,omitempty"`
	// Origin is "builtin" or "file" (set by the registry, ignored in the file).
	Origin string `json:"origin,omitempty"`
}

// Declaration converts the agent to the host ABI's form.
func (a Agent) Declaration() hostabi.Agent {
	out := hostabi.Agent{ID: a.ID, Name: a.Name, ConsumesMCPServers: a.ConsumesMCPServers}
	for _, r := range a.RequiredConnectors {
		if out.RequiredConnectors == nil {
			out.RequiredConnectors, out.Reasons = map[string][]string{}, map[string]string{}
		}
		out.RequiredConnectors[r.Connector] = append([]string(nil), r.Scopes...)
		if r.Reason != "" {
			out.Reasons[r.Connector] = r.Reason
		}
	}
	return out
}

// Problem is an agent of the file that could not be registered (its source is unreadable
// or no longer matches its id), or a declaration a catalog does not offer.
type Problem struct {
	Agent   string `json:"agent"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Agent + ": " + p.Message }

// Registry is the agent registry. It is safe for concurrent use.
type Registry struct {
	path     string
	home     string
	builtins []Agent

	mu       sync.Mutex
	agents   map[string]Agent
	problems []Problem
	err      error
}

// Option configures Open.
type Option func(*Registry)

// WithBuiltins replaces the built-in agents (nil: none).
func WithBuiltins(list []Agent) Option {
	return func(r *Registry) { r.builtins = append([]Agent(nil), list...) }
}

// WithUserHome sets the directory "~/" means in source paths (default os.UserHomeDir).
func WithUserHome(dir string) Option { return func(r *Registry) { r.home = dir } }

// New returns the registry backed by the agents file at path (it need not exist). The
// file is read on first use; a file that cannot be used is reported then (by List, Get,
// and by Agent as a CORRUPT_LEDGER error naming the file), so commands that never look
// at agents keep working.
func New(path string, opts ...Option) *Registry {
	r := &Registry{path: path, builtins: Builtins()}
	for _, o := range opts {
		o(r)
	}
	if r.home == "" {
		r.home, _ = os.UserHomeDir()
	}
	return r
}

// Path is the agents file.
func (r *Registry) Path() string { return r.path }

// Agent implements hostabi.Agents. An unusable agents file is reported as a
// CORRUPT_LEDGER error naming it and the fix (the operation changes nothing).
func (r *Registry) Agent(_ context.Context, id string) (hostabi.Agent, bool, error) {
	if err := r.refresh(); err != nil {
		ce := hostabi.Errorf("CORRUPT_LEDGER",
			fmt.Sprintf("correct it, or move it aside to use only the built-in agents: mv %s %s.corrupt", r.path, r.path),
			err.Error()+"; nothing was changed")
		return hostabi.Agent{}, false, ce
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[id]
	if !ok {
		return hostabi.Agent{}, false, nil
	}
	return a.Declaration(), true, nil
}

// Get returns an agent as registered.
func (r *Registry) Get(id string) (Agent, bool, error) {
	if err := r.refresh(); err != nil {
		return Agent{}, false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[id]
	return a, ok, nil
}

// List returns every registered agent, sorted by id.
func (r *Registry) List() ([]Agent, error) {
	if err := r.refresh(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Agent, 0, len(r.agents))
	for _, a := range r.agents {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Problems returns the agents of the file that are not registered, and why.
func (r *Registry) Problems() []Problem {
	_ = r.refresh()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Problem(nil), r.problems...)
}

// Check compares every declaration with a catalog: known reports whether a connector
// exists and, when it lists any, the scopes it offers.
func (r *Registry) Check(known func(connector string) (available []string, ok bool)) ([]Problem, error) {
	list, err := r.List()
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, a := range list {
		for _, req := range a.RequiredConnectors {
			avail, ok := known(req.Connector)
			if !ok {
				out = append(out, Problem{a.ID, fmt.Sprintf("declares connector %q, which the catalog does not have", req.Connector)})
				continue
			}
			if len(avail) == 0 {
				continue
			}
			set := map[string]bool{}
			for _, s := range avail {
				set[s] = true
			}
			var extra []string
			for _, s := range req.Scopes {
				if !set[s] {
					extra = append(extra, s)
				}
			}
			if len(extra) > 0 {
				out = append(out, Problem{a.ID, fmt.Sprintf("declares scopes %s on %s that the catalog does not offer", strings.Join(extra, " "), req.Connector)})
			}
		}
	}
	return out, nil
}

// refresh re-reads the file, and re-hashes the sources of custom agents, on every lookup:
// both are small, lookups are rare (activation, connect, import), and a cache keyed on a
// file's size and time could miss a rewrite within one clock tick or a changed source.
func (r *Registry) refresh() error {
	raw, _, err := safefile.ReadFile(r.path, MaxFileBytes)
	exists := err == nil
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var fileAgents []Agent
	var problems []Problem
	if exists {
		fileAgents, problems, err = parse(raw, filepath.Dir(r.path), r.home)
		if err != nil {
			r.err = fmt.Errorf("agents: the agent registry at %s is unreadable: %w", r.path, err)
			return r.err
		}
	}
	r.err = nil
	m := map[string]Agent{}
	for _, a := range r.builtins {
		a.Origin = "builtin"
		m[a.ID] = a
	}
	for _, a := range fileAgents {
		a.Origin = "file"
		m[a.ID] = a
	}
	r.agents, r.problems = m, problems
	return nil
}

// parse reads an agents file. Shape errors fail the whole file; an agent whose source
// cannot be hashed (or no longer matches its id) is left out and reported as a problem.
func parse(raw []byte, dir, home string) ([]Agent, []Problem, error) {
	if err := strictjson.Check(raw); err != nil {
		return nil, nil, err
	}
	var doc struct {
		Version *int              `json:"version"`
		Agents  []json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if doc.Version != nil && *doc.Version != Version {
		return nil, nil, fmt.Errorf("version %d is not supported (this grantwire reads version %d)", *doc.Version, Version)
	}
	var out []Agent
	var problems []Problem
	seen := map[string]int{}
	for i, entry := range doc.Agents {
		var a Agent
		dec := json.NewDecoder(bytes.NewReader(entry))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, nil, fmt.Errorf("agents[%d]: %w", i, err)
		}
		a.Origin = ""
		if err := checkDeclaration(a); err != nil {
			return nil, nil, fmt.Errorf("agents[%d] (%q): %w", i, a.ID, err)
		}
		if a.Source != "" && !strings.HasPrefix(a.ID, "custom:") {
			return nil, nil, fmt.Errorf(`agents[%d] (%q): "source" is for custom agents; write the id as "custom:<id>"`, i, a.ID)
		}
		if a.Source != "" {
			id, err := resolveCustom(a, dir, home)
			if err != nil {
				problems = append(problems, Problem{a.ID, err.Error()})
				continue
			}
			a.ID = id
		} else if err := ValidID(a.ID); err != nil {
			return nil, nil, fmt.Errorf("agents[%d]: %w", i, err)
		}
		if j, dup := seen[a.ID]; dup {
			return nil, nil, fmt.Errorf("agents[%d] and agents[%d] both declare %q", j, i, a.ID)
		}
		seen[a.ID] = i
		out = append(out, a)
	}
	return out, problems, nil
}

func checkDeclaration(a Agent) error {
	if a.ID == "" {
		return errors.New(`"id" is required`)
	}
	connectors := map[string]bool{}
	for j, req := range a.RequiredConnectors {
		if req.Connector == "" {
			return fmt.Errorf("required_connectors[%d]: \"connector\" is required", j)
		}
		if connectors[req.Connector] {
			return fmt.Errorf("required_connectors: %q appears twice", req.Connector)
		}
		connectors[req.Connector] = true
		if len(req.Scopes) == 0 {
			return fmt.Errorf("required_connectors[%d] (%s): declare at least one scope (\"use\" for an MCP server)", j, req.Connector)
		}
		seen := map[string]bool{}
		for _, s := range req.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
				return fmt.Errorf("required_connectors[%d] (%s): %q is not a scope", j, req.Connector, s)
			}
			if seen[s] {
				return fmt.Errorf("required_connectors[%d] (%s): scope %q appears twice", j, req.Connector, s)
			}
			seen[s] = true
		}
	}
	return nil
}

func resolveCustom(a Agent, dir, home string) (string, error) {
	name := ""
	if m := customRE.FindStringSubmatch(a.ID); m != nil {
		name = m[2]
	} else {
		name = strings.TrimPrefix(a.ID, "custom:")
	}
	path := a.Source
	if strings.HasPrefix(path, "~/") && home != "" {
		path = filepath.Join(home, path[2:])
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	id, err := CustomIDFile(path, name)
	if err != nil {
		return "", err
	}
	if customRE.MatchString(a.ID) && a.ID != id {
		return "", fmt.Errorf("its source %s changed: the agent is now %s and inherits nothing from %s; update the id to grant it again", path, id, a.ID)
	}
	return id, nil
}

// ValidID checks a namespaced agent id: builtin:, installed:, native: or
// custom:<16 hex>: followed by a name of 1-128 letters, digits and _ . @ + -.
func ValidID(id string) error {
	ns, name, ok := strings.Cut(id, ":")
	if !ok {
		return fmt.Errorf("agent id %q needs a namespace: %s", id, strings.Join(Namespaces, ":, ")+":")
	}
	switch ns {
	case "builtin", "installed", "native":
	case "custom":
		m := customRE.FindStringSubmatch(id)
		if m == nil {
			return fmt.Errorf("custom agent id %q must be custom:<first 16 hex of sha256(source)>:<id> (grantwire agents id <file>)", id)
		}
		name = m[2]
	default:
		return fmt.Errorf("agent id %q: unknown namespace %q (%s)", id, ns, strings.Join(Namespaces, ", "))
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("agent id %q: the name must be 1-128 of letters, digits and _ . @ + - (starting with a letter or digit)", id)
	}
	return nil
}

// CustomID names a custom agent: custom:<first 16 hex of sha256(source)>:<name>.
func CustomID(source []byte, name string) (string, error) {
	if !nameRE.MatchString(name) {
		return "", fmt.Errorf("agent name %q must be 1-128 of letters, digits and _ . @ + - (starting with a letter or digit)", name)
	}
	sum := sha256.Sum256(source)
	return customID(sum[:], name), nil
}

// CustomIDFile names the custom agent whose source is the file at path. An empty name
// means the file's base name without its extension. The source must be a regular file
// of at most MaxSourceBytes; it is hashed as it is read.
func CustomIDFile(path, name string) (string, error) {
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if !nameRE.MatchString(name) {
		return CustomID(nil, name) // the error about the name
	}
	f, fi, err := safefile.Open(path)
	if err != nil {
		return "", fmt.Errorf("agent source: %w", err)
	}
	defer f.Close()
	if fi.Size() > MaxSourceBytes {
		return "", fmt.Errorf("agent source: %w", &safefile.TooLargeError{Path: path, Size: fi.Size(), Limit: MaxSourceBytes})
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		return "", fmt.Errorf("agent source: read %s: %w", path, err)
	}
	if n > MaxSourceBytes {
		return "", fmt.Errorf("agent source: %w", &safefile.TooLargeError{Path: path, Size: n, Limit: MaxSourceBytes})
	}
	return customID(h.Sum(nil), name), nil
}

func customID(sum []byte, name string) string {
	return "custom:" + hex.EncodeToString(sum)[:16] + ":" + name
}
