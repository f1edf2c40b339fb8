package hostabi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/grantwire/grantwire/core"
)

// Apply applies effects in order and stops at the first failure. Consecutive ledger
// effects on one ledger are written together (every precondition checked first). Effects
// marked as a transaction are applied together: if one fails, every target they touched
// is restored before Apply returns.
//
// # Errors
//
// A failed precondition wraps ErrConflict: the driver restarts the operation from fresh
// facts. Effects before the failing one stay applied; each of them was conditional on
// what it replaced, so a restart decides again on the world as it now is.
func (o *Op) Apply(ctx context.Context, effects []core.Effect) error {
	for i := 0; i < len(effects); {
		j := i + 1
		switch {
		case effects[i].Tx:
			for j < len(effects) && effects[j].Tx {
				j++
			}
			if err := o.applyTx(ctx, effects[i:j]); err != nil {
				return err
			}
		case isLedger(effects[i]):
			for j < len(effects) && isLedger(effects[j]) && !effects[j].Tx && effects[j].Str("ledger") == effects[i].Str("ledger") {
				j++
			}
			o.yield(ctx)
			if err := o.applyLedger(ctx, effects[i:j]); err != nil {
				o.trace("==> apply %s x%d\n<== error %v", effects[i].Kind, j-i, err)
				return err
			}
			for _, e := range effects[i:j] {
				o.trace("==> apply %s", effectLine(e))
			}
		default:
			o.yield(ctx)
			if err := o.apply(ctx, effects[i]); err != nil {
				o.trace("==> apply %s\n<== error %v", effectLine(effects[i]), err)
				return err
			}
			o.trace("==> apply %s", effectLine(effects[i]))
		}
		i = j
	}
	return nil
}

func effectLine(e core.Effect) string {
	b, _ := json.Marshal(e)
	return string(b)
}

func isLedger(e core.Effect) bool { return e.Kind == "ledger.put" || e.Kind == "ledger.delete" }

func (o *Op) applyLedger(ctx context.Context, effects []core.Effect) error {
	name := effects[0].Str("ledger")
	d, err := readLedger(ctx, o.h.caps.Ledgers, name)
	if err != nil {
		return err
	}
	for _, e := range effects {
		var path []string
		if err := e.Decode("path", &path); err != nil {
			return fmt.Errorf("hostabi: %s path: %w", e.Kind, err)
		}
		ok, err := d.matches(path, e.Params["expect"])
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s entry %v changed", ErrConflict, name, path)
		}
		if e.Kind == "ledger.delete" {
			err = d.del(path)
		} else {
			var v any
			if err := decodeNumber(e.Params["value"], &v); err != nil {
				return err
			}
			err = d.put(path, v)
		}
		if err != nil {
			return err
		}
	}
	return o.h.caps.Ledgers.Write(ctx, name, d.bytes(), d.version)
}

func decodeNumber(raw json.RawMessage, v *any) error {
	if len(raw) == 0 {
		return errors.New("hostabi: missing value")
	}
	return json.Unmarshal(raw, v)
}

// expectation is the precondition of a keyring effect.
type expectation struct {
	Found   *bool  `json:"found"`
	Version string `json:"version"`
	Refresh string `json:"refresh"`
}

func (o *Op) checkBlob(e core.Effect, blob string, found bool, parse func(string) (connectionBlob, bool)) error {
	raw, ok := e.Params["expect"]
	if !ok {
		return nil
	}
	var x expectation
	if err := json.Unmarshal(raw, &x); err != nil {
		return fmt.Errorf("hostabi: malformed expect: %w", err)
	}
	switch {
	case x.Found != nil && !*x.Found:
		if found {
			return fmt.Errorf("%w: %s appeared", ErrConflict, e.Kind)
		}
	case x.Version != "":
		if found && Version(blob) != x.Version {
			return fmt.Errorf("%w: %s found another version", ErrConflict, e.Kind)
		}
		if !found && e.Kind != "connection.delete" {
			return fmt.Errorf("%w: %s target vanished", ErrConflict, e.Kind)
		}
	case x.Refresh != "":
		cb, ok := parse(blob)
		if found && (!ok || Digest(cb.RefreshToken) != x.Refresh) {
			return fmt.Errorf("%w: the stored refresh token is no longer the one sent", ErrConflict)
		}
		if !found && e.Kind != "connection.delete" {
			return fmt.Errorf("%w: the connection was removed", ErrConflict)
		}
	}
	return nil
}

