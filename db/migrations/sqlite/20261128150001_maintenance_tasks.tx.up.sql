-- Once-only maintenance tasks keep their progress here: a task over more than one run
-- can cover (a listing of the whole blob store) resumes where the last run stopped, and
-- one completed is never run again. Its first is the sweep of artifacts stored under the
-- layout before artifacts were stored under their job (Files.SweepLegacyArtifacts).
CREATE TABLE maintenance_tasks (
    name         TEXT    PRIMARY KEY,
    resume_after TEXT    NOT NULL,
    not_before   TEXT    NOT NULL,
    held_until   TEXT,
    removed      INTEGER NOT NULL CHECK (removed >= 0),
    steps        INTEGER NOT NULL,
    completed_at TEXT,
    updated_at   TEXT    NOT NULL
) STRICT;
