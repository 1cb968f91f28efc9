/**
 * The PostgreSQL schema, as an append-only list: migration N brings doorman_schema.version from N-1 to N. Never
 * edit a released entry; add one. Times are bigint milliseconds since the epoch, as in SQLite.
 *
 * Change numbers: every replicated table (`changes.tab`) has a counter row. A writing transaction first takes
 * its table's next number (`UPDATE changes ... RETURNING last`, which holds the row lock until commit, so
 * numbers are given and committed in one order: a reader that sees number N committed has every number below
 * it), stamps each row it writes with it, records each session it deletes in `session_deletions`, and sends
 * one NOTIFY with `tab:N`. A replica (lib/store/postgres/replica.ts) asks for the rows with a greater number
 * than the last it has; a notification lost on the way changes only how soon.
 */
export const postgresMigrations: readonly string[] = [
  // 1: what every box shares: sessions, API keys, administrators and their sign-ins, Device Groups, settings.
  `
  CREATE TABLE changes (
    tab     text   PRIMARY KEY CHECK (tab IN ('sessions', 'api_keys', 'admins', 'device_groups', 'settings')),
    last    bigint NOT NULL DEFAULT 0,
    -- session_deletions are kept for a while, then pruned: a replica behind this number reloads everything.
    pruned  bigint NOT NULL DEFAULT 0
  );
  INSERT INTO changes (tab) VALUES ('sessions'), ('api_keys'), ('admins'), ('device_groups'), ('settings');

  CREATE TABLE sessions (
    -- A new login on a key replaces the row with a new id: a late "last seen" for the previous user (keyed by
    -- id) can never land on it.
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_kind      text   NOT NULL CHECK (key_kind IN ('ip', 'mac')),
    key           text   NOT NULL CHECK (length(key) BETWEEN 1 AND 64),
    username      text   NOT NULL CHECK (length(username) BETWEEN 1 AND 1024),
    source        text   NOT NULL CHECK (source IN ('api', 'portal', 'registration', 'agreement')),
    created_at    bigint NOT NULL,
    last_seen     bigint NOT NULL,
    expires_at    bigint,
    idle_timeout  bigint CHECK (idle_timeout > 0),
    mac           text   CHECK (mac IS NULL OR length(mac) = 17),
    change        bigint NOT NULL,
    UNIQUE (key_kind, key)
  );
  CREATE INDEX sessions_change ON sessions (change);
  CREATE INDEX sessions_expires_at ON sessions (expires_at) WHERE expires_at IS NOT NULL;
  -- What a Device Group change and a portal save review (and Clear current sessions ends): the portal's own,
  -- found without reading the login API's, which may be most of a million rows.
  CREATE INDEX sessions_portal_made ON sessions (source) WHERE source <> 'api';

  CREATE TABLE session_deletions (
    id      bigint NOT NULL,
    change  bigint NOT NULL,
    at      bigint NOT NULL
  );
  CREATE INDEX session_deletions_change ON session_deletions (change);

  CREATE TABLE api_keys (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name          text   NOT NULL UNIQUE,
    key_id        text   NOT NULL UNIQUE,
    secret_hash   bytea  NOT NULL,
    created_at    bigint NOT NULL,
    last_used_at  bigint,
    revoked_at    bigint,
    change        bigint NOT NULL
  );

  CREATE TABLE settings (
    name        text   PRIMARY KEY,
    value       jsonb  NOT NULL,
    updated_at  bigint NOT NULL,
    change      bigint NOT NULL
  );

  CREATE TABLE admin_users (
    name           text   PRIMARY KEY,
    password_hash  text   NOT NULL,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL,
    change         bigint NOT NULL
  );

  CREATE TABLE admin_sessions (
    token_hash  bytea  PRIMARY KEY,
    user_name   text   NOT NULL REFERENCES admin_users (name) ON DELETE CASCADE,
    csrf_token  text   NOT NULL,
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL,
    change      bigint NOT NULL
  );

  -- "Lab" and "lab" are one name (lib/portal/settings.ts also compares beyond ASCII before writing).
  CREATE TABLE device_groups (
    id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text    NOT NULL,
    cidrs       jsonb   NOT NULL CHECK (jsonb_typeof(cidrs) = 'array'),
    active      boolean NOT NULL,
    created_at  bigint  NOT NULL,
    updated_at  bigint  NOT NULL,
    change      bigint  NOT NULL
  );
  CREATE UNIQUE INDEX device_groups_name ON device_groups (lower(name));
  `,
  // 2: the audit trail (lib/audit/event.ts). Not replicated (no change number, no NOTIFY): it is read by an
  // admin's screen from the database, never from memory. Written in the transaction of the change it
  // describes; kept audit.retentionDays (serve's hourly purge).
  `
  CREATE TABLE audit_events (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        bigint NOT NULL,
    box       text   NOT NULL CHECK (length(box) BETWEEN 1 AND 256),
    kind      text   NOT NULL CHECK (length(kind) BETWEEN 1 AND 64),
    actor     text   NOT NULL CHECK (length(actor) BETWEEN 1 AND 256),
    username  text   CHECK (length(username) <= 1024),
    address   text   CHECK (length(address) <= 256),
    detail    jsonb  NOT NULL DEFAULT '{}'
  );
  -- The time's only: a login appends to it; the screen's other filters scan a bounded number of rows a page
  -- (lib/audit/query.ts AUDIT_SCAN_ROWS), as on SQLite (migrations.ts 8).
  CREATE INDEX audit_events_at ON audit_events (at, id);
  `,
];

export const POSTGRES_SCHEMA_VERSION = postgresMigrations.length;

/** The channel every change is announced on; the payload is `tab:number`. */
export const CHANGES_CHANNEL = 'doorman_changes';

export const REPLICATED_TABLES = ['sessions', 'api_keys', 'admins', 'device_groups', 'settings'] as const;
export type ReplicatedTable = (typeof REPLICATED_TABLES)[number];
