-- The holder of a claim renews its lease while its request runs; a claim still in
-- progress past its lease was left by a holder that died, and a retry takes it over.
-- Claims made before leases keep the rule they were made under: five minutes.
ALTER TABLE idempotency_records ADD COLUMN lease_until timestamptz;
--bun:split
UPDATE idempotency_records SET lease_until = created_at + interval '5 minutes';
--bun:split
ALTER TABLE idempotency_records ALTER COLUMN lease_until SET NOT NULL;
--bun:split
-- Answers are door-neutral: the kind of result with the resource's JSON, or the refusal
-- as JSON ({code, message, param, details, request_id, retry_after}); each door renders
-- them. An answer needs its claim: the write of an effect answering a claim that was
-- taken over fails on the foreign key, and writes nothing.
CREATE TABLE idempotency_answers_v2 (
    record_id  text COLLATE "C" PRIMARY KEY
               CONSTRAINT fk_idempotency_answers_record_id REFERENCES idempotency_records (id),
    result     text        NOT NULL,
    body       bytea,
    created_at timestamptz NOT NULL
);
--bun:split
INSERT INTO idempotency_answers_v2 (record_id, result, body, created_at)
SELECT a.record_id,
    CASE a.response_status WHEN 200 THEN 'ok' WHEN 201 THEN 'created' WHEN 202 THEN 'accepted'
        WHEN 204 THEN 'empty' ELSE 'error' END,
    CASE
        WHEN a.response_status = 204 THEN NULL
        WHEN a.response_status IN (200, 201, 202) THEN
            CASE WHEN length(a.response_body) > 0 AND get_byte(a.response_body, length(a.response_body) - 1) = 10
                THEN substring(a.response_body FROM 1 FOR length(a.response_body) - 1)
                ELSE a.response_body END
        ELSE convert_to(((convert_from(a.response_body, 'UTF8')::jsonb -> 'error')
            || CASE WHEN a.response_headers ->> 'Retry-After' IS NOT NULL
                THEN jsonb_build_object('retry_after', (a.response_headers ->> 'Retry-After')::integer)
                ELSE '{}'::jsonb END)::text, 'UTF8')
    END,
    a.created_at
FROM idempotency_answers AS a JOIN idempotency_records AS r ON r.id = a.record_id;
--bun:split
DROP TABLE idempotency_answers;
--bun:split
ALTER TABLE idempotency_answers_v2 RENAME TO idempotency_answers;
--bun:split
ALTER TABLE idempotency_answers RENAME CONSTRAINT idempotency_answers_v2_pkey TO idempotency_answers_pkey;
