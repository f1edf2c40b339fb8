package native

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ledgerWatcher notices ledgers (connectors/activations.json, connectors/grants.json)
// changed by another process and hands each one's view as it was and as it is to the
// policy (Options.ActivationChanges, Options.GrantChanges), which emits an event for
// every pair whose state changed. It keeps each view as last seen; this process's own
// writes replace it while they hold the ledger's lock (their events come from the core),
// so only other processes' changes are reported.
type ledgerWatcher struct {
	mu      sync.Mutex
	ledgers map[string]*watchedLedger // by absolute path
	fsw     *fsnotify.Watcher
	stop    chan struct{}
	wg      sync.WaitGroup
}

// watchedLedger is one ledger a ledgerWatcher follows.
type watchedLedger struct {
	// name is the ledger's name under the home (connectors/grants.json).
	name string
	path string
	// view extracts what the policy compares from the file's content; ok is false when
	// the content is not a JSON object.
	view    func(doc []byte) (json.RawMessage, bool)
	changes func(before, after json.RawMessage)
	snap    json.RawMessage
}

// pollEvery is the fallback when the OS offers no file notifications.
const pollEvery = 500 * time.Millisecond

// startWatcher follows ledgers (each with its name, path, view and changes set; snap is
// filled here from the file as it is).
func startWatcher(ledgers ...*watchedLedger) *ledgerWatcher {
	w := &ledgerWatcher{ledgers: map[string]*watchedLedger{}, stop: make(chan struct{})}
	dirs := map[string]bool{}
	for _, l := range ledgers {
		l.path = filepath.Clean(l.path)
		if doc, _, err := readLedgerFile(l.path); err == nil && doc != nil {
			l.snap, _ = l.view(doc)
		}
		if l.snap == nil {
			l.snap = json.RawMessage(`{}`)
		}
		w.ledgers[l.path] = l
		dirs[filepath.Dir(l.path)] = true
	}
	fsw, err := fsnotify.NewWatcher()
	for dir := range dirs {
		_ = os.MkdirAll(dir, 0o700)
		if err == nil {
			if err = fsw.Add(dir); err != nil {
				_ = fsw.Close()
			}
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

func (w *ledgerWatcher) watch() {
	defer w.wg.Done()
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if l := w.ledgers[filepath.Clean(ev.Name)]; l != nil {
				w.check(l)
			}
		case _, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.checkAll() // an overflow may have hidden a change
		}
	}
}

func (w *ledgerWatcher) poll() {
	defer w.wg.Done()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.checkAll()
		}
	}
}

func (w *ledgerWatcher) checkAll() {
	for _, l := range w.ledgers {
		w.check(l)
	}
}

// check re-reads a ledger and reports what changed since its snapshot. An unreadable or
// corrupt file reports nothing and keeps the snapshot.
func (w *ledgerWatcher) check(l *watchedLedger) {
	w.mu.Lock()
	defer w.mu.Unlock()
	doc, _, err := readLedgerFile(l.path)
	if err != nil {
		return
	}
	if doc == nil {
		l.diff(json.RawMessage(`{}`))
		return
	}
	if now, ok := l.view(doc); ok {
		l.diff(now)
	}
}

// written wraps this process's write of the ledger at path: changes other processes
// made before it are reported, then the snapshot becomes what this process wrote. A
// ledger the watcher does not follow is just renamed.
func (w *ledgerWatcher) written(path string, before, after []byte, rename func() error) error {
	l := w.ledgers[filepath.Clean(path)]
	if l == nil {
		return rename()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if before == nil {
		l.diff(json.RawMessage(`{}`))
	} else if prev, ok := l.view(before); ok {
		l.diff(prev)
	}
	if err := rename(); err != nil {
		return err
	}
	if next, ok := l.view(after); ok {
		l.snap = next
	}
	return nil
}

// diff reports the change from the snapshot to now (the policy emits the events) and
// adopts now. Callers hold the watcher's mu.
func (l *watchedLedger) diff(now json.RawMessage) {
	if string(now) != string(l.snap) {
		l.changes(l.snap, now)
	}
	l.snap = now
}

func (w *ledgerWatcher) close() {
	close(w.stop)
	if w.fsw != nil {
		_ = w.fsw.Close()
	}
	w.wg.Wait()
}
