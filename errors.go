package grantwire

import (
	"encoding/json"
	"time"

	"github.com/grantwire/grantwire/core"
)

// Error is every error an operation returns: a stable code from docs/behaviour.md#errors, a
// message that ends with the exact command that fixes it (when one exists), and the fields
// of the code. It never contains a secret. Use errors.Is with the sentinels below, or
// errors.As.
type Error struct {
	Code          string
	Message       string
	Summary       string   // the message without its fix (the policy's "summary")
	Fix           string   // the fixing command, also at the end of Message
	MissingScopes []string // AGENT_NOT_GRANTED, CONNECTION_MISSING_SCOPES, SCOPE_MISMATCH
	FullScopes    []string // the scopes to grant or reconnect with
	RetryAfter    time.Duration
	Status        int // REST status
	Exit          int // CLI exit code
	Fields        map[string]json.RawMessage
}

func (e *Error) Error() string { return "grantwire: " + e.Message }

// Is matches another *Error with the same code, so errors.Is(err, grantwire.ErrBusy) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrNotConnected            = &Error{Code: "NOT_CONNECTED"}
	ErrAgentNotGranted         = &Error{Code: "AGENT_NOT_GRANTED"}
	ErrConnectionMissingScopes = &Error{Code: "CONNECTION_MISSING_SCOPES"}
	ErrReauthRequired          = &Error{Code: "REAUTH_REQUIRED"}
	ErrTenantMismatch          = &Error{Code: "TENANT_MISMATCH"}
	ErrConnectionRevoked       = &Error{Code: "CONNECTION_REVOKED"}
	ErrScopeMismatch           = &Error{Code: "SCOPE_MISMATCH"}
	ErrInteractiveAuthRequired = &Error{Code: "INTERACTIVE_AUTH_REQUIRED"}
	ErrConsentDenied           = &Error{Code: "CONSENT_DENIED"}
	ErrBusy                    = &Error{Code: "BUSY"}
	ErrConfiguration           = &Error{Code: "CONFIGURATION"}
	ErrInsecureStore           = &Error{Code: "INSECURE_STORE"}
	ErrCorruptLedger           = &Error{Code: "CORRUPT_LEDGER"}
	ErrInsecureTransport       = &Error{Code: "INSECURE_TRANSPORT"}
	ErrIssuerMismatch          = &Error{Code: "ISSUER_MISMATCH"}
	ErrAuthorizationTimeout    = &Error{Code: "AUTHORIZATION_TIMEOUT"}
	ErrIO                      = &Error{Code: "IO_ERROR"}
	ErrStoreUnavailable        = &Error{Code: "STORE_UNAVAILABLE"}
	ErrProviderError           = &Error{Code: "PROVIDER_ERROR"}
	ErrUnknownConnector        = &Error{Code: "UNKNOWN_CONNECTOR"}
	ErrUnknownAgent            = &Error{Code: "UNKNOWN_AGENT"}
	ErrUsage                   = &Error{Code: "USAGE"}
	ErrInternal                = &Error{Code: "INTERNAL"}
	ErrAgentNotActive          = &Error{Code: "AGENT_NOT_ACTIVE"}
	ErrFlowInProgress          = &Error{Code: "FLOW_IN_PROGRESS"}
	ErrToolNotAllowed          = &Error{Code: "TOOL_NOT_ALLOWED"}
)

// newError converts a core error, with the REST status and exit code the policy publishes.
func newError(ce *core.Error, table map[string]core.ErrorInfo) *Error {
	e := &Error{Code: ce.Code, Message: ce.Message, Summary: ce.Message, Fix: ce.Fix, Fields: ce.Fields, Status: 500, Exit: 5}
	_ = json.Unmarshal(ce.Fields["summary"], &e.Summary)
	if info, ok := table[ce.Code]; ok {
		e.Status, e.Exit = info.Status, info.Exit
	}
	_ = json.Unmarshal(ce.Fields["missing_scopes"], &e.MissingScopes)
	_ = json.Unmarshal(ce.Fields["full_scopes"], &e.FullScopes)
	var ms int64
	if json.Unmarshal(ce.Fields["retry_after_ms"], &ms) == nil {
		e.RetryAfter = time.Duration(ms) * time.Millisecond
	}
	return e
}
