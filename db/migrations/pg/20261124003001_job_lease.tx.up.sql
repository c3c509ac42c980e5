-- A running job's lease: the worker running it renews it while it runs. A running job
-- whose lease ran out lost its worker (killed, or cut off from the database), and the
-- sweep hands it to another; no other worker takes it while the lease holds.
ALTER TABLE jobs ADD COLUMN lease_expires_at timestamptz;
--bun:split
CREATE INDEX ix_jobs_running_lease ON jobs (lease_expires_at, id) WHERE state = 'running';
