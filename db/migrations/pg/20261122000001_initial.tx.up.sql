-- Initial schema, PostgreSQL. Written by hand rather than derived from the domain structs,
-- so that later struct changes never rewrite history: every change is a new migration.
--
-- Ids are "prefix_" + ULID and sort by creation time. They use the C collation so that
-- ORDER BY id and the "id < cursor" comparisons of newest-first lists are byte order,
-- whatever the database's default collation.
--
-- Foreign keys join only the administrative tables and the ledger. The hot tables (files,
-- uploads, jobs, artifacts, events) have none: tenancy is enforced by the scope of every
-- query, and uploads and files reference each other in one transaction, an order foreign
-- keys would forbid.

CREATE TABLE organizations (
    id         text COLLATE "C" PRIMARY KEY,
    name       text        NOT NULL,
    status     text        NOT NULL,
    created_at timestamptz NOT NULL,
    CONSTRAINT uq_organizations_name UNIQUE (name)
);
--bun:split

CREATE TABLE projects (
    id                text COLLATE "C" PRIMARY KEY,
    organization_id   text        NOT NULL REFERENCES organizations (id),
    name              text        NOT NULL,
    concurrency_limit integer     NOT NULL,
    created_at        timestamptz NOT NULL,
    CONSTRAINT uq_projects_organization_id_name UNIQUE (organization_id, name)
);
--bun:split

CREATE TABLE api_keys (
    id                 text COLLATE "C" PRIMARY KEY,
    organization_id    text        NOT NULL REFERENCES organizations (id),
    project_id         text        NOT NULL REFERENCES projects (id),
    environment        text        NOT NULL,
    name               text        NOT NULL,
    hash               text        NOT NULL,
    hint               text        NOT NULL,
    scopes             jsonb       NOT NULL,
    ip_allow_list      jsonb       NOT NULL,
    allowed_operations jsonb       NOT NULL,
    allowed_projects   jsonb       NOT NULL,
    spend_limit        bigint      NOT NULL,
    rate_limit         integer     NOT NULL,
    expires_at         timestamptz,
    revoked_at         timestamptz,
    created_at         timestamptz NOT NULL,
    CONSTRAINT uq_api_keys_hash UNIQUE (hash)
);
--bun:split
CREATE INDEX ix_api_keys_organization_id_id ON api_keys (organization_id, id DESC);
--bun:split

-- The CHECKs restate the ledger's invariants: the conditional updates keep them, and a
-- bug that would break them fails loudly instead of minting or losing credits.
CREATE TABLE credit_accounts (
    id              text COLLATE "C" PRIMARY KEY,
    organization_id text        NOT NULL REFERENCES organizations (id),
    environment     text        NOT NULL,
    balance         bigint      NOT NULL CHECK (balance >= 0),
    reserved        bigint      NOT NULL CHECK (reserved >= 0),
    used            bigint      NOT NULL CHECK (used >= 0),
    created_at      timestamptz NOT NULL,
    CONSTRAINT uq_credit_accounts_organization_id_environment UNIQUE (organization_id, environment)
);
--bun:split

CREATE TABLE ledger_entries (
    id          text COLLATE "C" PRIMARY KEY,
    account_id  text        NOT NULL REFERENCES credit_accounts (id),
    kind        text        NOT NULL CHECK (kind IN ('grant', 'reserve', 'charge', 'release')),
    amount      bigint      NOT NULL CHECK (amount > 0),
    job_id      text,
    api_key_id  text,
    project_id  text,
    description text        NOT NULL,
    created_at  timestamptz NOT NULL
);
--bun:split
CREATE INDEX ix_ledger_entries_api_key_id_kind_created_at ON ledger_entries (api_key_id, kind, created_at);
--bun:split
CREATE INDEX ix_ledger_entries_account_id ON ledger_entries (account_id);
--bun:split

CREATE TABLE idempotency_records (
    id               text COLLATE "C" PRIMARY KEY,
    organization_id  text        NOT NULL,
    endpoint         text        NOT NULL,
    "key"            text        NOT NULL,
    fingerprint      text        NOT NULL,
    state            text        NOT NULL,
    response_status  integer     NOT NULL,
    response_headers jsonb,
    response_body    bytea,
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    CONSTRAINT uq_idempotency_records_organization_id_endpoint_key UNIQUE (organization_id, endpoint, "key")
);
--bun:split
CREATE INDEX ix_idempotency_records_expires_at ON idempotency_records (expires_at);
--bun:split

-- events(id) is served by the primary key.
CREATE TABLE events (
    id              text COLLATE "C" PRIMARY KEY,
    type            text        NOT NULL,
    organization_id text        NOT NULL,
    project_id      text        NOT NULL,
    environment     text        NOT NULL,
    subject_id      text        NOT NULL,
    data            jsonb       NOT NULL,
    created_at      timestamptz NOT NULL
);
--bun:split
CREATE INDEX ix_events_organization_id_subject_id_id ON events (organization_id, subject_id, id);
--bun:split

