-- grantwire's PostgreSQL store, schema version 2: provider locks leave a claim.

-- A provider lock's holder, while it holds the lock (shells/postgres/pending.go): written
-- when the advisory lock is taken and deleted when it is released, in the statements that
-- take and release it. A claim left behind by a session that ended while the server
-- restarted means the holder may have a rotated secret it could not write (it keeps it
-- sealed on its machine and writes it when the store answers again): the lock waits for it.
create table grantwire.lock_claims (
	lock_key bigint primary key,
	origin text not null,
	since timestamptz not null default now()
);
