-- The console's people: users, their memberships in organizations with a role, their
-- sessions, invitations, one-time set-password links and counts of failed sign-ins.
-- Secrets (session and CSRF tokens, invitation and password links) are stored as their
-- SHA-256 only. Keys record their last use; egress is also counted per day, and the
-- usage series reads jobs and files by the day they finished or became ready.

CREATE TABLE users (
    id              text COLLATE "C" PRIMARY KEY,
    email           text        NOT NULL,
    password_hash   text        NOT NULL,
    password_set_at timestamptz,
    created_at      timestamptz NOT NULL,
    CONSTRAINT uq_users_email UNIQUE (email)
);
--bun:split

CREATE TABLE memberships (
    id              text COLLATE "C" PRIMARY KEY,
    organization_id text        NOT NULL REFERENCES organizations (id),
    user_id         text        NOT NULL REFERENCES users (id),
    role            text        NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    created_at      timestamptz NOT NULL,
    CONSTRAINT uq_memberships_organization_id_user_id UNIQUE (organization_id, user_id)
);
--bun:split
CREATE INDEX ix_memberships_user_id_id ON memberships (user_id, id);
--bun:split

CREATE TABLE sessions (
    id              text COLLATE "C" PRIMARY KEY,
    user_id         text        NOT NULL REFERENCES users (id),
    organization_id text        NOT NULL REFERENCES organizations (id),
    token_hash      text        NOT NULL,
    csrf_hash       text        NOT NULL,
    ip              text        NOT NULL,
    user_agent      text        NOT NULL,
    created_at      timestamptz NOT NULL,
    last_seen_at    timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    CONSTRAINT uq_sessions_token_hash UNIQUE (token_hash)
);
--bun:split
CREATE INDEX ix_sessions_user_id_id ON sessions (user_id, id DESC);
--bun:split
CREATE INDEX ix_sessions_expires_at ON sessions (expires_at);
--bun:split

CREATE TABLE invitations (
    id              text COLLATE "C" PRIMARY KEY,
    organization_id text        NOT NULL REFERENCES organizations (id),
    email           text        NOT NULL,
    role            text        NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    token_hash      text        NOT NULL,
    invited_by      text        NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    accepted_at     timestamptz,
    revoked_at      timestamptz,
    CONSTRAINT uq_invitations_token_hash UNIQUE (token_hash)
);
--bun:split
CREATE INDEX ix_invitations_organization_id_id ON invitations (organization_id, id DESC);
--bun:split
CREATE INDEX ix_invitations_expires_at ON invitations (expires_at);
--bun:split

CREATE TABLE password_tokens (
    id         text COLLATE "C" PRIMARY KEY,
    user_id    text        NOT NULL REFERENCES users (id),
    token_hash text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    CONSTRAINT uq_password_tokens_token_hash UNIQUE (token_hash)
);
--bun:split
CREATE INDEX ix_password_tokens_expires_at ON password_tokens (expires_at);
--bun:split

-- One row per email a sign-in was tried with, whether or not an account has it.
CREATE TABLE sign_in_throttles (
    key          text COLLATE "C" PRIMARY KEY,
    failures     integer     NOT NULL CHECK (failures >= 0),
    window_start timestamptz NOT NULL,
    locked_until timestamptz
);
--bun:split
CREATE INDEX ix_sign_in_throttles_window_start ON sign_in_throttles (window_start);
--bun:split

ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
--bun:split

CREATE TABLE egress_days (
    organization_id text   NOT NULL,
    project_id      text   COLLATE "C" NOT NULL,
    environment     text   NOT NULL,
    day             text   NOT NULL,
    bytes           bigint NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (project_id, environment, day)
);
--bun:split
CREATE INDEX ix_jobs_project_id_finished_at ON jobs (project_id, environment, finished_at) WHERE finished_at IS NOT NULL;
--bun:split
CREATE INDEX ix_files_project_id_ready_at ON files (project_id, environment, ready_at) WHERE ready_at IS NOT NULL;
