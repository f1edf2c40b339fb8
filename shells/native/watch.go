package native

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/grantwire/grantwire/hostabi"
)

// activationWatcher notices connectors/activations.json changed by another process and
// emits connector.activation.changed {connector_id, agent_id, active} for every pair whose
// state changed. It keeps a snapshot of the ledger as last seen; this process's own
// writes replace the snapshot while they hold the ledger's lock (their events come from
// the core), so only other processes' changes are reported.
type activationWatcher struct {
	path string
	bus  hostabi.Events

	mu   sync.Mutex
	snap map[string]map[string]bool

	fsw  *fsnotify.Watcher
	stop chan struct{}
	wg   sync.WaitGroup
}

// pollEvery is the fallback when the OS offers no file notifications.
const pollEvery = 500 * time.Millisecond

func startWatcher(path string, bus hostabi.Events) *activationWatcher {
	w := &activationWatcher{path: path, bus: bus, stop: make(chan struct{})}
	if doc, _, err := readLedgerFile(path); err == nil && doc != nil {
		w.snap, _ = parseActivations(doc)
	}
	if w.snap == nil {
		w.snap = map[string]map[string]bool{}
	}
	fsw, err := fsnotify.NewWatcher()
	if err == nil {
		if err = fsw.Add(filepath.Dir(path)); err != nil {
			_ = fsw.Close()
		}
	}
	w.wg.Add(1)
	if err != nil {
		go w.poll()
		return w
	}
	w.fsw = fsw
	go w.watch()
	return w
}

func (w *activationWatcher) watch() {
	defer w.wg.Done()
	base := filepath.Base(w.path)
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) == base {
				w.check()
			}
		case _, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.check() // an overflow may have hidden a change
		}
	}
}

func (w *activationWatcher) poll() {
	defer w.wg.Done()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.check()
		}
	}
}

// check re-reads the ledger and reports what changed since the snapshot. An unreadable or
// corrupt file reports nothing and keeps the snapshot.
func (w *activationWatcher) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	doc, _, err := readLedgerFile(w.path)
	if err != nil {
		return
	}
	now, ok := parseActivations(doc)
	if !ok {
		return
	}
	w.emitDiff(now)
}

// written wraps this process's write of the ledger: changes other processes made before
// it are reported, then the snapshot becomes what this process wrote.
func (w *activationWatcher) written(before, after []byte, rename func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := parseActivations(before); ok {
		w.emitDiff(prev)
	}
	if err := rename(); err != nil {
		return err
	}
	if next, ok := parseActivations(after); ok {
		w.snap = next
	}
	return nil
}

type activationChanged struct {
	ConnectorID string `json:"connector_id"`
	AgentID     string `json:"agent_id"`
	Active      bool   `json:"active"`
}

// emitDiff emits an event per pair whose state differs from the snapshot, in sorted
// order, and adopts now as the snapshot. Callers hold mu.
func (w *activationWatcher) emitDiff(now map[string]map[string]bool) {
	type pair struct{ c, a string }
	seen := map[pair]struct{}{}
	for _, m := range []map[string]map[string]bool{w.snap, now} {
		for c, agents := range m {
			for a := range agents {
				seen[pair{c, a}] = struct{}{}
			}
		}
	}
	pairs := make([]pair, 0, len(seen))
	for p := range seen {
		pairs = append(pairs, p)
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].c != pairs[j].c {
			return pairs[i].c < pairs[j].c
		}
		return pairs[i].a < pairs[j].a
	})
	for _, p := range pairs {
		was, is := w.snap[p.c][p.a], now[p.c][p.a]
		if was == is {
			continue
		}
		payload, _ := json.Marshal(activationChanged{ConnectorID: p.c, AgentID: p.a, Active: is})
		w.bus.Emit(hostabi.Event{Type: "connector.activation.changed", Payload: payload})
	}
	w.snap = now
}

func (w *activationWatcher) close() {
	close(w.stop)
	if w.fsw != nil {
		_ = w.fsw.Close()
	}
	w.wg.Wait()
}

// parseActivations reads {"activations": {connector: {agent: bool}}} leniently (as GAIA
// does: entries of the wrong shape are skipped); nil (no file) is empty. ok is false when
// doc is not a JSON object — including an empty file, which a writer that truncates
// before writing leaves for a moment.
func parseActivations(doc []byte) (map[string]map[string]bool, bool) {
	out := map[string]map[string]bool{}
	if doc == nil {
		return out, true // no file: nothing is active
	}
	var root struct {
		Activations map[string]json.RawMessage `json:"activations"`
	}
	if json.Unmarshal(doc, &root) != nil {
		return nil, false
	}
	for c, raw := range root.Activations {
		var agents map[string]json.RawMessage
		if json.Unmarshal(raw, &agents) != nil {
			continue
		}
		for a, v := range agents {
			if string(v) == "true" {
				if out[c] == nil {
					out[c] = map[string]bool{}
				}
				out[c][a] = true
			}
		}
	}
	return out, true
}
