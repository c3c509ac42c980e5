DROP INDEX ix_jobs_file_id;
--bun:split
CREATE INDEX ix_artifacts_job_id ON artifacts (job_id);
--bun:split
DROP INDEX ix_artifacts_job_id_id;
--bun:split
ALTER TABLE jobs DROP COLUMN artifact_count;
--bun:split
ALTER TABLE jobs DROP COLUMN pricing;
