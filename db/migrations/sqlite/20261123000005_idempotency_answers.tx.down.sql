ALTER TABLE idempotency_records ADD COLUMN state TEXT NOT NULL DEFAULT 'in_progress';
--bun:split
ALTER TABLE idempotency_records ADD COLUMN response_status INTEGER NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE idempotency_records ADD COLUMN response_headers TEXT CHECK (json_valid(response_headers));
--bun:split
ALTER TABLE idempotency_records ADD COLUMN response_body BLOB;
--bun:split
UPDATE idempotency_records SET state = 'done',
    response_status = (SELECT a.response_status FROM idempotency_answers AS a WHERE a.record_id = idempotency_records.id),
    response_headers = (SELECT a.response_headers FROM idempotency_answers AS a WHERE a.record_id = idempotency_records.id),
    response_body = (SELECT a.response_body FROM idempotency_answers AS a WHERE a.record_id = idempotency_records.id)
    WHERE id IN (SELECT record_id FROM idempotency_answers);
--bun:split
DROP TABLE idempotency_answers;
