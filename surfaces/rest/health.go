package rest

import "time"

// healthEvent is the event the health pass emits; it never wakes the pass again.
const healthEvent = "connector.health"

// healthRetry is the wait after a health pass that could not run at all (the credential
// store or a ledger unavailable): the policy's schedule is then unknown.
const healthRetry = time.Minute

// healthLoop runs the health pass until the server stops. When to run next is the
// policy's answer (next_run_at); the loop only waits for it, or for a connector change
// (a new connection has its own schedule), whichever comes first.
func (s *Server) healthLoop() {
	defer close(s.healthDone)
	for {
		timer := time.NewTimer(s.healthPass())
		select {
		case <-s.base.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-s.healthWake:
			timer.Stop()
		}
	}
}

// healthPass runs one pass and says how long to wait for the next.
func (s *Server) healthPass() time.Duration {
	p, err := s.client.Maintain(s.base)
	if err != nil {
		if s.base.Err() == nil {
			s.log.Warn("health pass", "error", err.Error())
		}
		return healthRetry
	}
	for _, c := range p.Connections {
		if c.Action != "none" {
			s.log.Info("health", "connector", c.Connector, "state", c.State, "action", c.Action, "reason", c.Reason)
		}
	}
	return max(time.Until(time.UnixMilli(p.NextRunAt)), 0)
}

// wakeHealth asks for a pass now (one pending wake is enough).
func (s *Server) wakeHealth() {
	select {
	case s.healthWake <- struct{}{}:
	default:
	}
}
