package rest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/oprun"
	"sort"
	"sync"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Flow kinds. A kind is a way of completing an authorization: the policy's start_flow
// operation says whether one may start (one per connector at a time, whatever its kind),
// and the connect operation decides everything else. Each kind runs connect in its own
// goroutine (startFlow) and hands the page what the user needs: for pkce the
// authorization URL the page opens (its redirect comes back to grantwire's loopback
// listener), for device (RFC 8628) the user code, the verification URI and how long the
// code lives, while connect polls the token endpoint. Cancelling (DELETE
// /api/connectors/_flows/{flow_id}), listing, the outcome's event and shutdown work for
// every kind.
const (
	kindPKCE   = "pkce"
	kindDevice = "device"
)

// flow is one authorization waiting for the user.
type flow struct {
	ID        string    `json:"flow_id"`
	Kind      string    `json:"kind"`
	Connector string    `json:"connector_id"`
	Started   time.Time `json:"started_at"`
	// AuthorizationURL is where the user consents (pkce): the page opens it.
	AuthorizationURL string `json:"authorization_url,omitempty"`
	// The device code's public half (device): where to go, the code to enter there, when
	// it stops working and how often the token endpoint is polled at first. The device
	// code itself never reaches the server: it stays in the operation's host.
	VerificationURI         string     `json:"verification_uri,omitempty"`
	VerificationURIComplete string     `json:"verification_uri_complete,omitempty"`
	UserCode                string     `json:"user_code,omitempty"`
	ExpiresAt               *time.Time `json:"expires_at,omitempty"`
	expiresIn, interval     time.Duration

	shown  bool // the user was handed what they need: the flow is listed
	cancel context.CancelFunc
	done   chan struct{}
}

// flowRegistry holds the flows of a server, in memory.
type flowRegistry struct {
	mu sync.Mutex
	m  map[string]*flow
	wg sync.WaitGroup
}

func newFlowRegistry() *flowRegistry { return &flowRegistry{m: map[string]*flow{}} }

// pending lists the flows as start_flow takes them. Callers hold mu.
func (r *flowRegistry) pending() []map[string]string {
	out := []map[string]string{}
	for _, f := range r.m {
		out = append(out, map[string]string{"flow_id": f.ID, "connector": f.Connector, "kind": f.Kind})
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["flow_id"] < out[j]["flow_id"] })
	return out
}

