-- The holder of a claim renews its lease while its request runs; a claim still in
-- progress past its lease was left by a holder that died, and a retry takes it over.
-- On SQLite one process serves, so a claim in progress now belongs to a process that
-- stopped: its lease is already over.
ALTER TABLE idempotency_records ADD COLUMN lease_until TEXT NOT NULL DEFAULT '';
--bun:split
UPDATE idempotency_records SET lease_until = created_at;
--bun:split
-- Answers are door-neutral: the kind of result with the resource's JSON, or the refusal
-- as JSON ({code, message, param, details, request_id, retry_after}); each door renders
-- them. An answer needs its claim: the write of an effect answering a claim that was
-- taken over fails on the foreign key, and writes nothing.
CREATE TABLE idempotency_answers_v2 (
    record_id  TEXT PRIMARY KEY REFERENCES idempotency_records (id),
    result     TEXT NOT NULL,
    body       BLOB,
    created_at TEXT NOT NULL
) STRICT;
--bun:split
INSERT INTO idempotency_answers_v2 (record_id, result, body, created_at)
SELECT a.record_id,
    CASE a.response_status WHEN 200 THEN 'ok' WHEN 201 THEN 'created' WHEN 202 THEN 'accepted'
        WHEN 204 THEN 'empty' ELSE 'error' END,
    CASE
        WHEN a.response_status = 204 THEN NULL
        WHEN a.response_status IN (200, 201, 202) THEN
            CASE WHEN length(a.response_body) > 0 AND substr(a.response_body, -1, 1) = X'0A'
                THEN substr(a.response_body, 1, length(a.response_body) - 1)
                ELSE a.response_body END
        ELSE CAST(CASE WHEN json_extract(a.response_headers, '$."Retry-After"') IS NOT NULL
            THEN json_set(json_extract(CAST(a.response_body AS TEXT), '$.error'), '$.retry_after',
                CAST(json_extract(a.response_headers, '$."Retry-After"') AS INTEGER))
            ELSE json_extract(CAST(a.response_body AS TEXT), '$.error') END AS BLOB)
    END,
    a.created_at
FROM idempotency_answers AS a JOIN idempotency_records AS r ON r.id = a.record_id;
--bun:split
DROP TABLE idempotency_answers;
--bun:split
ALTER TABLE idempotency_answers_v2 RENAME TO idempotency_answers;
