DROP INDEX IF EXISTS ix_files_project_id_environment_status;
--bun:split
DROP INDEX IF EXISTS ix_ledger_entries_project_id_kind_created_at;
--bun:split
DROP TABLE IF EXISTS egress_counters;
