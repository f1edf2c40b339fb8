package native

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// activationWatcher notices connectors/activations.json changed by another process and
// hands the activations as they were and as they are to the policy (Options.
// ActivationChanges), which emits connector.activation.changed for every pair whose state
// changed. It keeps the activations as last seen; this process's own writes replace them
// while they hold the ledger's lock (their events come from the core), so only other
// processes' changes are reported.
type activationWatcher struct {
	path    string
	changes func(before, after json.RawMessage)
	mu      sync.Mutex
	snap    json.RawMessage
	fsw     *fsnotify.Watcher
	stop    chan struct{}
	wg      sync.WaitGroup
}

// pollEvery is the fallback when the OS offers no file notifications.
const pollEvery = 500 * time.Millisecond

func startWatcher(path string, changes func(before, after json.RawMessage)) *activationWatcher {
	w := &activationWatcher{path: path, changes: changes, stop: make(chan struct{})}
	if doc, _, err := readLedgerFile(path); err == nil && doc != nil {
		w.snap, _ = activationsOf(doc)
	}
	if w.snap == nil {
		w.snap = json.RawMessage(`{}`)
	}
	_ = os.MkdirAll(filepath.Dir(path), 0o700)
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
	now, ok := activationsOf(doc)
	if !ok {
		return
	}
	w.diff(now)
}

// written wraps this process's write of the ledger: changes other processes made before
// it are reported, then the snapshot becomes what this process wrote.
func (w *activationWatcher) written(before, after []byte, rename func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := activationsOf(before); ok {
		w.diff(prev)
	}
	if err := rename(); err != nil {
		return err
	}
	if next, ok := activationsOf(after); ok {
		w.snap = next
	}
	return nil
}

// diff reports the change from the snapshot to now (the policy emits the events) and
// adopts now. Callers hold mu.
func (w *activationWatcher) diff(now json.RawMessage) {
	if string(now) != string(w.snap) {
		w.changes(w.snap, now)
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

// activationsOf returns the "activations" member of an activations ledger ({} when
// there is none, or no file); ok is false when doc is not a JSON object — including an
// empty file, which a writer that truncates before writing leaves for a moment. Judging
// the entries is the policy's (activation_changes).
func activationsOf(doc []byte) (json.RawMessage, bool) {
	if doc == nil {
		return json.RawMessage(`{}`), true
	}
	var root struct {
		Activations json.RawMessage `json:"activations"`
	}
	if json.Unmarshal(doc, &root) != nil {
		return nil, false
	}
	if len(root.Activations) == 0 || string(root.Activations) == "null" {
		return json.RawMessage(`{}`), true
	}
	return root.Activations, true
}
