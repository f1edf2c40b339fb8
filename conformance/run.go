package conformance

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/host"
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

// CorpusJSON is every scenario file of the embedded corpus (exceptions.yaml is not one)
// converted to JSON (see [ToJSON]), by file name: what a schema or a foreign runner's YAML
// library is checked against. It fails on a corpus without a scenario file.
func CorpusJSON() (map[string][]byte, error) {
	fsys := CorpusFS()
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, name := range names {
		if name == "exceptions.yaml" {
			continue
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if files[name], err = ToJSON(data); err != nil {
			return nil, fmt.Errorf("conformance: %s: %w", name, err)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("conformance: no corpus files")
	}
	return files, nil
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
	// Trace receives every host call of every process, as host.Host.Trace prints it.
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
	hosts   map[string]*host.Host
	agents  map[string]*AgentSpec
	secrets map[string]bool
	users   map[string]bool
	texts   []string
	rep     *Report
}

func (r *runner) failf(format string, args ...any) {
	r.rep.Failures = append(r.rep.Failures, fmt.Sprintf(format, args...))
}

// Catalog is the scenario's catalog: the corpus catalog (BaseCatalog) patched with the
// world's catalog; its Data is the policy data every shell decides the scenario with.
func (s *Scenario) Catalog() (*catalog.Catalog, error) {
	raw, err := MergePatch(BaseCatalog, s.world.Catalog)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return catalog.Load(raw)
}

// RunScenario runs one scenario and reports what did not hold. err is for a world the
// shell could not build or stage.
func RunScenario(ctx context.Context, t testing.TB, shell Shell, s *Scenario, hooks *Hooks) (*Report, error) {
	if hooks == nil {
		hooks = &Hooks{}
	}
	cat, err := s.Catalog()
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
		procs: map[string]*hostabi.Driver{}, hosts: map[string]*host.Host{}, agents: map[string]*AgentSpec{},
		secrets: map[string]bool{}, users: map[string]bool{}, rep: &Report{},
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
