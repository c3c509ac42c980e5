DROP INDEX ix_files_project_id_ready_at;
--bun:split
DROP INDEX ix_jobs_project_id_finished_at;
--bun:split
DROP TABLE egress_days;
--bun:split
ALTER TABLE api_keys DROP COLUMN last_used_at;
--bun:split
DROP TABLE sign_in_throttles;
--bun:split
DROP TABLE password_tokens;
--bun:split
DROP TABLE invitations;
--bun:split
DROP TABLE sessions;
--bun:split
DROP TABLE memberships;
--bun:split
DROP TABLE users;