CREATE TABLE webhook_endpoints (
    id              text COLLATE "C" PRIMARY KEY,
    organization_id text        NOT NULL,
    project_id      text        NOT NULL,
    environment     text        NOT NULL,
    url             text        NOT NULL,
    enabled_events  jsonb       NOT NULL,
    secret          text        NOT NULL,
    status          text        NOT NULL,
    created_at      timestamptz NOT NULL,
    deleted_at      timestamptz
);
--bun:split
CREATE INDEX ix_webhook_endpoints_list ON webhook_endpoints (organization_id, project_id, environment, id DESC);
--bun:split

CREATE TABLE deliveries (
    id               text COLLATE "C" PRIMARY KEY,
    endpoint_id      text        NOT NULL REFERENCES webhook_endpoints (id),
    event_id         text        NOT NULL REFERENCES events (id),
    status           text        NOT NULL,
    attempts         integer     NOT NULL,
    next_attempt_at  timestamptz,
    last_status_code integer     NOT NULL,
    last_error       text        NOT NULL,
    created_at       timestamptz NOT NULL
);
--bun:split
CREATE INDEX ix_deliveries_endpoint_id_created_at ON deliveries (endpoint_id, created_at);
--bun:split
CREATE INDEX ix_deliveries_event_id ON deliveries (event_id);
--bun:split

CREATE TABLE uploads (
    id                text COLLATE "C" PRIMARY KEY,
    organization_id   text        NOT NULL,
    project_id        text        NOT NULL,
    environment       text        NOT NULL,
    file_id           text        NOT NULL,
    state             text        NOT NULL,
    multipart         boolean     NOT NULL,
    byte_size         bigint      NOT NULL,
    part_size         bigint      NOT NULL,
    part_count        integer     NOT NULL,
    storage_key       text        NOT NULL,
    storage_upload_id text        NOT NULL,
    validation        jsonb,
    source_url        text        NOT NULL,
    expires_at        timestamptz NOT NULL,
    created_at        timestamptz NOT NULL,
    completed_at      timestamptz
);
--bun:split
CREATE INDEX ix_uploads_state_expires_at ON uploads (state, expires_at);
--bun:split

CREATE TABLE files (
    id                 text COLLATE "C" PRIMARY KEY,
    organization_id    text        NOT NULL,
    project_id         text        NOT NULL,
    environment        text        NOT NULL,
    upload_id          text        NOT NULL,
    filename           text        NOT NULL,
    status             text        NOT NULL,
    byte_size          bigint      NOT NULL,
    declared_mime_type text        NOT NULL,
    detected_extension text        NOT NULL,
    detected_mime_type text        NOT NULL,
    sha256             text        NOT NULL,
    duplicate_of       text        NOT NULL,
    findings           jsonb,
    storage_key        text        NOT NULL,
    expires_at         timestamptz,
    created_at         timestamptz NOT NULL,
    ready_at           timestamptz,
    deleted_at         timestamptz
);
--bun:split
CREATE INDEX ix_files_list ON files (organization_id, project_id, environment, id DESC);
--bun:split
-- Lists over every project of an organization.
CREATE INDEX ix_files_list_organization ON files (organization_id, environment, id DESC);
--bun:split
CREATE INDEX ix_files_project_id_sha256_status ON files (project_id, sha256, status);
--bun:split

CREATE TABLE artifacts (
    id              text COLLATE "C" PRIMARY KEY,
    organization_id text        NOT NULL,
    file_id         text        NOT NULL,
    job_id          text        NOT NULL,
    name            text        NOT NULL,
    mime_type       text        NOT NULL,
    byte_size       bigint      NOT NULL,
    sha256          text        NOT NULL,
    storage_key     text        NOT NULL,
    created_at      timestamptz NOT NULL
);
--bun:split
CREATE INDEX ix_artifacts_file_id ON artifacts (file_id);
--bun:split
CREATE INDEX ix_artifacts_job_id ON artifacts (job_id);
--bun:split

CREATE TABLE jobs (
    id               text COLLATE "C" PRIMARY KEY,
    organization_id  text        NOT NULL,
    project_id       text        NOT NULL,
    environment      text        NOT NULL,
    file_id          text        NOT NULL,
    batch_id         text        NOT NULL,
    api_key_id       text        NOT NULL,
    operation        text        NOT NULL,
    preset           text        NOT NULL,
    options          jsonb       NOT NULL,
    state            text        NOT NULL,
    progress         integer     NOT NULL,
    attempts         integer     NOT NULL,
    credits_reserved bigint      NOT NULL,
    credits_charged  bigint      NOT NULL,
    error_code       text        NOT NULL,
    error_message    text        NOT NULL,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz
);
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
    id                text COLLATE "C" PRIMARY KEY,
    organization_id   text        NOT NULL,
    project_id        text        NOT NULL,
    environment       text        NOT NULL,
    operation         text        NOT NULL,
    preset            text        NOT NULL,
    options           jsonb       NOT NULL,
    credits_estimated bigint      NOT NULL,
    created_at        timestamptz NOT NULL
);
