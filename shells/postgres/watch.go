package postgres

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/grantwire/grantwire/internal/layout"
)

// watcher reports the activations and grants that other processes change, as the OS
// shell's file watcher does: it LISTENs on its own connection for the notifications every
// ledger write sends (ledgers.go), re-reads a watched ledger of its home when another
// Store wrote it, and hands its view as it was and as it is to the Options' callbacks (the
// policy emits an event for each pair whose state changed). This Store's own writes only
// move the snapshot (their events come from the core). Versions order what is seen: a
// notification of a version already seen reports nothing. After a lost connection it
// listens again and re-reads every watched ledger, so no change is missed.
type watcher struct {
	s       *Store
	cfg     *pgx.ConnConfig
	ledgers map[string]*watched
	cancel  context.CancelFunc
	done    chan struct{}
}

// watched is one ledger the watcher follows.
type watched struct {
	name    string
	view    func(doc []byte) (json.RawMessage, bool)
	changes func(before, after json.RawMessage)

	mu      sync.Mutex
	snap    json.RawMessage
	version int64
}

// The ledgers the watcher follows.
const (
	activationsLedger = "connectors/activations.json"
	grantsLedger      = "connectors/grants.json"
)

func startWatcher(ctx context.Context, s *Store, cfg *pgx.ConnConfig) (*watcher, error) {
	w := &watcher{s: s, cfg: cfg.Copy(), ledgers: map[string]*watched{}, done: make(chan struct{})}
	if s.opts.ActivationChanges != nil {
		w.ledgers[activationsLedger] = &watched{name: activationsLedger, view: layout.ActivationsOf, changes: s.opts.ActivationChanges}
	}
	if s.opts.GrantChanges != nil {
		w.ledgers[grantsLedger] = &watched{name: grantsLedger, view: layout.GrantsOf, changes: s.opts.GrantChanges}
	}
	conn, err := w.listen(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range w.ledgers {
		l.snap = json.RawMessage(`{}`)
		if doc, v, err := s.ledgers.read(ctx, s.pool, l.name); err == nil && doc != nil {
			if view, ok := l.view(doc); ok {
				l.snap, l.version = view, v
			}
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(runCtx, conn)
	return w, nil
}

// listen opens the watcher's connection and LISTENs.
func (w *watcher) listen(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := w.s.bounded(ctx)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, w.cfg)
	if err != nil {
		return nil, w.s.fail("listen for changes", err)
	}
	if _, err := conn.Exec(ctx, "listen "+notifyChannel); err != nil {
		_ = conn.Close(context.Background())
		return nil, w.s.fail("listen for changes", err)
	}
	return conn, nil
}

func (w *watcher) run(ctx context.Context, conn *pgx.Conn) {
	defer close(w.done)
	backoff := 50 * time.Millisecond
	for {
		for conn != nil {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				_ = conn.Close(context.Background())
				conn = nil
				if ctx.Err() != nil {
					return
				}
				w.s.warn("the PostgreSQL store's change notifications stopped (" + reason(err) + "); listening again")
				break
			}
			backoff = 50 * time.Millisecond
			w.notified(ctx, n.Payload)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
		c, err := w.listen(ctx)
		if err != nil {
			continue
		}
		conn = c
		for _, l := range w.ledgers {
			w.check(ctx, l) // what changed while nobody listened
		}
	}
}

type notification struct {
	Home    string `json:"home"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
	Origin  string `json:"origin"`
}

func (w *watcher) notified(ctx context.Context, payload string) {
	var n notification
	if json.Unmarshal([]byte(payload), &n) != nil || n.Home != w.s.opts.Home || n.Origin == w.s.origin {
		return
	}
	if l := w.ledgers[n.Name]; l != nil {
		w.check(ctx, l)
	}
}

// check re-reads a ledger and reports what changed since its snapshot. An unreadable or
// corrupt ledger reports nothing and keeps the snapshot.
func (w *watcher) check(ctx context.Context, l *watched) {
	l.mu.Lock()
	defer l.mu.Unlock()
	doc, v, err := w.s.ledgers.read(ctx, w.s.pool, l.name)
	if err != nil {
		return
	}
	if doc == nil {
		l.diff(json.RawMessage(`{}`), l.version)
		return
	}
	if v <= l.version {
		return
	}
	if now, ok := l.view(doc); ok {
		l.diff(now, v)
	}
}

// ledger returns the watched ledger of that name (nil when none or no watcher).
func (w *watcher) ledger(name string) *watched {
	if w == nil {
		return nil
	}
	return w.ledgers[name]
}

// written records this Store's write of a watched ledger: changes other processes made
// before it are reported, then the snapshot becomes what this Store wrote.
func (l *watched) written(before []byte, beforeVersion int64, after []byte, afterVersion int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev, ok := json.RawMessage(`{}`), true
	if before != nil {
		prev, ok = l.view(before)
	}
	if ok {
		l.diff(prev, beforeVersion)
	}
	if next, ok := l.view(after); ok && afterVersion > l.version {
		l.snap, l.version = next, afterVersion
	}
}

// diff reports the change from the snapshot to now and adopts now. Callers hold l.mu.
func (l *watched) diff(now json.RawMessage, version int64) {
	if string(now) != string(l.snap) {
		l.changes(l.snap, now)
	}
	l.snap = now
	if version > l.version {
		l.version = version
	}
}

func (w *watcher) close() {
	w.cancel()
	<-w.done
}