func (o *Op) apply(ctx context.Context, e core.Effect) error {
	c := o.h.caps
	p := e.Str("provider")
	switch e.Kind {
	case "connection.put":
		blob, found, err := o.readBlob(ctx, ConnectionUser(p))
		if err != nil {
			return err
		}
		if err := o.checkBlob(e, blob, found, parseConnection); err != nil {
			return err
		}
		cb, err := o.newConnection(e)
		if err != nil {
			return err
		}
		// A corrupt state mirror must stop the effect before the secret is stored, or the
		// operation would report CORRUPT_LEDGER ("nothing was changed") after storing it.
		if _, err := readLedger(ctx, o.h.caps.Ledgers, LedgerState); err != nil {
			return err
		}
		if err := c.Keyring.Set(ctx, c.Service, ConnectionUser(p), cb.encode()); err != nil {
			return err
		}
		return o.mirror(ctx, p, cb.stateEntry())
	case "connection.delete":
		blob, found, err := o.readBlob(ctx, ConnectionUser(p))
		if err != nil {
			return err
		}
		if err := o.checkBlob(e, blob, found, parseConnection); err != nil {
			return err
		}
		if _, err := readLedger(ctx, o.h.caps.Ledgers, LedgerState); err != nil {
			return err // checked before deleting, like connection.put
		}
		if found {
			if err := c.Keyring.Delete(ctx, c.Service, ConnectionUser(p)); err != nil {
				return err
			}
		}
		return o.mirror(ctx, p, nil)
	case "connection.set_refresh":
		blob, found, err := o.readBlob(ctx, ConnectionUser(p))
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: the connection was removed", ErrConflict)
		}
		if err := o.checkBlob(e, blob, found, parseConnection); err != nil {
			return err
		}
		cb, _ := parseConnection(blob)
		if cb.RefreshToken, err = o.ref(e.Params["refresh"]); err != nil {
			return err
		}
		return c.Keyring.Set(ctx, c.Service, ConnectionUser(p), cb.encode())
	case "client.put":
		blob, found, err := o.readBlob(ctx, ClientUser(p))
		if err != nil {
			return err
		}
		if err := o.checkBlob(e, blob, found, parseConnection); err != nil {
			return err
		}
		var cb clientBlob
		if cb.ClientID, err = o.ref(e.Params["client_id"]); err != nil {
			return err
		}
		if raw := e.Params["client_secret"]; len(raw) > 0 && string(raw) != "null" {
			if cb.ClientSecret, err = o.ref(raw); err != nil {
				return err
			}
		}
		var tenant *string
		_ = e.Decode("tenant", &tenant)
		cb.Tenant = tenant
		enc, _ := json.Marshal(cb)
		if err := c.Keyring.Set(ctx, c.Service, ClientUser(p), string(enc)); err != nil {
			return err
		}
		o.h.mu.Lock()
		delete(o.h.clients, p) // the next read is fresh
		o.h.mu.Unlock()
		return nil
	case "token.put":
		var t tokenEntry
		var err error
		if t.access, err = o.ref(e.Params["access"]); err != nil {
			return err
		}
		if err := errors.Join(e.Decode("expires_at", &t.expiresAt), e.Decode("client_id_hash", &t.clientIDHash),
			e.Decode("connected_at", &t.connectedAt)); err != nil {
			return fmt.Errorf("hostabi: token.put: %w", err)
		}
		o.h.mu.Lock()
		o.h.tokens[p] = t
		o.h.mu.Unlock()
		return nil
	case "token.delete":
		o.h.mu.Lock()
		delete(o.h.tokens, p)
		o.h.mu.Unlock()
		return nil
	case "mcp.put":
		return o.mcpPut(ctx, e)
	case "mcp.delete":
		return o.mcpDelete(ctx, e.Str("connector"))
	case "event.emit":
		if c.Events != nil {
			c.Events.Emit(Event{Type: e.Str("type"), Payload: e.Params["payload"]})
		}
		return nil
	}
	return fmt.Errorf("hostabi: unknown effect kind %q", e.Kind)
}

func (o *Op) newConnection(e core.Effect) (connectionBlob, error) {
	var cb connectionBlob
	var connectedAt int64
	err := errors.Join(e.Decode("account", &cb.AccountEmail), e.Decode("scopes", &cb.Scopes),
		e.Decode("connected_at", &connectedAt), e.Decode("client_id_hash", &cb.ClientIDHash))
	if err != nil {
		return cb, fmt.Errorf("hostabi: connection.put: %w", err)
	}
	if e.Has("tenant") {
		_ = e.Decode("tenant", &cb.Tenant)
	}
	if e.Has("account_type") {
		_ = e.Decode("account_type", &cb.AccountType)
	}
	cb.ConnectedAt = float64(connectedAt) / 1000
	cb.Scopes = nonNil(cb.Scopes)
	cb.RefreshToken, err = o.ref(e.Params["refresh"])
	return cb, err
}

// mirror keeps connectors/state.json in step with the keyring (nil removes the entry). It
// is a non-secret view for listings; decisions always read the keyring.
func (o *Op) mirror(ctx context.Context, p string, entry map[string]any) error {
	l := o.h.caps.Ledgers
	for attempt := 0; ; attempt++ {
		d, err := readLedger(ctx, l, LedgerState)
		if err != nil {
			return err
		}
		if entry == nil {
			if _, ok := d.entries[p]; !ok {
				return nil
			}
			delete(d.entries, p)
		} else {
			var v any
			if err := json.Unmarshal(mustJSON(entry), &v); err != nil {
				return err
			}
			d.entries[p] = v
		}
		err = l.Write(ctx, LedgerState, d.bytes(), d.version)
		if !errors.Is(err, ErrConflict) || attempt == 8 {
			return err
		}
	}
}

