CREATE INDEX ix_jobs_queued_created_at ON jobs (created_at, id) WHERE state = 'queued';
--bun:split
DROP INDEX ix_jobs_active_id;
--bun:split
ALTER TABLE jobs DROP COLUMN lease_expires_at;
