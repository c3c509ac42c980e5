-- Admission enforces the project concurrency limit and the key spend limit in its own
-- write, after locking the credit account's row. A plain subquery there would read the
-- statement's snapshot, taken before the lock was granted, and miss the admissions
-- committed meanwhile; these volatile functions take a snapshot of their own when
-- called, so they count everything committed before the lock, and the calling
-- statement's own inserts.
CREATE OR REPLACE FUNCTION filemill_active_jobs(project text, env text) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN (SELECT count(*) FROM jobs
          WHERE project_id = project AND environment = env AND state IN ('queued', 'running'));
END
$$;
--bun:split

CREATE OR REPLACE FUNCTION filemill_key_spend(api_key text, since timestamptz) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN (SELECT COALESCE(SUM(credits_reserved), 0) FROM jobs
          WHERE api_key_id = api_key AND state IN ('queued', 'running'))
       + (SELECT COALESCE(SUM(amount), 0) FROM ledger_entries
          WHERE api_key_id = api_key AND kind = 'charge' AND created_at >= since);
END
$$;
--bun:split

-- What a key or a project holds reserved is read from its live jobs, not summed over
-- the ledger's whole history.
CREATE INDEX ix_jobs_api_key_id_active ON jobs (api_key_id) WHERE state IN ('queued', 'running');
--bun:split
CREATE INDEX ix_jobs_project_id_active ON jobs (project_id, environment) WHERE state IN ('queued', 'running');
--bun:split

-- Every job is inserted into each index of jobs, so the indexes serve only what is
-- asked of them: active counts use ix_jobs_project_id_active, the sweep of stale queued
-- jobs reads queued ones only, and only batch members have a batch id to look up.
DROP INDEX ix_jobs_project_id_state;
--bun:split
DROP INDEX ix_jobs_state_created_at;
--bun:split
CREATE INDEX ix_jobs_queued_created_at ON jobs (created_at, id) WHERE state = 'queued';
--bun:split
DROP INDEX ix_jobs_batch_id;
--bun:split
CREATE INDEX ix_jobs_batch_id ON jobs (batch_id) WHERE batch_id <> '';