func (o *Op) mcpPut(ctx context.Context, e core.Effect) error {
	c := o.h.caps
	id := e.Str("connector")
	var env map[string]json.RawMessage
	if err := e.Decode("env", &env); err != nil {
		return fmt.Errorf("hostabi: mcp.put env: %w", err)
	}
	old, _, err := o.mcpEntry(ctx, id)
	if err != nil {
		return err
	}
	refs := map[string]any{}
	for _, k := range sortedKeys(env) {
		v, err := o.ref(env[k])
		if err != nil {
			return err
		}
		if err := c.Keyring.Set(ctx, c.Service, MCPUser(id, k), v); err != nil {
			return err
		}
		refs[k] = map[string]any{"$keyring": c.Service + ":" + MCPUser(id, k)}
	}
	for _, k := range old.keys {
		if _, keep := env[k]; !keep {
			if err := c.Keyring.Delete(ctx, c.Service, MCPUser(id, k)); err != nil {
				return err
			}
		}
	}
	var args []any
	var command string
	_ = e.Decode("args", &args)
	_ = e.Decode("command", &command)
	if args == nil {
		args = []any{}
	}
	return o.updateLedger(ctx, LedgerMCPServers, func(d *ledgerDoc) {
		d.entries[id] = map[string]any{"command": command, "args": args, "env": refs}
	})
}

func (o *Op) mcpDelete(ctx context.Context, id string) error {
	c := o.h.caps
	old, found, err := o.mcpEntry(ctx, id)
	if err != nil || !found {
		return err
	}
	for _, k := range old.keys {
		if err := c.Keyring.Delete(ctx, c.Service, MCPUser(id, k)); err != nil {
			return err
		}
	}
	return o.updateLedger(ctx, LedgerMCPServers, func(d *ledgerDoc) { delete(d.entries, id) })
}

// updateLedger applies an unconditional change with retries on concurrent writes.
func (o *Op) updateLedger(ctx context.Context, name string, change func(*ledgerDoc)) error {
	for attempt := 0; ; attempt++ {
		d, err := readLedger(ctx, o.h.caps.Ledgers, name)
		if err != nil {
			return err
		}
		change(d)
		err = o.h.caps.Ledgers.Write(ctx, name, d.bytes(), d.version)
		if !errors.Is(err, ErrConflict) || attempt == 8 {
			return err
		}
	}
}

// applyTx applies a transaction: every keyring target and token entry it touches is
// snapshotted first and restored if any effect fails.
func (o *Op) applyTx(ctx context.Context, effects []core.Effect) error {
	c := o.h.caps
	type saved struct {
		user  string
		blob  string
		found bool
	}
	var blobs []saved
	tokens := map[string]*tokenEntry{}
	for _, e := range effects {
		p := e.Str("provider")
		switch e.Kind {
		case "client.put":
			b, f, err := o.readBlob(ctx, ClientUser(p))
			if err != nil {
				return err
			}
			blobs = append(blobs, saved{ClientUser(p), b, f})
		case "connection.put", "connection.delete", "connection.set_refresh":
			b, f, err := o.readBlob(ctx, ConnectionUser(p))
			if err != nil {
				return err
			}
			blobs = append(blobs, saved{ConnectionUser(p), b, f})
		case "token.put", "token.delete":
			o.h.mu.Lock()
			if t, ok := o.h.tokens[p]; ok {
				tokens[p] = &t
			} else {
				tokens[p] = nil
			}
			o.h.mu.Unlock()
		}
	}
	for _, e := range effects {
		o.yield(ctx)
		err := o.apply(ctx, e)
		if err == nil {
			o.trace("==> apply %s", effectLine(e))
			continue
		}
		o.trace("==> apply %s\n<== error %v (restoring the transaction)", effectLine(e), err)
		var rerr error
		for i := len(blobs) - 1; i >= 0; i-- {
			s := blobs[i]
			if s.found {
				rerr = errors.Join(rerr, c.Keyring.Set(ctx, c.Service, s.user, s.blob))
			} else {
				rerr = errors.Join(rerr, c.Keyring.Delete(ctx, c.Service, s.user))
			}
		}
		o.h.mu.Lock()
		for p, t := range tokens {
			if t == nil {
				delete(o.h.tokens, p)
			} else {
				o.h.tokens[p] = *t
			}
		}
		for _, e := range effects {
			delete(o.h.clients, e.Str("provider"))
		}
		o.h.mu.Unlock()
		for _, e := range effects {
			if e.Kind == "connection.put" || e.Kind == "connection.delete" {
				if b, f, err2 := o.readBlob(ctx, ConnectionUser(e.Str("provider"))); err2 == nil {
					if cb, ok := parseConnection(b); f && ok {
						rerr = errors.Join(rerr, o.mirror(ctx, e.Str("provider"), cb.stateEntry()))
					} else if !f {
						rerr = errors.Join(rerr, o.mirror(ctx, e.Str("provider"), nil))
					}
				}
			}
		}
		if rerr != nil {
			return errors.Join(err, fmt.Errorf("hostabi: restoring the transaction failed: %w", rerr))
		}
		return err
	}
	return nil
}
