-- The console's people: users, their memberships in organizations with a role, their
-- sessions, invitations, one-time set-password links and counts of failed sign-ins.
-- Secrets (session and CSRF tokens, invitation and password links) are stored as their
-- SHA-256 only. Keys record their last use; egress is also counted per day, and the
-- usage series reads jobs and files by the day they finished or became ready.
-- Tables are STRICT and timestamps TEXT, as in the initial schema.

CREATE TABLE users (
    id              TEXT PRIMARY KEY,
    email           TEXT        NOT NULL,
    password_hash   TEXT        NOT NULL,
    password_set_at TEXT,
    created_at      TEXT NOT NULL,
    CONSTRAINT uq_users_email UNIQUE (email)
) STRICT;
--bun:split

CREATE TABLE memberships (
    id              TEXT PRIMARY KEY,
    organization_id TEXT        NOT NULL REFERENCES organizations (id),
    user_id         TEXT        NOT NULL REFERENCES users (id),
    role            TEXT        NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    created_at      TEXT NOT NULL,
    CONSTRAINT uq_memberships_organization_id_user_id UNIQUE (organization_id, user_id)
) STRICT;
--bun:split
CREATE INDEX ix_memberships_user_id_id ON memberships (user_id, id);
--bun:split

CREATE TABLE sessions (
    id              TEXT PRIMARY KEY,
    user_id         TEXT        NOT NULL REFERENCES users (id),
    organization_id TEXT        NOT NULL REFERENCES organizations (id),
    token_hash      TEXT        NOT NULL,
    csrf_hash       TEXT        NOT NULL,
    ip              TEXT        NOT NULL,
    user_agent      TEXT        NOT NULL,
    created_at      TEXT NOT NULL,
    last_seen_at    TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    revoked_at      TEXT,
    CONSTRAINT uq_sessions_token_hash UNIQUE (token_hash)
) STRICT;
--bun:split
CREATE INDEX ix_sessions_user_id_id ON sessions (user_id, id DESC);
--bun:split
CREATE INDEX ix_sessions_expires_at ON sessions (expires_at);
--bun:split

CREATE TABLE invitations (
    id              TEXT PRIMARY KEY,
    organization_id TEXT        NOT NULL REFERENCES organizations (id),
    email           TEXT        NOT NULL,
    role            TEXT        NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    token_hash      TEXT        NOT NULL,
    invited_by      TEXT        NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    accepted_at     TEXT,
    revoked_at      TEXT,
    CONSTRAINT uq_invitations_token_hash UNIQUE (token_hash)
) STRICT;
--bun:split
CREATE INDEX ix_invitations_organization_id_id ON invitations (organization_id, id DESC);
--bun:split
CREATE INDEX ix_invitations_expires_at ON invitations (expires_at);
--bun:split

CREATE TABLE password_tokens (
    id         TEXT PRIMARY KEY,
    user_id    TEXT        NOT NULL REFERENCES users (id),
    token_hash TEXT        NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT,
    CONSTRAINT uq_password_tokens_token_hash UNIQUE (token_hash)
) STRICT;
--bun:split
CREATE INDEX ix_password_tokens_expires_at ON password_tokens (expires_at);
--bun:split

-- One row per email a sign-in was tried with, whether or not an account has it.
CREATE TABLE sign_in_throttles (
    key          TEXT PRIMARY KEY,
    failures     INTEGER     NOT NULL CHECK (failures >= 0),
    window_start TEXT NOT NULL,
    locked_until TEXT
) STRICT;
--bun:split
CREATE INDEX ix_sign_in_throttles_window_start ON sign_in_throttles (window_start);
--bun:split

ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
--bun:split

CREATE TABLE egress_days (
    organization_id TEXT   NOT NULL,
    project_id      TEXT   NOT NULL,
    environment     TEXT   NOT NULL,
    day             TEXT   NOT NULL,
    bytes           INTEGER NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (project_id, environment, day)
) STRICT;
--bun:split
CREATE INDEX ix_jobs_project_id_finished_at ON jobs (project_id, environment, finished_at) WHERE finished_at IS NOT NULL;
--bun:split
CREATE INDEX ix_files_project_id_ready_at ON files (project_id, environment, ready_at) WHERE ready_at IS NOT NULL;
