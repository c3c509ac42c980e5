-- Bytes served per project, environment and calendar month (YYYY-MM, UTC), for usage.
CREATE TABLE egress_counters (
    organization_id text   NOT NULL,
    project_id      text   COLLATE "C" NOT NULL,
    environment     text   NOT NULL,
    period          text   NOT NULL,
    bytes           bigint NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (project_id, environment, period)
);
--bun:split
CREATE INDEX ix_ledger_entries_project_id_kind_created_at ON ledger_entries (project_id, kind, created_at);
--bun:split
CREATE INDEX ix_files_project_id_environment_status ON files (project_id, environment, status);
