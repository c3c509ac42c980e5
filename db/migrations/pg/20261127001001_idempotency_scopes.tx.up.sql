-- An idempotency key is scoped like every resource: to the organization, environment
-- and project a request acts on, and — for a request whose answer holds a credential (a
-- signed URL, a webhook secret) — to the API key that made it. A request in another
-- scope is another request. Claims made before cannot say which environment or project
-- they were for: they keep the empty scope, which no request has, so they are never
-- replayed (a replay could cross the boundaries drawn here), and expire as before.
ALTER TABLE idempotency_records ADD COLUMN environment text NOT NULL DEFAULT '',
    ADD COLUMN project_id text NOT NULL DEFAULT '',
    ADD COLUMN api_key_id text NOT NULL DEFAULT '';
--bun:split
ALTER TABLE idempotency_records ALTER COLUMN environment DROP DEFAULT,
    ALTER COLUMN project_id DROP DEFAULT,
    ALTER COLUMN api_key_id DROP DEFAULT;
--bun:split
ALTER TABLE idempotency_records DROP CONSTRAINT uq_idempotency_records_organization_id_endpoint_key;
--bun:split
ALTER TABLE idempotency_records ADD CONSTRAINT uq_idempotency_records_scope_key
    UNIQUE (organization_id, environment, project_id, endpoint, api_key_id, "key");
