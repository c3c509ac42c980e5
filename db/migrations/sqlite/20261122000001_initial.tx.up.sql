-- Initial schema, SQLite. Written by hand rather than derived from the domain structs,
-- so that later struct changes never rewrite history: every change is a new migration.
--
-- Tables are STRICT, so a value of the wrong type is an error as on PostgreSQL.
-- Timestamps are TEXT in one fixed form (bun writes UTC, "2006-01-02 15:04:05.999999+00:00"),
-- which makes comparing and ordering them as text the same as comparing instants. JSON
-- columns are TEXT checked with json_valid, as PostgreSQL checks jsonb.
--
-- Foreign keys join only the administrative tables and the ledger. The hot tables (files,
-- uploads, jobs, artifacts, events) have none: tenancy is enforced by the scope of every
-- query, and uploads and files reference each other in one transaction, an order foreign
-- keys would forbid.

CREATE TABLE organizations (
    id         TEXT PRIMARY KEY,
    name       TEXT        NOT NULL,
    status     TEXT        NOT NULL,
    created_at TEXT        NOT NULL,
    CONSTRAINT uq_organizations_name UNIQUE (name)
) STRICT;
--bun:split

CREATE TABLE projects (
    id                TEXT PRIMARY KEY,
    organization_id   TEXT        NOT NULL REFERENCES organizations (id),
    name              TEXT        NOT NULL,
    concurrency_limit INTEGER     NOT NULL,
    created_at        TEXT        NOT NULL,
    CONSTRAINT uq_projects_organization_id_name UNIQUE (organization_id, name)
) STRICT;
--bun:split

CREATE TABLE api_keys (
    id                 TEXT PRIMARY KEY,
    organization_id    TEXT        NOT NULL REFERENCES organizations (id),
    project_id         TEXT        NOT NULL REFERENCES projects (id),
    environment        TEXT        NOT NULL,
    name               TEXT        NOT NULL,
    hash               TEXT        NOT NULL,
    hint               TEXT        NOT NULL,
    scopes             TEXT        NOT NULL CHECK (json_valid(scopes)),
    ip_allow_list      TEXT        NOT NULL CHECK (json_valid(ip_allow_list)),
    allowed_operations TEXT        NOT NULL CHECK (json_valid(allowed_operations)),
    allowed_projects   TEXT        NOT NULL CHECK (json_valid(allowed_projects)),
    spend_limit        INTEGER     NOT NULL,
    rate_limit         INTEGER     NOT NULL,
    expires_at         TEXT,
    revoked_at         TEXT,
    created_at         TEXT        NOT NULL,
    CONSTRAINT uq_api_keys_hash UNIQUE (hash)
) STRICT;
--bun:split
CREATE INDEX ix_api_keys_organization_id_id ON api_keys (organization_id, id DESC);
--bun:split

-- The CHECKs restate the ledger's invariants: the conditional updates keep them, and a
-- bug that would break them fails loudly instead of minting or losing credits.
CREATE TABLE credit_accounts (
    id              TEXT PRIMARY KEY,
    organization_id TEXT        NOT NULL REFERENCES organizations (id),
    environment     TEXT        NOT NULL,
    balance         INTEGER     NOT NULL CHECK (balance >= 0),
    reserved        INTEGER     NOT NULL CHECK (reserved >= 0),
    used            INTEGER     NOT NULL CHECK (used >= 0),
    created_at      TEXT        NOT NULL,
    CONSTRAINT uq_credit_accounts_organization_id_environment UNIQUE (organization_id, environment)
) STRICT;
--bun:split

CREATE TABLE ledger_entries (
    id          TEXT PRIMARY KEY,
    account_id  TEXT        NOT NULL REFERENCES credit_accounts (id),
    kind        TEXT        NOT NULL CHECK (kind IN ('grant', 'reserve', 'charge', 'release')),
    amount      INTEGER     NOT NULL CHECK (amount > 0),
    job_id      TEXT,
    api_key_id  TEXT,
    project_id  TEXT,
    description TEXT        NOT NULL,
    created_at  TEXT        NOT NULL
) STRICT;
--bun:split
CREATE INDEX ix_ledger_entries_api_key_id_kind_created_at ON ledger_entries (api_key_id, kind, created_at);
--bun:split
CREATE INDEX ix_ledger_entries_account_id ON ledger_entries (account_id);
--bun:split

