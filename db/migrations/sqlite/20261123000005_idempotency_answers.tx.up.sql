-- A finished idempotent request's answer is a row of its own, inserted — by the write
-- of the effect it answers, where there is one — instead of an update of the claim.
-- A claim is done when it has an answer.
CREATE TABLE idempotency_answers (
    record_id        TEXT PRIMARY KEY,
    response_status  INTEGER NOT NULL,
    response_headers TEXT    CHECK (json_valid(response_headers)),
    response_body    BLOB,
    created_at       TEXT    NOT NULL
) STRICT;
--bun:split
INSERT INTO idempotency_answers (record_id, response_status, response_headers, response_body, created_at)
    SELECT id, response_status, response_headers, response_body, created_at
    FROM idempotency_records WHERE state = 'done';
--bun:split
ALTER TABLE idempotency_records DROP COLUMN state;
--bun:split
ALTER TABLE idempotency_records DROP COLUMN response_status;
--bun:split
ALTER TABLE idempotency_records DROP COLUMN response_headers;
--bun:split
ALTER TABLE idempotency_records DROP COLUMN response_body;
