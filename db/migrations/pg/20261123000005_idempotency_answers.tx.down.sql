ALTER TABLE idempotency_records ADD COLUMN state text NOT NULL DEFAULT 'in_progress',
    ADD COLUMN response_status integer NOT NULL DEFAULT 0, ADD COLUMN response_headers jsonb,
    ADD COLUMN response_body bytea;
--bun:split
UPDATE idempotency_records AS r SET state = 'done', response_status = a.response_status,
    response_headers = a.response_headers, response_body = a.response_body
    FROM idempotency_answers AS a WHERE a.record_id = r.id;
--bun:split
ALTER TABLE idempotency_records ALTER COLUMN state DROP DEFAULT, ALTER COLUMN response_status DROP DEFAULT;
--bun:split
DROP TABLE idempotency_answers;
