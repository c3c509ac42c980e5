-- A job keeps how its reservation was priced, and how many artifacts it made: it is
-- shown with its first few and their count, so its size does not grow with what it
-- made, and the rest are paged from GET /v1/jobs/{id}/artifacts, oldest first.
ALTER TABLE jobs ADD COLUMN pricing jsonb;
--bun:split
ALTER TABLE jobs ADD COLUMN artifact_count integer NOT NULL DEFAULT 0;
--bun:split
UPDATE jobs SET artifact_count = (SELECT count(*) FROM artifacts WHERE artifacts.job_id = jobs.id) WHERE state = 'succeeded';
--bun:split
CREATE INDEX ix_artifacts_job_id_id ON artifacts (job_id, id);
--bun:split
DROP INDEX ix_artifacts_job_id;
--bun:split
-- Jobs are listed by file.
CREATE INDEX ix_jobs_file_id ON jobs (file_id, id DESC);
