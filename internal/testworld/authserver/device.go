package authserver

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The device authorization grant (RFC 8628): a device authorization endpoint
// (…/devicecode) that issues a device code and a user code, a verification page
// (…/device) where the user approves or denies a code, and the token endpoint's
// device_code grant, polled by the client. The user is scriptable: approve, deny, never
// decide (the code expires), and answer the first polls with authorization_pending or
// slow_down; or the verification page decides (the stand-in browser opens
// verification_uri_complete), or a test calls Approve/Deny. A poll sooner than the
// interval after the previous one is counted (Stats.TooFast), a check of the client, and
// answered as usual.

// DeviceGrant is the grant type of a device access token request (RFC 8628 §3.4).
const DeviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

// Device decisions of a scripted user.
const (
	DeviceApprove = "approve" // tokens, as the Consent says
	DeviceDeny    = "deny"    // access_denied (or the Consent's Error)
	DeviceExpire  = "expire"  // never decides: authorization_pending until the code expires
)

// DeviceUser scripts the user of a provider's next device code.
type DeviceUser struct {
	// Polls answer the first polls, before the decision: "authorization_pending" or
	// "slow_down".
	Polls []string
	// Decision is DeviceApprove, DeviceDeny, DeviceExpire, or "" (the verification page,
	// Approve or Deny decides; until then the polls are pending).
	Decision string
	// Consent shapes the approval's tokens (Scopes, AccessToken, RefreshToken, ExpiresIn,
	// Account, NoRefresh); with Error and Status the approval's poll fails with them. For
	// DeviceDeny, Error replaces access_denied (authorization_declined, say).
	Consent Consent
	// ExpiresIn and Interval of the code in seconds (0: the configuration's).
	ExpiresIn, Interval int64
	// Error refuses the device authorization request itself, with Status (default 400).
	Error  string
	Status int
}

type deviceCode struct {
	userCode  string
	clientID  string
	provider  string
	scopes    []string
	expires   time.Time
	interval  time.Duration
	lastPoll  time.Time
	polls     int
	user      DeviceUser
	decision  string // "", approve, deny
	used      bool
	scripted  bool
	pageBased bool // decided on the verification page
}

// ScriptDevice queues what the users of a provider's next device codes do, in order.
func (s *Server) ScriptDevice(provider string, u ...DeviceUser) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range u {
		x.Polls = slices.Clone(x.Polls)
		x.Consent.Scopes = slices.Clone(x.Consent.Scopes)
		s.deviceUsers[provider] = append(s.deviceUsers[provider], x)
	}
}

// Approve makes the user approve the device code shown as userCode; Deny refuses it.
// Both report whether a pending code of that name exists.
func (s *Server) Approve(userCode string) bool { return s.decide(userCode, DeviceApprove) }

// Deny refuses the device code shown as userCode (see Approve).
func (s *Server) Deny(userCode string) bool { return s.decide(userCode, DeviceDeny) }

func (s *Server) decide(userCode, decision string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.byUserCode(userCode)
	if d == nil || d.decision != "" || d.used || !s.cfg.Now().Before(d.expires) {
		return false
	}
	d.decision = decision
	if decision == DeviceApprove {
		s.stats.DeviceApprovals++
	} else {
		s.stats.DeviceDenials++
	}
	return true
}

func (s *Server) byUserCode(userCode string) *deviceCode {
	want := normalizeUserCode(userCode)
	for _, d := range s.devices {
		if subtle.ConstantTimeCompare([]byte(normalizeUserCode(d.userCode)), []byte(want)) == 1 {
			return d
		}
	}
	return nil
}

// normalizeUserCode compares user codes as people type them: case and dashes ignored.
func normalizeUserCode(c string) string {
	return strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(c))
}

// DeviceAuthorizationURL is the device authorization endpoint of the root provider.
func (s *Server) DeviceAuthorizationURL() string { return s.base + "/devicecode" }

// VerificationURL is where the root provider's users enter a user code.
func (s *Server) VerificationURL() string { return s.base + "/device" }

const userCodeLetters = "BCDFGHJKLMNPQRSTVWXZ" // no vowels: no words (RFC 8628 §6.1)

func randomUserCode() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	out := make([]byte, 0, 9)
	for i, x := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, userCodeLetters[int(x)%len(userCodeLetters)])
	}
	return string(out)
}

