package hostabi

// Need kinds: the facts a host fetches. Each is a primitive a host performs without
// judgement; hostabi/README.md gives the parameters and the answer of each, and
// schema/needs.schema.json and schema/facts.schema.json their shapes (TestKindsMatchSchema
// keeps this list, the README and the schemas in step).
const (
	// NeedClockNow answers the time in Unix milliseconds. Params: none.
	NeedClockNow = "clock.now"

	// NeedClockSleep waits, then answers the time in Unix milliseconds. Params: ms
	// (0..1800000). The caller's cancellation ends the wait (and the operation); a
	// simulated clock advances instead of waiting.
	NeedClockSleep = "clock.sleep"

	// NeedEntropy registers "<key>#value", BASE64URL of `bytes` random bytes without
	// padding, and answers its description. Params: bytes (1..64).
	NeedEntropy = "entropy"

	// NeedEnvGet reads one environment variable. Params: name, secret. Answer:
	// {found:false} or {found:true, value} (value is a description when secret).
	NeedEnvGet = "env.get"

	// NeedKeyringInfo answers {service}: the credential-store service the host uses.
	NeedKeyringInfo = "keyring.info"

	// NeedKeyringGet reads one slot of the credential store. Params: user, fields
	// (optional), fresh. Answer: {found:false} or {found:true, version, value[, json]};
	// see the README. fresh:false may be answered from the process's memory of the slot.
	NeedKeyringGet = "keyring.get"

	// NeedLedgerRead reads one JSON file under the home. Params: ledger (a relative path),
	// path (keys into the document, optional). Answer: {file, found, version, exists,
	// value} or {file, found:true, version, corrupt}.
	NeedLedgerRead = "ledger.read"

	// NeedFileDigest hashes a regular file. Params: path ("~/" is the user's home),
	// max_bytes. Answer: {found:true, sha256} or {found:false, reason}.
	NeedFileDigest = "file.digest"

	// NeedLockAcquire takes a named lock shared by the user's processes. Params: name,
	// wait_ms. Answer: "held" or "busy".
	NeedLockAcquire = "lock.acquire"

	// NeedHTTPRequest sends one HTTP request and answers its response; redirects are never
	// followed. Params: method, url, headers, form | json, secret_fields, max_bytes,
	// timeout_ms. Answer: {status, headers, json[, body]} or {status:0, error}.
	NeedHTTPRequest = "http.request"

	// NeedLoopbackOpen starts this operation's one-shot 127.0.0.1 callback listener for an
	// authorization of connector. Params: connector, mode ("listen", the default, or
	// "paste": the user pastes the final redirect URL back). Answer: {redirect_uri} or
	// {unavailable: reason}.
	NeedLoopbackOpen = "loopback.open"

	// NeedLoopbackWait shows the authorization URL to the user and waits for the callback
	// (or, in paste mode, the pasted redirect URL) whose state matches (constant time).
	// Params: url, state, timeout_ms, connector, alternative. Answer: {status:"callback",
	// params}, {status:"timeout"} or {status:"unavailable"}; the caller's cancellation ends
	// the operation.
	NeedLoopbackWait = "loopback.wait"

	// NeedPromptShow shows the user where to authorize a connector on another device and
	// the code to enter there (RFC 8628 §3.3). Params: connector, verification_uri,
	// verification_uri_complete (optional), user_code, expires_in_ms. Answer: {shown:true}
	// or {shown:false, reason}.
	NeedPromptShow = "prompt.show"

	// NeedDPoPKey creates a DPoP key pair (RFC 9449; ECDSA P-256). Params: alg ("ES256").
	// Answer: {key, jwk, jkt}: the private key's description (registered as "<key>#key",
	// PEM PKCS #8), the public JWK and its RFC 7638 thumbprint.
	NeedDPoPKey = "dpop.key"
)

// Effect kinds: the changes a host applies, in order. Any effect may carry undo (see
// the README: consecutive effects with undo form a transaction).
const (
	// EffectKeyringSet stores a value (a template) in a slot. Params: user, value, expect.
	EffectKeyringSet = "keyring.set"

	// EffectKeyringDelete deletes a slot (absent is fine). Params: user, expect.
	EffectKeyringDelete = "keyring.delete"

	// EffectLedgerWrite patches one JSON file atomically. Params: ledger, ops, version.
	EffectLedgerWrite = "ledger.write"

	// EffectLockRelease releases a lock the operation holds. Params: name.
	EffectLockRelease = "lock.release"

	// EffectEventEmit delivers an event to subscribers. Params: type, payload.
	EffectEventEmit = "event.emit"

	// EffectHTTPSend sends a request and ignores its outcome (best effort, bounded by
	// timeout_ms). Params: as NeedHTTPRequest.
	EffectHTTPSend = "http.send"
)

// NeedKinds and EffectKinds list every kind, in the README's order.
var (
	NeedKinds = []string{
		NeedClockNow, NeedClockSleep, NeedEntropy, NeedEnvGet, NeedKeyringInfo, NeedKeyringGet,
		NeedLedgerRead, NeedFileDigest, NeedLockAcquire, NeedHTTPRequest, NeedLoopbackOpen,
		NeedLoopbackWait, NeedPromptShow, NeedDPoPKey,
	}
	EffectKinds = []string{
		EffectKeyringSet, EffectKeyringDelete, EffectLedgerWrite, EffectLockRelease,
		EffectEventEmit, EffectHTTPSend,
	}
)

// Loopback modes (loopback.open's mode).
const (
	ModeListen = "listen" // the browser comes back to the listener
	ModePaste  = "paste"  // the user pastes the final redirect URL back
)

// Lock answers.
const (
	Held = "held"
	Busy = "busy"
)

// FactArgs is the fact key under which the driver describes the operation's secret
// arguments ({name: description}); FactApply prefixes the fact that reports a failed apply.
const (
	FactArgs  = "arg"
	FactApply = "apply@"
)

// Host error codes a host may report in a host_error fact.
const (
	HostErrInsecureStore = "INSECURE_STORE" // no secure credential store
	HostErrIO            = "IO"             // a file, lock or listener failed
	// HostErrStoreUnavailable: a shared store (shells/postgres) does not answer; the detail
	// starts "store unavailable: " and names the store, the fix checks it.
	HostErrStoreUnavailable = "STORE_UNAVAILABLE"
)
