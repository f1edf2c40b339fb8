# METADATA
# title: Client-hash tripwire
# description: |
#   A stored connection records the CRC-32 (8 lowercase hex digits) of the OAuth client id it
#   was issued under, and optionally a tenant. Every load compares them with the current
#   client configuration. This package only classifies; the gate and the listings decide what
#   to do with the verdict (re-read the client from the credential store, take the lock,
#   clear the connection under the lock, or report BUSY).
package grantwire.tripwire

# METADATA
# title: verdict
# description: |
#   "ok", "corrupt" (the stored blob is not valid JSON), "no_client" (no client configured),
#   "client" (client id hash differs; a missing hash differs too) or "tenant" (both sides
#   name a tenant and they differ). It fails closed: a connection fact that does not say
#   valid is corrupt, a client fact that does not say found is no client, and a client
#   without a string hash matches no connection.
verdict(conn, client) := "corrupt" if {
	not conn.valid == true
} else := "no_client" if {
	not client.found == true
} else := "client" if {
	not _same_client(conn, client)
} else := "tenant" if {
	stored := object.get(conn, "tenant", null)
	configured := object.get(client, "tenant", null)
	is_string(stored)
	is_string(configured)
	stored != configured
} else := "ok"

_same_client(conn, client) if {
	is_string(client.client_id_hash)
	conn.client_id_hash == client.client_id_hash
}

# METADATA
# title: resolvable
# description: Verdicts that a fresh read of the client configuration may still resolve.
resolvable := {"client", "tenant", "no_client"}

# METADATA
# title: clearing
# description: Verdicts that clear the connection once they hold under the provider's lock.
clearing := {"corrupt", "client", "tenant"}

# METADATA
# title: reason
# description: The name a listing or an event gives a clearing verdict.
reason := {"corrupt": "corrupt", "client": "client_rotated", "tenant": "tenant_mismatch", "no_client": "no_client", "ok": "ok"}
