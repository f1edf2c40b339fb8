# METADATA
# title: Facts and needs
# description: |
#   The vocabulary between the core and a host (hostabi/README.md). A need names a primitive
#   kind, its parameters, and a key chosen by the policy; the host stores its answer under
#   that key in `input.facts`. Operations about one connector use constant keys ("grant",
#   "conn", "conn@lock", ...); listings build keys from connector ids with "|", which a
#   catalog id never contains. The same slot read again after a lock uses a different key,
#   so the core always knows whether a value was read before or after the lock was taken.
#   Secrets never reach the core: a need that obtains one answers with its description
#   {"$ref", "digest", "crc32"}, and effects refer to it with {"$ref": "<key>#<name>"}.
package grantwire.facts

# METADATA
# title: key
# description: Join key parts with "|".
key(parts) := concat("|", parts)

# METADATA
# title: has
# description: True when the host has supplied the fact stored under key k.
has(f, k) if {
	_ = f[k]
}

# METADATA
# title: missing
# description: The needs of a list whose facts are not yet in f, in order.
missing(f, needs) := [n | some n in needs; not has(f, n.key)]

# METADATA
# title: found
# description: The fact under key k exists and reports found.
found(f, k) if f[k].found == true

# METADATA
# title: value
# description: The value of a ledger fact whose entry exists, or the default d.
value(f, k, d) := f[k].value if f[k].exists == true

else := d

# METADATA
# title: secret reference
# description: A reference to a secret the host holds for this operation; the core never sees the value.
ref(fact_key, name) := {"$ref": concat("#", [fact_key, name])}

# METADATA
# title: secret argument
# description: The description of the operation's secret argument name (facts["arg"]), or undefined.
arg(f, name) := f.arg[name]

# METADATA
# title: clock
# description: The clock (Unix milliseconds).
now(k) := {"key": k, "kind": "clock.now"}

# METADATA
# title: entropy
# description: n random bytes, registered as the secret "<k>#value" (BASE64URL, no padding).
entropy(k, n) := {"key": k, "kind": "entropy", "bytes": n}

# METADATA
# title: environment variable
# description: One environment variable; a secret one answers with its description.
env(k, name, secret) := {"key": k, "kind": "env.get", "name": name, "secret": secret}

# METADATA
# title: keyring service
# description: The credential-store service of the host ({service}).
keyring_info(k) := {"key": k, "kind": "keyring.info"}

# METADATA
# title: keyring slot
# description: |
#   One credential-store slot; fields lists the JSON members that are secrets (answered as
#   descriptions); fresh:false lets the host answer from its process memory of the slot.
keyring(k, user, fields, fresh) := {"key": k, "kind": "keyring.get", "user": user, "fields": fields, "fresh": fresh}

# METADATA
# title: keyring secret
# description: One credential-store slot whose whole value is a secret (no JSON parsing).
keyring_secret(k, user) := {"key": k, "kind": "keyring.get", "user": user, "fresh": true}

# METADATA
# title: ledger
# description: |
#   The JSON at path inside a ledger file under the home ([] for the whole document); the
#   answer says whether the file and the entry exist, with the file's version.
ledger(k, file, path) := {"key": k, "kind": "ledger.read", "ledger": file, "path": path}

# METADATA
# title: file digest
# description: The SHA-256 of a regular file of at most max_bytes ("~/" is the user's home).
digest(k, path, max_bytes) := {"key": k, "kind": "file.digest", "path": path, "max_bytes": max_bytes}

# METADATA
# title: lock
# description: Take a named lock, waiting at most wait_ms; the fact is "held" or "busy".
lock(k, name, wait_ms) := {"key": k, "kind": "lock.acquire", "name": name, "wait_ms": wait_ms}

# METADATA
# title: lock not held
# description: |
#   The lock fact under k is present and is not "held": "busy", or anything else a host
#   reported. Nothing may be written then; the operation reports BUSY.
not_held(f, k) if {
	has(f, k)
	f[k] != "held"
}

# METADATA
# title: after lock
# description: |
#   Mark a need as read under a lock: the host fetches it only if the need with key
#   lock_key reported "held" (a busy lock skips it, and the core then reports BUSY).
after(need, lock_key) := object.union(need, {"after": lock_key})

# METADATA
# title: HTTP request
# description: |
#   One HTTP exchange (request: method, url, headers, form or json, secret_fields,
#   max_bytes, timeout_ms); redirects are never followed.
http(k, request) := object.union(request, {"key": k, "kind": "http.request"})

# METADATA
# title: committed
# description: |
#   Mark a need whose request, once on the wire, must be finished and saved even if the
#   caller is cancelled (a refresh rotates the token at the server; a code is single use).
commit(need) := object.union(need, {"commit": true})

# METADATA
# title: loopback
# description: |
#   Open this operation's one-shot 127.0.0.1 callback listener for an authorization of
#   connector c ({redirect_uri}, or {unavailable} when nobody can use a browser here).
loopback_open(k, c) := {"key": k, "kind": "loopback.open", "connector": c}

# METADATA
# title: loopback in a mode
# description: |
#   Open the loopback of an authorization in a mode: "listen" (the callback reaches a
#   one-shot listener) or "paste" (the user pastes the final redirect URL back; a host may
#   listen too).
loopback_mode(k, c, mode) := {"key": k, "kind": "loopback.open", "connector": c, "mode": mode}

# METADATA
# title: loopback wait
# description: Show the authorization URL to the user and wait for the callback whose state matches.
loopback_wait(k, url, state, timeout_ms, connector) := {
	"key": k, "kind": "loopback.wait", "url": url, "state": state,
	"timeout_ms": timeout_ms, "connector": connector,
}

# METADATA
# title: sleep
# description: Wait ms milliseconds (the caller's cancellation ends the operation); the answer is the clock afterwards (Unix ms).
sleep(k, ms) := {"key": k, "kind": "clock.sleep", "ms": ms}

# METADATA
# title: show a device code
# description: |
#   Show the user where to go and which code to enter to authorize connector c on another
#   device (RFC 8628 §3.3), how long the code lives and how often the token endpoint is
#   polled; the answer says whether anyone could be shown it.
prompt(k, c, uri, complete, code, expires_in_ms, interval_ms) := object.union(
	{
		"key": k, "kind": "prompt.show", "connector": c, "verification_uri": uri, "user_code": code,
		"expires_in_ms": expires_in_ms, "interval_ms": interval_ms,
	},
	_complete(complete),
)

_complete(u) := {"verification_uri_complete": u} if is_string(u)

else := {}

# METADATA
# title: host failures
# description: |
#   The host_error objects of every fact (a host that could not do what was asked), in the
#   order of their keys: OPA's Wasm runtime iterates an object in another order than its Go
#   evaluator, so a choice among them is made on sorted keys.
host_errors(f) := [f[k].host_error | some k in sort([k | some k, v in f; is_object(v); _ = v.host_error])]
