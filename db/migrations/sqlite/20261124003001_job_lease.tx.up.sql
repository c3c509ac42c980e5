-- A running job's lease: the worker running it renews it while it runs. A running job
-- whose lease ran out lost its worker (killed, or cut off from the database), and the
-- sweep hands it to another; no other worker takes it while the lease holds.
ALTER TABLE jobs ADD COLUMN lease_expires_at TEXT;
--bun:split
-- The sweep pages through the unfinished jobs by id, queued and running alike; finished
-- jobs, nearly all of the table, are not in the index.
CREATE INDEX ix_jobs_active_id ON jobs (id) WHERE state IN ('queued', 'running');
--bun:split
DROP INDEX ix_jobs_queued_created_at;
