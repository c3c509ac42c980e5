DROP INDEX ix_jobs_running_lease;
--bun:split
ALTER TABLE jobs DROP COLUMN lease_expires_at;
