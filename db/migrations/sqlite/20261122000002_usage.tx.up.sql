-- Bytes served per project, environment and calendar month (YYYY-MM, UTC), for usage.
CREATE TABLE egress_counters (
    organization_id TEXT    NOT NULL,
    project_id      TEXT    NOT NULL,
    environment     TEXT    NOT NULL,
    period          TEXT    NOT NULL,
    bytes           INTEGER NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (project_id, environment, period)
) STRICT;
--bun:split
CREATE INDEX ix_ledger_entries_project_id_kind_created_at ON ledger_entries (project_id, kind, created_at);
--bun:split
CREATE INDEX ix_files_project_id_environment_status ON files (project_id, environment, status);