// deviceAuthorization issues a device code (RFC 8628 §3.1-3.2); its verification page is
// verify ("": the page beside this endpoint, on the address the client used).
func (s *Server) deviceAuthorization(w http.ResponseWriter, r *http.Request, provider, verify string) {
	if !posted(w, r) {
		return
	}
	if err := readForm(w, r); err != nil {
		s.mu.Lock()
		s.oauthError(w, http.StatusBadRequest, "invalid_request")
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The client authenticates as at the token endpoint (RFC 8628 §3.1 applies RFC 6749
	// §3.2.1): a confidential client without its secret is refused, as oidc-provider does.
	id, ok := s.authenticate(r, provider)
	if !ok || id == "" {
		s.oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	var user DeviceUser
	scripted, away := false, false
	if q := s.deviceUsers[provider]; len(q) > 0 {
		user, s.deviceUsers[provider], scripted = q[0], q[1:], true
	} else if a, ok := s.nextAuthorization(provider); ok {
		user, scripted, away = deviceUserOf(a), true, a.Status == "interactive_required"
	} else if s.cfg.DeviceApprove {
		user, scripted = DeviceUser{Decision: DeviceApprove}, true
	}
	s.away[provider] = away
	if user.Error != "" {
		status := user.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		s.oauthError(w, status, user.Error)
		return
	}
	expiresIn, interval := user.ExpiresIn, user.Interval
	if expiresIn == 0 {
		expiresIn = s.cfg.DeviceExpiresIn
	}
	if interval == 0 {
		interval = s.cfg.DeviceInterval
	}
	code := s.token("device", provider)
	userCode := randomUserCode()
	if s.cfg.SequentialNames {
		userCode = fmt.Sprintf("CODE-%04d", s.codesIssued)
	}
	for s.byUserCode(userCode) != nil {
		userCode = randomUserCode()
	}
	scopes := strings.Fields(r.PostForm.Get("scope"))
	if s.cfg.GrantedScopes != nil {
		scopes = slices.Clone(s.cfg.GrantedScopes)
	}
	s.devices[code] = &deviceCode{userCode: userCode, clientID: id, provider: provider, scopes: scopes,
		expires: s.cfg.Now().Add(time.Duration(expiresIn) * time.Second), interval: time.Duration(interval) * time.Second,
		user: user, scripted: scripted}
	s.stats.DeviceCodes++
	if verify == "" {
		verify = "http://" + r.Host + strings.TrimSuffix(r.URL.Path, "/devicecode") + "/device"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"device_code": code, "user_code": userCode, "verification_uri": verify,
		"verification_uri_complete": verify + "?user_code=" + userCode,
		"expires_in":                expiresIn, "interval": interval,
	})
}

const (
	pageDeviceForm     = "<!doctype html><title>authserver</title><form method=post><label>Code <input name=user_code></label> <button name=decision value=approve>Allow</button> <button name=decision value=deny>Deny</button></form>\n"
	pageDeviceApproved = "<!doctype html><title>authserver</title><p>Approved. Return to your device.</p>\n"
	pageDeviceDenied   = "<!doctype html><title>authserver</title><p>Denied. Return to your device.</p>\n"
	pageDeviceUnknown  = "<!doctype html><title>authserver</title><p>That code is unknown, used or expired.</p>\n"
)

// verification is the page where the user enters a code (RFC 8628 §3.3): with a
// user_code (verification_uri_complete, or the form) it decides at once: approve (deny
// when the server is configured to deny, or decision=deny). Pages echo nothing.
func (s *Server) verification(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	_ = r.ParseForm()
	code := r.Form.Get("user_code")
	if code == "" {
		_, _ = w.Write([]byte(pageDeviceForm))
		return
	}
	decision := DeviceApprove
	if s.denies() || r.Form.Get("decision") == DeviceDeny {
		decision = DeviceDeny
	}
	if !s.decide(code, decision) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(pageDeviceUnknown))
		return
	}
	if decision == DeviceDeny {
		_, _ = w.Write([]byte(pageDeviceDenied))
		return
	}
	_, _ = w.Write([]byte(pageDeviceApproved))
}

func (s *Server) denies() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Deny
}

// devicePoll answers a device access token request (RFC 8628 §3.4-3.5); s.mu is held and
// the client is authenticated. It answers nothing and reports hold when the scripted user
// says the poll gets no answer in time ("timeout").
func (s *Server) devicePoll(w http.ResponseWriter, r *http.Request, clientID, provider string) (hold bool) {
	s.stats.DevicePolls++
	d, ok := s.devices[r.PostForm.Get("device_code")]
	now := s.cfg.Now()
	switch {
	case !ok || d.provider != provider || d.clientID != clientID || d.used:
		s.oauthError(w, http.StatusBadRequest, "invalid_grant")
		return false
	case !now.Before(d.expires):
		s.oauthError(w, http.StatusBadRequest, "expired_token")
		return false
	}
	if !d.lastPoll.IsZero() && now.Sub(d.lastPoll) < d.interval*9/10 {
		s.stats.TooFast++
	}
	d.lastPoll = now
	u := d.user
	if d.polls < len(u.Polls) {
		p := u.Polls[d.polls]
		d.polls++
		switch p {
		case "timeout":
			return true
		case "slow_down":
			d.interval += 5 * time.Second
		}
		s.oauthError(w, http.StatusBadRequest, p)
		return false
	}
	d.polls++
	decision := d.decision
	if decision == "" && (u.Decision == DeviceApprove || u.Decision == DeviceDeny) {
		decision = u.Decision
		if decision == DeviceApprove {
			s.stats.DeviceApprovals++
		} else {
			s.stats.DeviceDenials++
		}
		d.decision = decision
	}
	switch decision {
	case "":
		s.oauthError(w, http.StatusBadRequest, "authorization_pending")
		return false
	case DeviceDeny:
		code := "access_denied"
		if u.Decision == DeviceDeny && u.Consent.Error != "" {
			code = u.Consent.Error
		}
		s.oauthError(w, http.StatusBadRequest, code)
		return false
	}
	d.used = true
	if cs := u.Consent; cs.Error != "" {
		status := cs.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		s.oauthError(w, status, cs.Error)
		return false
	}
	s.families++
	m := mint{family: s.families, scopes: d.scopes, provider: provider, account: s.cfg.Account, refresh: true,
		expiresIn: s.cfg.ExpiresIn}
	cs := u.Consent
	if cs.Scopes != nil {
		m.scopes = slices.Clone(cs.Scopes)
	}
	m.consent(cs)
	s.stats.DeviceExchanges++
	writeJSON(w, http.StatusOK, s.issue(m))
	return false
}