// list returns a copy of every flow that reached the user, oldest first.
func (r *flowRegistry) list() []flow {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []flow{}
	for _, f := range r.m {
		if f.shown {
			out = append(out, flow{ID: f.ID, Kind: f.Kind, Connector: f.Connector, Started: f.Started, AuthorizationURL: f.AuthorizationURL,
				VerificationURI: f.VerificationURI, VerificationURIComplete: f.VerificationURIComplete, UserCode: f.UserCode, ExpiresAt: f.ExpiresAt})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

func (r *flowRegistry) get(id string) (*flow, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.m[id]
	return f, ok
}

func (r *flowRegistry) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

func (r *flowRegistry) cancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.m {
		f.cancel()
	}
}

// wait waits for every flow's goroutine to end, or ctx.
func (r *flowRegistry) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func newFlowID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// authorizeBody is the body of POST /api/connectors/{id}/authorize and of
// POST /api/connectors/{id}/authorize-device.
type authorizeBody struct {
	Scopes      []string `json:"scopes"`
	GrantAgents []string `json:"grant_agents"`
}

// errFlowEnded: the operation ended before it showed the user anything.
var errFlowEnded = errors.New("rest: the authorization ended before it reached the user")

// startFlow asks the policy whether a flow of this kind may start (start_flow), registers
// it, and runs the connect operation in its own goroutine with the flow's context. It
// returns once the operation has shown the user what they need (the authorization URL for
// pkce, the user code for device: the flow is then the page's), or with the operation's
// error when it fails before that (unknown connector, no client, no device authorization
// for this provider, …).
func (s *Server) startFlow(ctx context.Context, connector, kind string, body authorizeBody) (*flow, error) {
	s.flows.mu.Lock()
	if _, err := oprun.Of(s.client).Do(ctx, "start_flow", map[string]any{"connector": connector, "kind": kind, "pending": s.flows.pending()}, nil); err != nil {
		s.flows.mu.Unlock()
		return nil, err
	}
	fctx, cancel := context.WithCancel(s.base)
	f := &flow{ID: newFlowID(), Kind: kind, Connector: connector, Started: time.Now().UTC(), cancel: cancel, done: make(chan struct{})}
	s.flows.m[f.ID] = f
	s.flows.wg.Add(1)
	s.flows.mu.Unlock()

	shown := make(chan struct{}, 1)
	show := func(set func()) {
		s.flows.mu.Lock()
		set()
		f.shown = true
		s.flows.mu.Unlock()
		select {
		case shown <- struct{}{}:
		default:
		}
	}
	opts := grantwire.ConnectOptions{Timeout: s.cfg.FlowTimeout}
	switch kind {
	case kindDevice:
		opts.Flow = grantwire.FlowDevice
		opts.OnDeviceCode = func(d hostabi.DevicePrompt) {
			show(func() {
				at := time.Now().UTC().Add(d.ExpiresIn).Truncate(time.Second)
				f.VerificationURI, f.VerificationURIComplete, f.UserCode = d.VerificationURI, d.VerificationURIComplete, d.UserCode
				f.ExpiresAt, f.expiresIn, f.interval = &at, d.ExpiresIn, d.Interval
			})
		}
	default:
		opts.Browser = func(u string) error {
			show(func() { f.AuthorizationURL = u })
			return nil
		}
	}
	ended := make(chan error, 1)
	go func() {
		defer s.flows.wg.Done()
		defer close(f.done)
		defer cancel()
		res, err := s.client.Connect(fctx, connector, body.Scopes, body.GrantAgents, opts)
		s.flows.remove(f.ID)
		s.flows.mu.Lock()
		reached := f.shown
		s.flows.mu.Unlock()
		if reached {
			s.emitOutcome(f, res, err)
		}
		ended <- err
	}()
	select {
	case <-shown:
		return f, nil
	case err := <-ended:
		if err == nil {
			err = errFlowEnded
		}
		return nil, err
	case <-ctx.Done():
		cancel()
		<-f.done
		return nil, ctx.Err()
	}
}

// emitOutcome tells every page how a flow that reached the browser ended:
// connector.oauth.completed {connector_id, flow_id, account_email, scopes} or
// connector.oauth.error {connector_id, flow_id, error: {code, message, summary, fix}}.
// (The operation's own events, connector.connected and grant changes, come from the policy.)
func (s *Server) emitOutcome(f *flow, res *grantwire.ConnectResult, err error) {
	if err == nil {
		s.emit("connector.oauth.completed", map[string]any{
			"connector_id": f.Connector, "flow_id": f.ID, "account_email": res.Account, "scopes": jsonx.NonNil(res.Scopes),
		})
		return
	}
	var ge *grantwire.Error
	body := map[string]any{"code": "CANCELLED", "message": "the authorization was cancelled; nothing was stored", "summary": "the authorization was cancelled; nothing was stored", "fix": ""}
	if errors.As(err, &ge) {
		body = map[string]any{"code": ge.Code, "message": ge.Message, "summary": ge.Summary, "fix": ge.Fix}
	} else if !errors.Is(err, context.Canceled) {
		s.log.Error("authorization failed", "connector", f.Connector, "error", err.Error())
		body = map[string]any{"code": "INTERNAL", "message": "the authorization failed; see the server's log", "summary": "the authorization failed; see the server's log", "fix": ""}
	}
	s.emit("connector.oauth.error", map[string]any{"connector_id": f.Connector, "flow_id": f.ID, "error": body})
}
