/**
 * The schema, as an append-only list: migration N brings PRAGMA user_version from N-1 to N. Never edit a
 * released entry; add one. Times are milliseconds since the epoch.
 */
export const migrations: readonly string[] = [
  // 1: sessions and API keys
  `
  CREATE TABLE sessions (
    -- AUTOINCREMENT: an id is never reused, so a late "last seen" write for an ended session cannot land
    -- on the session that replaced it.
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    key_kind    TEXT    NOT NULL CHECK (key_kind IN ('ip', 'mac')),
    key         TEXT    NOT NULL,
    username    TEXT    NOT NULL,
    source      TEXT    NOT NULL CHECK (source IN ('api', 'portal', 'registration', 'agreement')),
    created_at  INTEGER NOT NULL,
    last_seen   INTEGER NOT NULL,
    expires_at  INTEGER,
    UNIQUE (key_kind, key)
  ) STRICT;
  CREATE INDEX sessions_expires_at ON sessions (expires_at) WHERE expires_at IS NOT NULL;

  CREATE TABLE api_keys (
    id           INTEGER PRIMARY KEY,
    name         TEXT    NOT NULL UNIQUE,
    key_id       TEXT    NOT NULL UNIQUE,
    secret_hash  BLOB    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
  ) STRICT;
  `,
  // 2: applied settings (directory service, ...) and admin sign-in
  `
  CREATE TABLE settings (
    name        TEXT    PRIMARY KEY,
    value       TEXT    NOT NULL CHECK (json_valid(value)),
    updated_at  INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE admin_users (
    name          TEXT    PRIMARY KEY,
    password_hash TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE admin_sessions (
    token_hash  BLOB    PRIMARY KEY,
    user_name   TEXT    NOT NULL REFERENCES admin_users (name) ON DELETE CASCADE,
    csrf_token  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
  ) STRICT;
  `,
  // 3: a session's own idle limit, beside its own hard expiry (expires_at, from 1). Per row, not from the
  // config, because each way in sets its own (the API's timeout field, the splash page's settings) and the
  // helpers, which never read the config, must apply them. NULL: no idle limit. Existing sessions get none.
  `
  ALTER TABLE sessions ADD COLUMN idle_timeout INTEGER CHECK (idle_timeout > 0);
  `,
  // 4: the captive portal's Device Groups (named sets of networks, each active or not). The portal settings
  // themselves are a row of \`settings\` (name 'portal'). AUTOINCREMENT: an id in an admin's open form never
  // names a group made after the one it was for. NOCASE: "Lab" and "lab" are one name (lib/portal/settings.ts
  // also compares beyond ASCII).
  `
  CREATE TABLE device_groups (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    cidrs       TEXT    NOT NULL CHECK (json_valid(cidrs) AND json_type(cidrs) = 'array'),
    active      INTEGER NOT NULL CHECK (active IN (0, 1)),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
  ) STRICT;
  `,
  // 5: wrong passwords per account and per client address group, shared by the splash page (serve) and the
  // Basic helper (authd): one fixed window per key, from its first failure (lib/security/password-guesses.ts).
  // And the address groups each account has signed in from with a right password: there, the account's own
  // limit does not apply, so strangers guessing at a name never lock its owner out.
  `
  CREATE TABLE sign_in_failures (
    kind          TEXT    NOT NULL CHECK (kind IN ('account', 'address')),
    key           TEXT    NOT NULL,
    window_start  INTEGER NOT NULL,
    failures      INTEGER NOT NULL CHECK (failures >= 0),
    PRIMARY KEY (kind, key)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX sign_in_failures_window_start ON sign_in_failures (window_start);

  CREATE TABLE sign_in_known (
    account     TEXT    NOT NULL,
    address     TEXT    NOT NULL,
    since       INTEGER NOT NULL,
    PRIMARY KEY (account, address)
  ) STRICT, WITHOUT ROWID;
  `,
  // 6: the MAC an address binding (a 'registration' session on an IP, lib/portal/address-binding.ts) was made
  // for, so the helper refuses it when Squid names another device on that address; and a fixed end for the
  // bindings made before it: one idle timeout after their last traffic, no later (a binding's end no longer
  // moves with traffic; renewing it checks the neighbour table again). NULL on every other session.
  `
  ALTER TABLE sessions ADD COLUMN mac TEXT CHECK (mac IS NULL OR length(mac) = 17);
  UPDATE sessions SET expires_at = min(coalesce(expires_at, last_seen + idle_timeout), last_seen + idle_timeout)
    WHERE source = 'registration' AND key_kind = 'ip' AND idle_timeout IS NOT NULL;
  `,
  // 7: the client addresses whose Negotiate or NTLM handshakes carried NTLM, counted per hour by authd (flushed
  // from memory at most once a minute, kept two days), for the seamless doctor's list of clients that fall back
  // from Kerberos (lib/store/ntlm-client-store.ts). '-': handshakes whose address Squid did not send.
  `
  CREATE TABLE ntlm_clients (
    address     TEXT    NOT NULL CHECK (length(address) BETWEEN 1 AND 64),
    hour        INTEGER NOT NULL,
    handshakes  INTEGER NOT NULL CHECK (handshakes > 0),
    last_seen   INTEGER NOT NULL,
    PRIMARY KEY (hour, address)
  ) STRICT, WITHOUT ROWID;
  `,
  // 8: the audit trail (lib/audit/event.ts): append-only, newest first by (at, id), kept audit.retentionDays
  // (serve's hourly purge). Written in the transaction of the change it describes, a row per login, so one
  // index only, on the time (an entry holds the rowid: (at) orders by (at, id)), whose pages a login appends
  // to: an index on the user or the address would cost every login two random pages more in the WAL (a third
  // of its commit, measured). The Audit screen's other filters scan, a bounded number of rows a page
  // (lib/audit/query.ts AUDIT_SCAN_ROWS). No AUTOINCREMENT (its sequence row is one more write a login): ids
  // only grow while the newest row stays, and the purge removes the oldest.
  `
  CREATE TABLE audit_events (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    box       TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    actor     TEXT    NOT NULL,
    username  TEXT,
    address   TEXT,
    detail    TEXT    NOT NULL
  ) STRICT;
  CREATE INDEX audit_events_at ON audit_events (at);
  `,
  // 9: the audit trail in pages (lib/audit/pages.ts): a group commit's events are one row, written small (the
  // kinds and actors once a page, times as offsets), where a row each cost a login ~5 µs of serve's time
  // (bench/README). Same events, same order, same ids' role: an event's id is page id × 1024 + its index; each
  // row of schema 8 becomes a page of one, under its own id (a detail that is not JSON is kept as a string,
  // {"unreadable": …}). The index is on the page's newest time (and its id, as every index holds it): the
  // order the Audit screen reads pages in.
  // audit_events is now a view of the pages, for ad hoc queries (sqlite3), never Doorman's own.
  `
  CREATE TABLE audit_pages (
    id        INTEGER PRIMARY KEY,
    at_first  INTEGER NOT NULL,
    at_last   INTEGER NOT NULL,
    box       TEXT    NOT NULL,
    events    TEXT    NOT NULL,
    CHECK (at_first <= at_last)
  ) STRICT;
  CREATE INDEX audit_pages_at ON audit_pages (at_last);
  INSERT INTO audit_pages (id, at_first, at_last, box, events)
    SELECT id, at, at, box,
      json_array(json_array(kind, actor), json_array(0, 0, 1, username, address,
        CASE WHEN NOT json_valid(detail) THEN json_object('unreadable', detail)
          WHEN json_type(detail) = 'object' THEN json(detail) ELSE json_object('unreadable', detail) END))
    FROM audit_events ORDER BY id;
  DROP TABLE audit_events;
  CREATE VIEW audit_events (id, at, box, kind, actor, username, address, detail) AS
    SELECT p.id * 1024 + e.key - 1, p.at_first + (e.value ->> 0), p.box,
      p.events -> 0 ->> (e.value ->> 1), p.events -> 0 ->> (e.value ->> 2),
      e.value ->> 3, e.value ->> 4, coalesce(e.value -> 5, '{}')
    FROM audit_pages AS p, json_each(p.events) AS e WHERE e.key > 0;
  `,
];

export const SCHEMA_VERSION = migrations.length;
