-- grantwire's PostgreSQL store, schema version 1 (shells/postgres).

-- Every ledger write draws its version from this sequence, so a version is never reused,
-- not even by a ledger moved aside and written again.
create sequence grantwire.ledger_versions;

-- The ledgers of every home: the document's bytes exactly as written (a corrupt document
-- stays as it is; the host reports it), and its version.
create table grantwire.ledgers (
	home text not null,
	name text not null,
	doc bytea not null,
	version bigint not null,
	updated_at timestamptz not null default now(),
	primary key (home, name)
);

-- The key-encryption keys that have sealed secrets, by id (never the keys themselves);
-- exactly one is active once a secret was stored: new secrets are sealed under it.
create table grantwire.keys (
	key_id text primary key,
	active boolean not null default false,
	created_at timestamptz not null default now()
);
create unique index keys_one_active on grantwire.keys (active) where active;

-- The keyring: one row per (service, user), the value sealed with AES-256-GCM under a data
-- key of its own, the data key wrapped by the key-encryption key key_id.
create table grantwire.secrets (
	service text not null,
	"user" text not null,
	key_id text not null references grantwire.keys (key_id),
	wrapped_key bytea not null,
	sealed bytea not null,
	revision bigint not null default 1,
	updated_at timestamptz not null default now(),
	primary key (service, "user")
);
