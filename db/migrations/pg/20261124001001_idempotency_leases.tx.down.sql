-- Back to answers as HTTP responses. A stored refusal does not say its status (0 marks
-- it here): its claim is dropped with it, so a retry is decided again.
CREATE TABLE idempotency_answers_v1 (
    record_id        text COLLATE "C" PRIMARY KEY,
    response_status  integer     NOT NULL,
    response_headers jsonb,
    response_body    bytea,
    created_at       timestamptz NOT NULL
);
--bun:split
INSERT INTO idempotency_answers_v1 (record_id, response_status, response_headers, response_body, created_at)
SELECT record_id,
    CASE result WHEN 'ok' THEN 200 WHEN 'created' THEN 201 WHEN 'accepted' THEN 202 WHEN 'empty' THEN 204 ELSE 0 END,
    CASE WHEN result = 'empty' THEN '{}'::jsonb ELSE '{"Content-Type": "application/json"}'::jsonb END,
    CASE WHEN result = 'empty' THEN NULL ELSE body || '\x0a'::bytea END,
    created_at
FROM idempotency_answers;
--bun:split
DROP TABLE idempotency_answers;
--bun:split
DELETE FROM idempotency_records WHERE id IN (SELECT record_id FROM idempotency_answers_v1 WHERE response_status = 0);
--bun:split
DELETE FROM idempotency_answers_v1 WHERE response_status = 0;
--bun:split
ALTER TABLE idempotency_answers_v1 RENAME TO idempotency_answers;
--bun:split
ALTER TABLE idempotency_answers RENAME CONSTRAINT idempotency_answers_v1_pkey TO idempotency_answers_pkey;
--bun:split
ALTER TABLE idempotency_records DROP COLUMN lease_until;