CREATE TABLE idempotency_records (
    id               TEXT PRIMARY KEY,
    organization_id  TEXT        NOT NULL,
    endpoint         TEXT        NOT NULL,
    "key"            TEXT        NOT NULL,
    fingerprint      TEXT        NOT NULL,
    state            TEXT        NOT NULL,
    response_status  INTEGER     NOT NULL,
    response_headers TEXT        CHECK (json_valid(response_headers)),
    response_body    BLOB,
    created_at       TEXT        NOT NULL,
    expires_at       TEXT        NOT NULL,
    CONSTRAINT uq_idempotency_records_organization_id_endpoint_key UNIQUE (organization_id, endpoint, "key")
) STRICT;
--bun:split
CREATE INDEX ix_idempotency_records_expires_at ON idempotency_records (expires_at);
--bun:split

-- events(id) is served by the primary key.
CREATE TABLE events (
    id              TEXT PRIMARY KEY,
    type            TEXT        NOT NULL,
    organization_id TEXT        NOT NULL,
    project_id      TEXT        NOT NULL,
    environment     TEXT        NOT NULL,
    subject_id      TEXT        NOT NULL,
    data            TEXT        NOT NULL CHECK (json_valid(data)),
    created_at      TEXT        NOT NULL
) STRICT;
--bun:split
CREATE INDEX ix_events_organization_id_subject_id_id ON events (organization_id, subject_id, id);
--bun:split

CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    organization_id TEXT        NOT NULL,
    project_id      TEXT        NOT NULL,
    environment     TEXT        NOT NULL,
    url             TEXT        NOT NULL,
    enabled_events  TEXT        NOT NULL CHECK (json_valid(enabled_events)),
    secret          TEXT        NOT NULL,
    status          TEXT        NOT NULL,
    created_at      TEXT        NOT NULL,
    deleted_at      TEXT
) STRICT;
--bun:split
CREATE INDEX ix_webhook_endpoints_list ON webhook_endpoints (organization_id, project_id, environment, id DESC);
--bun:split

CREATE TABLE deliveries (
    id               TEXT PRIMARY KEY,
    endpoint_id      TEXT        NOT NULL REFERENCES webhook_endpoints (id),
    event_id         TEXT        NOT NULL REFERENCES events (id),
    status           TEXT        NOT NULL,
    attempts         INTEGER     NOT NULL,
    next_attempt_at  TEXT,
    last_status_code INTEGER     NOT NULL,
    last_error       TEXT        NOT NULL,
    created_at       TEXT        NOT NULL
) STRICT;
--bun:split
CREATE INDEX ix_deliveries_endpoint_id_created_at ON deliveries (endpoint_id, created_at);
--bun:split
CREATE INDEX ix_deliveries_event_id ON deliveries (event_id);
--bun:split

CREATE TABLE uploads (
    id                TEXT PRIMARY KEY,
    organization_id   TEXT        NOT NULL,
    project_id        TEXT        NOT NULL,
    environment       TEXT        NOT NULL,
    file_id           TEXT        NOT NULL,
    state             TEXT        NOT NULL,
    multipart         INTEGER     NOT NULL,
    byte_size         INTEGER     NOT NULL,
    part_size         INTEGER     NOT NULL,
    part_count        INTEGER     NOT NULL,
    storage_key       TEXT        NOT NULL,
    storage_upload_id TEXT        NOT NULL,
    validation        TEXT        CHECK (json_valid(validation)),
    source_url        TEXT        NOT NULL,
    expires_at        TEXT        NOT NULL,
    created_at        TEXT        NOT NULL,
    completed_at      TEXT
) STRICT;
--bun:split
CREATE INDEX ix_uploads_state_expires_at ON uploads (state, expires_at);
--bun:split

