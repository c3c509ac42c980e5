DROP INDEX IF EXISTS ix_jobs_batch_id;
--bun:split
CREATE INDEX ix_jobs_batch_id ON jobs (batch_id);
--bun:split
DROP INDEX IF EXISTS ix_jobs_queued_created_at;
--bun:split
CREATE INDEX ix_jobs_state_created_at ON jobs (state, created_at);
--bun:split
CREATE INDEX ix_jobs_project_id_state ON jobs (project_id, state);
--bun:split
DROP INDEX IF EXISTS ix_jobs_project_id_active;
--bun:split
DROP INDEX IF EXISTS ix_jobs_api_key_id_active;
--bun:split
DROP FUNCTION IF EXISTS filemill_key_spend(text, timestamptz);
--bun:split
DROP FUNCTION IF EXISTS filemill_active_jobs(text, text);
