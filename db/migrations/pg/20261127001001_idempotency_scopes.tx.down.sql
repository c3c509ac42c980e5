-- Back to keys scoped to (organization, endpoint): of the claims of one key in several
-- scopes, the first made stays; the others go with their answers.
DELETE FROM idempotency_answers WHERE record_id IN (SELECT r.id FROM idempotency_records AS r
    WHERE EXISTS (SELECT 1 FROM idempotency_records AS o WHERE o.organization_id = r.organization_id
        AND o.endpoint = r.endpoint AND o."key" = r."key" AND o.id < r.id));
--bun:split
DELETE FROM idempotency_records AS r WHERE EXISTS (SELECT 1 FROM idempotency_records AS o
    WHERE o.organization_id = r.organization_id AND o.endpoint = r.endpoint AND o."key" = r."key" AND o.id < r.id);
--bun:split
ALTER TABLE idempotency_records DROP CONSTRAINT uq_idempotency_records_scope_key;
--bun:split
ALTER TABLE idempotency_records DROP COLUMN environment, DROP COLUMN project_id, DROP COLUMN api_key_id;
--bun:split
ALTER TABLE idempotency_records ADD CONSTRAINT uq_idempotency_records_organization_id_endpoint_key
    UNIQUE (organization_id, endpoint, "key");
