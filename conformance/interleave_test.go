package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/engines"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

// This file explores interleavings of two or three operations on one memhost world. Every
// host call is a scheduling point (hostabi.Host.Yield); a scheduler lets exactly one driver
// run at a time and explores the orders with dynamic partial-order reduction: two steps are
// reordered only when they touch a common resource (a keyring entry, a ledger, a lock, the
// token endpoint, a process's caches) and one of them writes it. With two drivers the
// exploration is exhaustive; three-driver cases are bounded by a number of runs.
//
// Locks: memhost's locks block on in-process holders, so the scheduler supplies its own
// Locks capability: a driver that wants a lock another driver holds is parked as blocked and
// is not runnable until the holder releases it. A waiter therefore waits as long as needed
// (lock waits never expire here, so BUSY between drivers is not explored: it changes nothing).

type access struct {
	res   string
	write bool
}

type stepRec struct {
	driver  int
	enabled []int
	acc     []access
}

const (
	stStarting = iota
	stRunning
	stParked
	stBlocked
	stDone
)

type sched struct {
	mu      sync.Mutex
	cond    *sync.Cond
	turn    int
	state   []int
	want    []string
	holders map[string]int
	steps   []stepRec
}

func newSched(n int) *sched {
	s := &sched{turn: -1, state: make([]int, n), want: make([]string, n), holders: map[string]int{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *sched) record(res string, write bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.steps); n > 0 {
		s.steps[n-1].acc = append(s.steps[n-1].acc, access{res, write})
	}
}

// wait parks driver i in state st until the scheduler gives it the turn.
func (s *sched) wait(i, st int, lock string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[i], s.want[i], s.turn = st, lock, -1
	s.cond.Broadcast()
	for s.turn != i {
		s.cond.Wait()
	}
	s.state[i] = stRunning
}

func (s *sched) done(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[i], s.turn = stDone, -1
	s.cond.Broadcast()
}

func (s *sched) enabled() (en []int, live bool) {
	for i, st := range s.state {
		switch st {
		case stParked:
			en = append(en, i)
		case stBlocked:
			if _, held := s.holders[s.want[i]]; !held {
				en = append(en, i)
			}
		}
		if st != stDone {
			live = true
		}
	}
	return en, live
}

// run drives the execution: choose(k, enabled, last) picks the driver of step k.
func (s *sched) run(choose func(k int, en []int, last int) int) error {
	last := -1
	for k := 0; ; k++ {
		s.mu.Lock()
		for s.busy() {
			s.cond.Wait()
		}
		en, live := s.enabled()
		if !live {
			s.mu.Unlock()
			return nil
		}
		if len(en) == 0 {
			s.mu.Unlock()
			return fmt.Errorf("deadlock: no driver can run (states %v, wants %v)", s.state, s.want)
		}
		c := choose(k, en, last)
		s.steps = append(s.steps, stepRec{driver: c, enabled: en})
		s.turn, last = c, c
		s.state[c] = stRunning
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

func (s *sched) busy() bool {
	for _, st := range s.state {
		if st == stStarting || st == stRunning {
			return true
		}
	}
	return false
}

// --- capabilities that report what they touch ------------------------------------------

// schedLocks is the scheduler's Locks capability; the driver's id travels in ctx.
type schedLocks struct {
	s     *sched
	inner hostabi.Locks
}

func (l schedLocks) TryLock(ctx context.Context, name string, _ time.Duration) (func(), error) {
	id := ctx.Value(driverKey{}).(int)
	for {
		l.s.mu.Lock()
		h, held := l.s.holders[name]
		l.s.mu.Unlock()
		l.s.record("lock:"+name, true)
		if held && h != id && !breakLocks {
			l.s.wait(id, stBlocked, name)
			continue
		}
		if breakLocks {
			return func() { l.s.record("lock:"+name, true) }, nil
		}
		release, err := l.inner.TryLock(ctx, name, 0) // an outside holder is busy at once
		if err != nil {
			return nil, err
		}
		l.s.mu.Lock()
		l.s.holders[name] = id
		l.s.mu.Unlock()
		return func() {
			l.s.record("lock:"+name, true)
			l.s.mu.Lock()
			delete(l.s.holders, name)
			l.s.mu.Unlock()
			release()
		}, nil
	}
}

type schedKeyring struct {
	s     *sched
	inner hostabi.Keyring
}

func (k schedKeyring) Get(ctx context.Context, svc, user string) (string, error) {
	k.s.record("kr:"+user, false)
	return k.inner.Get(ctx, svc, user)
}
func (k schedKeyring) Set(ctx context.Context, svc, user, v string) error {
	k.s.record("kr:"+user, true)
	return k.inner.Set(ctx, svc, user, v)
}
func (k schedKeyring) Delete(ctx context.Context, svc, user string) error {
	k.s.record("kr:"+user, true)
	return k.inner.Delete(ctx, svc, user)
}

type schedFiles struct {
	s     *sched
	inner hostabi.Files
}

func (l schedFiles) Read(ctx context.Context, name string) ([]byte, string, error) {
	l.s.record("file:"+name, false)
	return l.inner.Read(ctx, name)
}
func (l schedFiles) Update(ctx context.Context, name string, fn func([]byte, string) ([]byte, error)) error {
	l.s.record("file:"+name, true)
	return l.inner.Update(ctx, name, fn)
}
func (l schedFiles) Path(name string) string { return l.inner.Path(name) }
func (l schedFiles) Digest(ctx context.Context, path string, max int64) (string, error) {
	return l.inner.Digest(ctx, path, max)
}

// schedHTTP reports a request to the authorization server (its state is one resource).
type schedHTTP struct {
	s     *sched
	inner http.RoundTripper
}

func (o schedHTTP) RoundTrip(req *http.Request) (*http.Response, error) {
	o.s.record("as:"+req.URL.Host, true)
	return o.inner.RoundTrip(req)
}

// --- one execution ----------------------------------------------------------------------

type opSpec struct {
	process string // drivers with the same process share one Host (caches, single flight)
	op      string
	args    map[string]any
	secrets map[string]string
}

type race struct {
	name    string
	drivers []opSpec
	setup   func(w *memhost.World)
	// check returns what went wrong in one execution ("" when every invariant holds).
	check   func(w *memhost.World, outs []*hostabi.Outcome, host func() *host.Host) string
	maxRuns int // 0: exhaustive (fails if it would exceed 20000 runs)
	// stop, when set, ends the exploration early (a test of the explorer itself).
	stop func() bool
}

var raceCatalog = func() *catalog.Catalog {
	c, err := catalog.Load(conformance.BaseCatalog)
	if err != nil {
		panic(err)
	}
	return c
}()

func execute(ctx context.Context, e core.Engine, r race, choose func(int, []int, int) int) ([]stepRec, []*hostabi.Outcome, *memhost.World, error) {
	w := memhost.New(time.UnixMilli(1_790_000_000_000), 1)
	memshell.Serve(w, raceCatalog)
	r.setup(w)
	s := newSched(len(r.drivers))
	base := w.Capabilities("")
	hosts := map[string]*host.Host{}
	outs := make([]*hostabi.Outcome, len(r.drivers))
	errs := make([]error, len(r.drivers))
	var wg sync.WaitGroup
	for i, spec := range r.drivers {
		h, ok := hosts[spec.process]
		if !ok {
			caps := base
			caps.Keyring = schedKeyring{s, base.Keyring}
			caps.Files = schedFiles{s, base.Files}
			caps.HTTP = schedHTTP{s, base.HTTP}
			caps.Locks = schedLocks{s, base.Locks}
			h = host.New(caps)
			hid := spec.process
			h.Trace = func(line string) {
				// The process's memory of keyring slots: a read may fill it, a write changes it.
				if strings.HasPrefix(line, "==> keyring.") || strings.Contains(line, `"kind":"keyring.`) {
					s.record("memory:"+hid, true)
				}
			}
			h.Yield = func(ctx context.Context) { s.wait(ctx.Value(driverKey{}).(int), stParked, "") }
			hosts[spec.process] = h
		}
		i, spec := i, spec
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.done(i)
			s.wait(i, stParked, "")
			d := &hostabi.Driver{Engine: e, Host: h}
			outs[i], errs[i] = d.Run(context.WithValue(ctx, driverKey{}, i), spec.op, spec.args, spec.secrets)
		}()
	}
	err := s.run(choose)
	wg.Wait()
	for i, e := range errs {
		if e != nil && err == nil {
			err = fmt.Errorf("driver %d: %w", i, e)
		}
	}
	return s.steps, outs, w, err
}

type driverKey struct{}

// breakLocks, set by a test of the explorer itself, lets two drivers hold one lock.
var breakLocks = false

func dependent(a, b []access) bool {
	for _, x := range a {
		for _, y := range b {
			if x.res == y.res && (x.write || y.write) {
				return true
			}
		}
	}
	return false
}

type node struct {
	enabled   []int
	done      map[int]bool
	backtrack map[int]bool
}

func has(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

// explore runs the race over its interleavings (dynamic partial-order reduction) and
// checks every execution. It returns the number of executions.
func explore(t *testing.T, e core.Engine, r race) (runs int, exhaustive bool) {
	t.Helper()
	ctx := context.Background()
	var stack []*node
	var prefix []int
	limit := r.maxRuns
	if limit == 0 {
		limit = 20000
	}
	for runs = 1; ; runs++ {
		steps, outs, w, err := execute(ctx, e, r, func(k int, en []int, last int) int {
			if k < len(prefix) {
				if !has(en, prefix[k]) {
					t.Fatalf("replay diverged at step %d: %d not enabled in %v", k, prefix[k], en)
				}
				return prefix[k]
			}
			if has(en, last) {
				return last
			}
			return en[0]
		})
		order := make([]int, len(steps))
		for k, st := range steps {
			order[k] = st.driver
		}
		if err != nil {
			t.Fatalf("execution %d (order %v): %v", runs, order, err)
		}
		if msg := r.check(w, outs, func() *host.Host { return afterHost(w) }); msg != "" {
			t.Fatalf("execution %d (order %v): %s", runs, order, msg)
		}
		if r.stop != nil && r.stop() {
			return runs, false
		}
		for k := len(stack); k < len(steps); k++ {
			stack = append(stack, &node{enabled: steps[k].enabled,
				done: map[int]bool{steps[k].driver: true}, backtrack: map[int]bool{steps[k].driver: true}})
		}
		for j := range steps {
			for i := j - 1; i >= 0; i-- {
				if steps[i].driver == steps[j].driver || !dependent(steps[i].acc, steps[j].acc) {
					continue
				}
				if has(stack[i].enabled, steps[j].driver) {
					stack[i].backtrack[steps[j].driver] = true
				} else {
					for _, d := range stack[i].enabled {
						stack[i].backtrack[d] = true
					}
				}
				break
			}
		}
		k, next := len(stack)-1, -1
		for ; k >= 0 && next < 0; k-- {
			for _, d := range stack[k].enabled {
				if stack[k].backtrack[d] && !stack[k].done[d] {
					next = d
					break
				}
			}
		}
		if next < 0 {
			return runs, true
		}
		k++
		if runs >= limit {
			return runs, false
		}
		stack[k].done[next] = true
		stack = stack[:k+1]
		prefix = append(append([]int(nil), order[:k]...), next)
	}
}

// afterHost is a fresh process on the world, without a scheduler, for final checks.
func afterHost(w *memhost.World) *host.Host {
	caps := w.Capabilities("")
	return host.New(caps)
}

const svc = hostabi.DefaultService

// staleWorld: a google connection under client-1 whose access token must be refreshed.
func refreshWorld(w *memhost.World) {
	w.SetKeyring(svc, layout.ClientUser("google"), `{"client_id":"client-1","client_secret":"google-secret-1"}`)
	w.SetKeyring(svc, layout.ConnectionUser("google"), connBlob("client-1", "rt-google-1", 1789913600))
	w.Server.IssueToken("google", "rt-google-1", nil)
	w.SetFile(layout.Grants, []byte(`{"google": {"builtin:chat": ["gmail.readonly"]}}`))
}

func connBlob(clientID, rt string, connectedAt int64) string {
	b, _ := json.Marshal(map[string]any{"account_email": "user@example.com", "client_id_hash": layout.ClientIDHash(clientID),
		"connected_at": connectedAt, "refresh_token": rt, "scopes": []string{"gmail.readonly"}})
	return string(b)
}

var (
	getToken = opSpec{op: "get_access_token", args: map[string]any{"provider": "google", "scopes": []string{"gmail.readonly"}, "agent": "builtin:chat"}}
	connect  = opSpec{op: "connect", args: map[string]any{"connector": "google", "scopes": []string{"gmail.readonly"}, "grant_agents": []string{}}}
	forward  = opSpec{op: "import_forwarded",
		args: map[string]any{"provider": "google",
			"scopes": []string{"gmail.readonly"}, "account_email": "fwd@example.org", "grant_agents": []string{}},
		secrets: map[string]string{"client_id": "fwd-client-1", "client_secret": "fwd-secret-1", "refresh_token": "fwd-refresh-token-1"}}
)

func in(p string, o opSpec) opSpec { o.process = p; return o }

type stored struct {
	ClientIDHash string  `json:"client_id_hash"`
	RefreshToken string  `json:"refresh_token"`
	ConnectedAt  float64 `json:"connected_at"`
	Account      string  `json:"account_email"`
}

func storedConn(w *memhost.World) (stored, bool) {
	v, ok := w.Keyring()[svc+"\x00"+layout.ConnectionUser("google")]
	var s stored
	return s, ok && json.Unmarshal([]byte(v), &s) == nil
}

// commonChecks: no refresh token was ever presented twice, and the stored connection is
// still usable (a fresh process, two hours later, gets a token from it).
func commonChecks(e core.Engine, w *memhost.World, newHost func() *host.Host) string {
	if n := w.Server.Stats().ReuseDetected; n > 0 {
		return fmt.Sprintf("a refresh token was sent twice (%d reuses; sent %d tokens)", n, w.Server.Stats().RefreshRequests)
	}
	w.Advance(2 * time.Hour)
	d := &hostabi.Driver{Engine: e, Host: newHost()}
	out, err := d.Run(context.Background(), getToken.op, getToken.args, nil)
	if err != nil {
		return "final check: " + err.Error()
	}
	if out.Error != nil {
		return "the stored connection is no longer usable: " + out.Error.Message
	}
	return ""
}

func errCode(o *hostabi.Outcome) string {
	if o.Error == nil {
		return ""
	}
	return o.Error.Code
}

// firstOf is the first of found that says something went wrong ("" when none does).
func firstOf(found ...string) string {
	for _, f := range found {
		if f != "" {
			return f
		}
	}
	return ""
}

// failure is the first of outs that failed, said as who's, or "" when none did.
func failure(who string, outs []*hostabi.Outcome) string {
	for i, o := range outs {
		if o.Error != nil {
			return fmt.Sprintf("%s %d failed: %s", who, i, o.Error.Message)
		}
	}
	return ""
}

// reconnectionLost says how the reconnection's connection was lost, or "" when it is stored.
func reconnectionLost(w *memhost.World) string {
	c, ok := storedConn(w)
	if !ok || c.ConnectedAt != 1790000000 {
		return fmt.Sprintf("the reconnection was lost or overwritten by a stale write: %+v", c)
	}
	return ""
}

// refreshedOnce says how many token requests were sent when that was not one (why one).
func refreshedOnce(w *memhost.World, why string) string {
	if n := w.Server.Stats().RefreshRequests; n != 1 {
		return fmt.Sprintf("%d token requests, want 1 (%s)", n, why)
	}
	return ""
}

// raceEngine is a Wasm engine on raceCatalog, closed when t ends.
func raceEngine(t *testing.T) core.Engine {
	ctx := context.Background()
	e, err := engines.Wasm(ctx, raceCatalog.Data())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })
	return e
}

func TestInterleavings(t *testing.T) {
	e := raceEngine(t)

	races := []race{
		{
			name:    "two-refreshers-in-two-processes",
			drivers: []opSpec{in("A", getToken), in("B", getToken)},
			setup:   refreshWorld,
			// The access token is stored in the keyring: whichever process refreshes
			// second finds the first one's token under the lock and sends nothing.
			check: func(w *memhost.World, outs []*hostabi.Outcome, _ func() *host.Host) string {
				return firstOf(failure("refresher", outs), refreshedOnce(w, "the second process uses the first one's token"))
			},
		},
		{
			name:    "two-refreshers-in-one-process-share-one-request",
			drivers: []opSpec{in("A", getToken), in("A", getToken)},
			setup:   refreshWorld,
			check: func(w *memhost.World, outs []*hostabi.Outcome, _ func() *host.Host) string {
				return firstOf(failure("refresher", outs), refreshedOnce(w, "single flight"))
			},
		},
		{
			name:    "a-refresh-racing-a-reconnect",
			drivers: []opSpec{in("A", getToken), in("B", connect)},
			setup:   refreshWorld,
			check: func(w *memhost.World, outs []*hostabi.Outcome, _ func() *host.Host) string {
				if outs[0].Error != nil || outs[1].Error != nil {
					return fmt.Sprintf("refresh %q, reconnect %q: both must succeed", errCode(outs[0]), errCode(outs[1]))
				}
				return reconnectionLost(w)
			},
		},
		{
			name:    "a-forwarded-import-racing-a-tripwire-clear",
			drivers: []opSpec{in("A", getToken), in("B", forward)},
			setup: func(w *memhost.World) {
				refreshWorld(w)
				w.SetKeyring(svc, layout.ClientUser("google"), `{"client_id":"client-2","client_secret":"google-secret-2"}`)
				w.Server.IssueToken("google", "fwd-refresh-token-1", nil)
			},
			check: func(w *memhost.World, outs []*hostabi.Outcome, _ func() *host.Host) string {
				if outs[1].Error != nil {
					return "the import failed: " + outs[1].Error.Message
				}
				if c := errCode(outs[0]); c != "" && c != "REAUTH_REQUIRED" {
					return "the tripwire call ended with " + c
				}
				c, ok := storedConn(w)
				if !ok || c.ClientIDHash != layout.ClientIDHash("fwd-client-1") || c.Account != "fwd@example.org" {
					return fmt.Sprintf("the forwarded connection was lost: %+v (present %v)", c, ok)
				}
				cl := w.Keyring()[svc+"\x00"+layout.ClientUser("google")]
				if !strings.Contains(cl, `"fwd-client-1"`) {
					return "the forwarded client was lost"
				}
				return ""
			},
		},
		{
			name:    "two-refreshers-and-a-reconnect",
			drivers: []opSpec{in("A", getToken), in("B", getToken), in("C", connect)},
			setup:   refreshWorld,
			maxRuns: 500,
			check: func(w *memhost.World, outs []*hostabi.Outcome, _ func() *host.Host) string {
				return firstOf(failure("driver", outs), reconnectionLost(w))
			},
		},
	}
	for _, r := range races {
		// Each race's own invariants first, then those every race keeps (commonChecks).
		own := r.check
		r.check = func(w *memhost.World, outs []*hostabi.Outcome, host func() *host.Host) string {
			if f := own(w, outs, host); f != "" {
				return f
			}
			return commonChecks(e, w, host)
		}
		t.Run(r.name, func(t *testing.T) {
			runs, exhaustive := explore(t, e, r)
			if r.maxRuns == 0 && !exhaustive {
				t.Fatalf("not exhaustive after %d executions", runs)
			}
			t.Logf("%d executions (exhaustive: %v)", runs, exhaustive)
		})
	}
}

// TestExplorerFindsALostLock checks the explorer itself: with the lock broken, some
// interleaving of two refreshers sends one refresh token twice, and the explorer finds it.
func TestExplorerFindsALostLock(t *testing.T) {
	e := raceEngine(t)
	breakLocks = true
	defer func() { breakLocks = false }()
	found := false
	r := race{
		drivers: []opSpec{in("A", getToken), in("B", getToken)},
		setup:   refreshWorld,
		check: func(w *memhost.World, outs []*hostabi.Outcome, host func() *host.Host) string {
			if w.Server.Stats().ReuseDetected > 0 {
				found = true
			}
			return ""
		},
	}
	r.stop = func() bool { return found }
	runs, _ := explore(t, e, r)
	if !found {
		t.Fatalf("after %d executions no interleaving reused a refresh token", runs)
	}
	t.Logf("found a reuse after %d executions", runs)
}
