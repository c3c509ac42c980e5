-- Back to keys scoped to (organization, endpoint): of the claims of one key in several
-- scopes, the first made stays; the others go with their answers.
CREATE TABLE idempotency_records_v1 (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    endpoint        TEXT NOT NULL,
    "key"           TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    lease_until     TEXT NOT NULL DEFAULT '',
    CONSTRAINT uq_idempotency_records_organization_id_endpoint_key UNIQUE (organization_id, endpoint, "key")
) STRICT;
--bun:split
INSERT INTO idempotency_records_v1 (id, organization_id, endpoint, "key", fingerprint, created_at, expires_at, lease_until)
SELECT id, organization_id, endpoint, "key", fingerprint, created_at, expires_at, lease_until
FROM idempotency_records AS r WHERE NOT EXISTS (SELECT 1 FROM idempotency_records AS o
    WHERE o.organization_id = r.organization_id AND o.endpoint = r.endpoint AND o."key" = r."key" AND o.id < r.id);
--bun:split
CREATE TABLE idempotency_answers_v2 (
    record_id  TEXT PRIMARY KEY REFERENCES idempotency_records_v1 (id),
    result     TEXT NOT NULL,
    body       BLOB,
    created_at TEXT NOT NULL
) STRICT;
--bun:split
INSERT INTO idempotency_answers_v2 (record_id, result, body, created_at)
SELECT record_id, result, body, created_at FROM idempotency_answers
WHERE record_id IN (SELECT id FROM idempotency_records_v1);
--bun:split
DROP TABLE idempotency_answers;
--bun:split
DROP TABLE idempotency_records;
--bun:split
ALTER TABLE idempotency_records_v1 RENAME TO idempotency_records;
--bun:split
ALTER TABLE idempotency_answers_v2 RENAME TO idempotency_answers;
--bun:split
CREATE INDEX ix_idempotency_records_expires_at ON idempotency_records (expires_at);
