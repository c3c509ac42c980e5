-- What a key or a project holds reserved is read from its live jobs, not summed over
-- the ledger's whole history. (PostgreSQL also gains the functions its admission checks
-- call; SQLite checks inside the admission's transaction.)
CREATE INDEX ix_jobs_api_key_id_active ON jobs (api_key_id) WHERE state IN ('queued', 'running');
--bun:split
CREATE INDEX ix_jobs_project_id_active ON jobs (project_id, environment) WHERE state IN ('queued', 'running');
--bun:split

-- Active counts use ix_jobs_project_id_active; the sweep of stale queued jobs reads
-- queued ones only. (SQLite keeps ix_jobs_batch_id whole: it would not prove that a
-- lookup of one batch id implies a non-empty one.)
DROP INDEX ix_jobs_project_id_state;
--bun:split
DROP INDEX ix_jobs_state_created_at;
--bun:split
CREATE INDEX ix_jobs_queued_created_at ON jobs (created_at, id) WHERE state = 'queued';
