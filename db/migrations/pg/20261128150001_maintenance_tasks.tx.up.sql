-- Once-only maintenance tasks keep their progress here: a task over more than one run
-- can cover (a listing of the whole blob store) resumes where the last run stopped, and
-- one completed is never run again. Its first is the sweep of artifacts stored under the
-- layout before artifacts were stored under their job (Files.SweepLegacyArtifacts).
CREATE TABLE maintenance_tasks (
    name         text        PRIMARY KEY,
    resume_after text        NOT NULL,
    not_before   timestamptz NOT NULL,
    held_until   timestamptz,
    removed      bigint      NOT NULL CHECK (removed >= 0),
    steps        bigint      NOT NULL,
    completed_at timestamptz,
    updated_at   timestamptz NOT NULL
);
