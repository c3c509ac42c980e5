-- A finished idempotent request's answer is a row of its own, inserted — by the write
-- of the effect it answers, where there is one — instead of an update of the claim:
-- an insert needs no lookup of the claim, and leaves no dead version of it behind.
-- A claim is done when it has an answer.
CREATE TABLE idempotency_answers (
    record_id        text COLLATE "C" PRIMARY KEY,
    response_status  integer     NOT NULL,
    response_headers jsonb,
    response_body    bytea,
    created_at       timestamptz NOT NULL
);
--bun:split
INSERT INTO idempotency_answers (record_id, response_status, response_headers, response_body, created_at)
    SELECT id, response_status, response_headers, response_body, created_at
    FROM idempotency_records WHERE state = 'done';
--bun:split
ALTER TABLE idempotency_records DROP COLUMN state, DROP COLUMN response_status,
    DROP COLUMN response_headers, DROP COLUMN response_body;
