# METADATA
# title: Facts and needs
# description: |
#   The vocabulary between the core and a shell. A need names a fact kind (a capability of
#   the host ABI), its parameters, and a key chosen by the policy; the shell stores its
#   answer under that key in `input.facts`. Operations about one connector use constant keys
#   ("grant", "conn", "conn@lock", ...); listings build keys from connector ids with "|",
#   which a catalog id never contains. The same kind read again after a lock uses a
#   different key, so the core always knows whether a value was read before or after the
#   lock was taken.
package grantwire.facts

# METADATA
# title: key
# description: Join key parts with "|".
key(parts) := concat("|", parts)

# METADATA
# title: has
# description: True when the shell has supplied the fact stored under key k.
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
# description: The value of a found ledger fact, or the default d when absent.
value(f, k, d) := f[k].value if f[k].found == true

else := d

# METADATA
# title: clock
# description: The clock (Unix milliseconds).
now(k) := {"key": k, "kind": "clock.now"}

# METADATA
# title: ledger entry
# description: |
#   A ledger entry at a path: [connector, agent], [connector] (one connector's map),
#   ["*", agent] (one agent's entries as {connector → value}) or [] (the whole ledger).
ledger(k, name, path) := {"key": k, "kind": "ledger.get", "ledger": name, "path": path}

# METADATA
# title: connection
# description: The stored connection of a provider (metadata and a digest, never a secret).
connection(k, p) := {"key": k, "kind": "connection.get", "provider": p}

# METADATA
# title: client
# description: The provider's OAuth client configuration; fresh re-reads the credential store.
client(k, p, fresh) := {"key": k, "kind": "client.get", "provider": p, "fresh": fresh}

# METADATA
# title: client slot expectation
# description: |
#   The precondition for replacing a provider's OAuth client in the credential store, given
#   the client fact read under the lock: that version, or an empty slot when no client was
#   found or the client came from the environment (source "env"), which the store does not hold.
client_expect(fact) := {"version": fact.version} if {
	fact.found == true
	object.get(fact, "source", "keyring") != "env"
} else := {"found": false}

# METADATA
# title: token
# description: The shell's in-process access-token cache entry for a provider.
token(k, p) := {"key": k, "kind": "token.get", "provider": p}

# METADATA
# title: lock
# description: Take the provider's lock, waiting at most wait_ms; the fact is "held" or "busy".
lock(k, p, wait_ms) := {"key": k, "kind": "lock.acquire", "name": p, "wait_ms": wait_ms}

# METADATA
# title: lock not held
# description: |
#   The lock fact under k is present and is not "held": "busy", or anything else a shell
#   reported. Nothing may be written then; the operation reports BUSY.
not_held(f, k) if {
	has(f, k)
	f[k] != "held"
}

# METADATA
# title: after lock
# description: |
#   Mark a need as read under a lock: the shell fetches it only if the need with key
#   lock_key reported "held" (a busy lock skips it, and the core then reports BUSY).
after(need, lock_key) := object.union(need, {"after": lock_key})

# METADATA
# title: refresh
# description: |
#   Exchange the stored refresh token whose digest is given at the token endpoint. The shell
#   refuses with a failed precondition if the store no longer holds that token.
refresh(k, p, digest) := {"key": k, "kind": "oauth.refresh", "provider": p, "refresh": digest}

# METADATA
# title: authorize
# description: Run the interactive PKCE authorization for a provider with the given scopes.
authorize(k, p, list) := {"key": k, "kind": "oauth.authorize", "provider": p, "scopes": list}

# METADATA
# title: agent
# description: An agent's declaration from the agent registry.
agent(k, a) := {"key": k, "kind": "agent.get", "agent": a}

# METADATA
# title: MCP server
# description: An MCP server's configuration (its environment key names, never values).
mcp(k, c) := {"key": k, "kind": "mcp.get", "connector": c}

# METADATA
# title: MCP secrets
# description: Load an MCP server's environment values for this operation (after the grant check).
mcp_secrets(k, c) := {"key": k, "kind": "mcp.secrets", "connector": c}

# METADATA
# title: secret reference
# description: A reference to a secret the shell holds for this operation; the core never sees the value.
ref(fact_key, name) := {"$ref": concat("#", [fact_key, name])}
