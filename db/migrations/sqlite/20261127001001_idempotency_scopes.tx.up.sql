-- An idempotency key is scoped like every resource: to the organization, environment
-- and project a request acts on, and — for a request whose answer holds a credential (a
-- signed URL, a webhook secret) — to the API key that made it. A request in another
-- scope is another request. Claims made before cannot say which environment or project
-- they were for: they keep the empty scope, which no request has, so they are never
-- replayed (a replay could cross the boundaries drawn here), and expire as before.
-- SQLite cannot drop a table's unique constraint: both tables are made again, the
-- answers pointing at the new claims.
CREATE TABLE idempotency_records_v2 (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    environment     TEXT NOT NULL,
    project_id      TEXT NOT NULL,
    endpoint        TEXT NOT NULL,
    api_key_id      TEXT NOT NULL,
    "key"           TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    lease_until     TEXT NOT NULL,
    CONSTRAINT uq_idempotency_records_scope_key UNIQUE (organization_id, environment, project_id, endpoint, api_key_id, "key")
) STRICT;
--bun:split
INSERT INTO idempotency_records_v2 (id, organization_id, environment, project_id, endpoint, api_key_id, "key",
    fingerprint, created_at, expires_at, lease_until)
SELECT id, organization_id, '', '', endpoint, '', "key", fingerprint, created_at, expires_at, lease_until
FROM idempotency_records;
--bun:split
CREATE TABLE idempotency_answers_v3 (
    record_id  TEXT PRIMARY KEY REFERENCES idempotency_records_v2 (id),
    result     TEXT NOT NULL,
    body       BLOB,
    created_at TEXT NOT NULL
) STRICT;
--bun:split
INSERT INTO idempotency_answers_v3 (record_id, result, body, created_at)
SELECT record_id, result, body, created_at FROM idempotency_answers;
--bun:split
DROP TABLE idempotency_answers;
--bun:split
DROP TABLE idempotency_records;
--bun:split
-- Renaming the claims' table renames the answers' reference to it.
ALTER TABLE idempotency_records_v2 RENAME TO idempotency_records;
--bun:split
ALTER TABLE idempotency_answers_v3 RENAME TO idempotency_answers;
--bun:split
CREATE INDEX ix_idempotency_records_expires_at ON idempotency_records (expires_at);
