package host

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
)

// Limits on what needs may ask for.
const (
	maxEntropyBytes   = 64
	defaultMaxBytes   = 1 << 20
	maxMaxBytes       = 16 << 20
	maxCallbackValue  = 512
	defaultTimeout    = 30 * time.Second
	maxTimeout        = 30 * time.Minute
	defaultDigestSize = 1 << 20
)

func (o *Op) fetch(ctx context.Context, n core.Need) (any, error) {
	c := o.h.caps
	switch n.Kind {
	case hostabi.NeedClockNow:
		return c.Clock.Now().UnixMilli(), nil
	case hostabi.NeedClockSleep:
		return o.sleep(ctx, n)
	case hostabi.NeedEntropy:
		var size int
		if err := n.Decode("bytes", &size); err != nil || size < 1 || size > maxEntropyBytes {
			return nil, fmt.Errorf("host: entropy needs bytes in 1..%d", maxEntropyBytes)
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(c.Entropy, b); err != nil {
			return hostError(fmt.Errorf("no entropy: %w", err))
		}
		return o.register(n.Key, "value", base64.RawURLEncoding.EncodeToString(b)), nil
	case hostabi.NeedEnvGet:
		name := n.Str("name")
		if name == "" {
			return nil, errors.New("host: env.get needs a name")
		}
		v := c.Getenv(name)
		if v == "" {
			return map[string]any{"found": false}, nil
		}
		if n.Bool("secret") {
			return map[string]any{"found": true, "value": o.register(n.Key, "value", v)}, nil
		}
		return map[string]any{"found": true, "value": v}, nil
	case hostabi.NeedKeyringInfo:
		return map[string]any{"service": c.Service}, nil
	case hostabi.NeedKeyringGet:
		return o.keyringGet(ctx, n)
	case hostabi.NeedLedgerRead: // FetchToken asks ledgerReadFact itself
		raw, _, err := o.ledgerReadFact(ctx, n)
		return raw, err
	case hostabi.NeedFileDigest:
		max := int64(defaultDigestSize)
		if n.Params["max_bytes"] != nil {
			if err := n.Decode("max_bytes", &max); err != nil || max < 1 || max > maxMaxBytes {
				return nil, errors.New("host: file.digest max_bytes out of range")
			}
		}
		sum, err := c.Files.Digest(ctx, n.Str("path"), max)
		if err != nil {
			return map[string]any{"found": false, "reason": err.Error()}, nil
		}
		return map[string]any{"found": true, "sha256": sum}, nil
	case hostabi.NeedLockAcquire:
		name := n.Str("name")
		if name == "" {
			return nil, errors.New("host: lock.acquire needs a name")
		}
		if o.Held(name) {
			return hostabi.Held, nil
		}
		var wait int64
		_ = n.Decode("wait_ms", &wait)
		release, err := c.Locks.TryLock(ctx, name, time.Duration(wait)*time.Millisecond)
		if errors.Is(err, hostabi.ErrBusy) {
			return hostabi.Busy, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return hostError(err)
		}
		o.locks[name] = release
		o.gen = generationSnapshot{} // what the memory answers from now on is judged anew
		return hostabi.Held, nil
	case hostabi.NeedHTTPRequest:
		return o.httpRequest(ctx, n.Key, n.Params)
	case hostabi.NeedLoopbackOpen:
		return o.loopbackOpen(ctx, n.Str("connector"), n.Str("mode"))
	case hostabi.NeedLoopbackWait:
		return o.loopbackWait(ctx, n)
	case hostabi.NeedPromptShow:
		return o.promptShow(ctx, n)
	case hostabi.NeedDPoPKey:
		return o.dpopKey(n)
	}
	return nil, fmt.Errorf("host: unknown need kind %q", n.Kind)
}

// sleep waits ms milliseconds (a simulated clock advances instead) and answers the clock.
// The caller's cancellation ends the wait and, through the driver, the operation.
func (o *Op) sleep(ctx context.Context, n core.Need) (any, error) {
	var ms int64
	if err := n.Decode("ms", &ms); err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > maxTimeout {
		return nil, errors.New("host: clock.sleep needs ms in 0..1800000")
	}
	d := time.Duration(ms) * time.Millisecond
	if s, ok := o.h.caps.Clock.(hostabi.Sleeper); ok {
		if err := s.Sleep(ctx, d); err != nil {
			return nil, err
		}
	} else if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return o.h.caps.Clock.Now().UnixMilli(), nil
}

// promptShow shows a device code: to the prompter of the operation's context (a web
// server's caller) when there is one, else through the shell's Prompt capability.
func (o *Op) promptShow(ctx context.Context, n core.Need) (any, error) {
	var ms int64
	if err := n.Decode("expires_in_ms", &ms); err != nil || ms < 0 {
		return nil, errors.New("host: prompt.show needs expires_in_ms")
	}
	var interval int64 // optional
	if _, ok := n.Params["interval_ms"]; ok {
		if err := n.Decode("interval_ms", &interval); err != nil || interval < 0 {
			return nil, errors.New("host: prompt.show's interval_ms is a number of milliseconds")
		}
	}
	p := hostabi.DevicePrompt{
		Connector: n.Str("connector"), VerificationURI: n.Str("verification_uri"),
		VerificationURIComplete: n.Str("verification_uri_complete"), UserCode: n.Str("user_code"),
		ExpiresIn: time.Duration(ms) * time.Millisecond, Interval: time.Duration(interval) * time.Millisecond,
	}
	if p.VerificationURI == "" || p.UserCode == "" {
		return nil, errors.New("host: prompt.show needs verification_uri and user_code")
	}
	pr := hostabi.PrompterFrom(ctx)
	if pr == nil {
		pr = o.h.caps.Prompt
	}
	if pr == nil {
		return map[string]any{"shown": false, "reason": "this shell cannot show a device code"}, nil
	}
	err := pr.Show(ctx, p)
	switch {
	case err == nil:
		return map[string]any{"shown": true}, nil
	case errors.Is(err, hostabi.ErrUnavailable):
		return map[string]any{"shown": false, "reason": err.Error()}, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return hostError(err)
}

func (o *Op) loopbackOpen(ctx context.Context, connector, mode string) (any, error) {
	if o.callback != nil {
		return map[string]any{"redirect_uri": o.callback.RedirectURI()}, nil
	}
	if mode == "" {
		mode = hostabi.ModeListen
	}
	if mode != hostabi.ModeListen && mode != hostabi.ModePaste {
		return nil, fmt.Errorf("host: loopback.open mode %q is neither listen nor paste", mode)
	}
	if o.h.caps.Loopback == nil {
		return map[string]any{"unavailable": "this shell has no loopback"}, nil
	}
	cb, err := o.h.caps.Loopback.Open(ctx, connector, mode)
	if errors.Is(err, hostabi.ErrUnavailable) {
		return map[string]any{"unavailable": err.Error()}, nil
	}
	if err != nil {
		return hostError(err)
	}
	o.callback = cb
	return map[string]any{"redirect_uri": cb.RedirectURI()}, nil
}

func (o *Op) loopbackWait(ctx context.Context, n core.Need) (any, error) {
	if o.callback == nil {
		return nil, errors.New("host: loopback.wait before loopback.open")
	}
	authURL, err := o.templateString(n.Params["url"])
	if err != nil {
		return nil, err
	}
	state, err := o.templateString(n.Params["state"])
	if err != nil {
		return nil, err
	}
	timeout, err := timeoutOf(n.Params["timeout_ms"])
	if err != nil {
		return nil, err
	}
	got, err := o.callback.Wait(ctx, hostabi.Authorization{
		URL: authURL, State: state, Connector: n.Str("connector"), Alternative: n.Str("alternative"), Timeout: timeout,
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return map[string]any{"status": "timeout"}, nil
	}
	if errors.Is(err, hostabi.ErrUnavailable) {
		return map[string]any{"status": "unavailable", "reason": err.Error()}, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return hostError(err)
	}
	params := map[string]any{}
	for k, v := range got {
		if k == "code" {
			params[k] = o.register(n.Key, "code", v)
			continue
		}
		if len(k) > 64 {
			continue
		}
		if len(v) > maxCallbackValue {
			v = v[:maxCallbackValue]
		}
		params[k] = strings.ToValidUTF8(v, "\uFFFD")
	}
	return map[string]any{"status": "callback", "params": params}, nil
}