CREATE TABLE files (
    id                 TEXT PRIMARY KEY,
    organization_id    TEXT        NOT NULL,
    project_id         TEXT        NOT NULL,
    environment        TEXT        NOT NULL,
    upload_id          TEXT        NOT NULL,
    filename           TEXT        NOT NULL,
    status             TEXT        NOT NULL,
    byte_size          INTEGER     NOT NULL,
    declared_mime_type TEXT        NOT NULL,
    detected_extension TEXT        NOT NULL,
    detected_mime_type TEXT        NOT NULL,
    sha256             TEXT        NOT NULL,
    duplicate_of       TEXT        NOT NULL,
    findings           TEXT        CHECK (json_valid(findings)),
    storage_key        TEXT        NOT NULL,
    expires_at         TEXT,
    created_at         TEXT        NOT NULL,
    ready_at           TEXT,
    deleted_at         TEXT
) STRICT;
--bun:split
CREATE INDEX ix_files_list ON files (organization_id, project_id, environment, id DESC);
--bun:split
-- Lists over every project of an organization.
CREATE INDEX ix_files_list_organization ON files (organization_id, environment, id DESC);
--bun:split
CREATE INDEX ix_files_project_id_sha256_status ON files (project_id, sha256, status);
--bun:split

CREATE TABLE artifacts (
    id              TEXT PRIMARY KEY,
    organization_id TEXT        NOT NULL,
    file_id         TEXT        NOT NULL,
    job_id          TEXT        NOT NULL,
    name            TEXT        NOT NULL,
    mime_type       TEXT        NOT NULL,
    byte_size       INTEGER     NOT NULL,
    sha256          TEXT        NOT NULL,
    storage_key     TEXT        NOT NULL,
    created_at      TEXT        NOT NULL
) STRICT;
--bun:split
CREATE INDEX ix_artifacts_file_id ON artifacts (file_id);
--bun:split
CREATE INDEX ix_artifacts_job_id ON artifacts (job_id);
--bun:split

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    organization_id  TEXT        NOT NULL,
    project_id       TEXT        NOT NULL,
    environment      TEXT        NOT NULL,
    file_id          TEXT        NOT NULL,
    batch_id         TEXT        NOT NULL,
    api_key_id       TEXT        NOT NULL,
    operation        TEXT        NOT NULL,
    preset           TEXT        NOT NULL,
    options          TEXT        NOT NULL CHECK (json_valid(options)),
    state            TEXT        NOT NULL,
    progress         INTEGER     NOT NULL,
    attempts         INTEGER     NOT NULL,
    credits_reserved INTEGER     NOT NULL,
    credits_charged  INTEGER     NOT NULL,
    error_code       TEXT        NOT NULL,
    error_message    TEXT        NOT NULL,
    created_at       TEXT        NOT NULL,
    started_at       TEXT,
    finished_at      TEXT
) STRICT;
--bun:split
CREATE INDEX ix_jobs_list ON jobs (organization_id, project_id, environment, id DESC);
--bun:split
-- Lists over every project of an organization.
CREATE INDEX ix_jobs_list_organization ON jobs (organization_id, environment, id DESC);
--bun:split
CREATE INDEX ix_jobs_project_id_state ON jobs (project_id, state);
--bun:split
CREATE INDEX ix_jobs_state_created_at ON jobs (state, created_at);
--bun:split
CREATE INDEX ix_jobs_batch_id ON jobs (batch_id);
--bun:split

CREATE TABLE batches (
    id                TEXT PRIMARY KEY,
    organization_id   TEXT        NOT NULL,
    project_id        TEXT        NOT NULL,
    environment       TEXT        NOT NULL,
    operation         TEXT        NOT NULL,
    preset            TEXT        NOT NULL,
    options           TEXT        NOT NULL CHECK (json_valid(options)),
    credits_estimated INTEGER     NOT NULL,
    created_at        TEXT        NOT NULL
) STRICT;
